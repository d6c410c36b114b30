package iceberg

import "github.com/icebeam/icebeam/iceberg/internal/config"

// Managed configuration keys: the keys of Dataflow's managed Iceberg I/O, plus snapshot_id,
// as_of_timestamp, branch and delete_format. ParseReadConfig and ParseWriteConfig accept
// exactly these; each is the managed tag of one ReadConfig or WriteConfig field, and
// README.md lists each with its type, default and meaning.
const (
	// KeyTable is the table identifier ("db.table"); for writes it may be a template such
	// as "db.events_{region}". Read and write.
	KeyTable = config.KeyTable
	// KeyCatalogName is the name of the catalog that holds the table. Read and write.
	KeyCatalogName = config.KeyCatalogName
	// KeyCatalogProperties are the properties that build the catalog; "type" is required.
	// Read and write.
	KeyCatalogProperties = config.KeyCatalogProperties
	// KeyConfigProperties are Hadoop configuration properties. icebeam does not use Hadoop:
	// any entry is rejected with ErrUnsupported. Read and write.
	KeyConfigProperties = config.KeyConfigProperties
	// KeyFilter is a SQL predicate (Calcite syntax) applied during the scan. Read.
	KeyFilter = config.KeyFilter
	// KeyKeep lists the only columns to read (read) or to keep before writing (write).
	KeyKeep = config.KeyKeep
	// KeyDrop lists columns to leave out of the read (read) or to drop before writing (write).
	KeyDrop = config.KeyDrop
	// KeySnapshotID reads the table as of this snapshot. Read.
	KeySnapshotID = config.KeySnapshotID
	// KeyAsOfTimestamp reads the table as of this time: RFC 3339 or epoch milliseconds. Read.
	KeyAsOfTimestamp = config.KeyAsOfTimestamp
	// KeyBranch reads the head of this branch or tag instead of main. Read.
	KeyBranch = config.KeyBranch

	// KeyMode is the write mode: "append" (default) or "merge-on-read". Write.
	KeyMode = config.KeyMode
	// KeyChangeTypeColumn names the column holding each row's change type; a dotted
	// path names a field of a struct column. Merge-on-read.
	KeyChangeTypeColumn = config.KeyChangeTypeColumn
	// KeyChangeTypeMap maps change_type_column values to INSERT, UPDATE_BEFORE,
	// UPDATE_AFTER or DELETE. Merge-on-read.
	KeyChangeTypeMap = config.KeyChangeTypeMap
	// KeyEqualityColumns are the columns that identify a row (the key). Merge-on-read.
	KeyEqualityColumns = config.KeyEqualityColumns
	// KeySequenceNumberColumn names the INT64 column that orders the changes of one key;
	// a dotted path (such as "source.lsn") names a field of a struct column.
	// Merge-on-read; default "_commit_snapshot_sequence_number".
	KeySequenceNumberColumn = config.KeySequenceNumberColumn
	// KeyUpsert applies only after-images, as upserts. Merge-on-read; default false.
	KeyUpsert = config.KeyUpsert
	// KeyDeleteFormat is how prior rows are deleted: "dv" (deletion vectors) or "equality";
	// empty means dv on format-version 3 and equality on 2. Merge-on-read; icebeam addition.
	KeyDeleteFormat = config.KeyDeleteFormat
	// KeyNumShards is the number of key-hash shards per destination. Merge-on-read; default 16.
	KeyNumShards = config.KeyNumShards
	// KeyShardsPerPartition bounds the shards one partition's rows may use (1..num_shards;
	// default num_shards). Merge-on-read.
	KeyShardsPerPartition = config.KeyShardsPerPartition
	// KeyAutoSharding adjusts the number of writers to the data volume. Needs
	// distribution_mode "hash". Write.
	KeyAutoSharding = config.KeyAutoSharding
	// KeyDistributionMode is "none" (default: no shuffle) or "hash" (shuffle by partition). Write.
	KeyDistributionMode = config.KeyDistributionMode
	// KeySorterMemoryMB is the in-memory sort buffer in MB before spilling to disk.
	// Merge-on-read; default 100.
	KeySorterMemoryMB = config.KeySorterMemoryMB
	// KeyKeyIndexMemoryMB bounds the per-worker index of a table's keys (MB; 0: no
	// index, keys are resolved by reading data files). Merge-on-read; default 256.
	KeyKeyIndexMemoryMB = config.KeyKeyIndexMemoryMB
	// KeyDirectWriteByteLimit is the bundle size up to which a streaming write takes the
	// direct write path. Write.
	KeyDirectWriteByteLimit = config.KeyDirectWriteByteLimit
	// KeyAllowedLatenessSeconds is how far behind the watermark a row may be before it goes
	// to the dead letter output. Write; default 21600 (6 hours).
	KeyAllowedLatenessSeconds = config.KeyAllowedLatenessSeconds
	// KeySinkID is the stable id that namespaces the sink's idempotency tokens. Write;
	// default: a fresh UUID per pipeline construction.
	KeySinkID = config.KeySinkID
	// KeySnapshotProperties are extra snapshot summary properties; keys under "beam.cdc."
	// are reserved. Write.
	KeySnapshotProperties = config.KeySnapshotProperties
	// KeyTokenHeartbeatSeconds makes the sink commit empty token refreshes while idle.
	// Streaming writes; default disabled.
	KeyTokenHeartbeatSeconds = config.KeyTokenHeartbeatSeconds
	// KeyTriggeringFrequencySeconds is how often a streaming write commits. Write.
	KeyTriggeringFrequencySeconds = config.KeyTriggeringFrequencySeconds
	// KeyPartitionFields is the partition spec of a table the write creates. Write.
	KeyPartitionFields = config.KeyPartitionFields
	// KeySortFields is the sort order of a table the write creates. Write.
	KeySortFields = config.KeySortFields
	// KeyTableProperties are the properties of a table the write creates. Write.
	KeyTableProperties = config.KeyTableProperties
	// KeyWriteProperties are properties of the file writers (Parquet settings). Write.
	KeyWriteProperties = config.KeyWriteProperties
	// KeyOnly names the single record field to write (a dotted path into struct
	// fields). Merge-on-read: the record field holding each change's row image (a
	// Debezium envelope's "after"). Write.
	KeyOnly = config.KeyOnly
	// KeyBeforeField names the record field holding the before-image of a change
	// envelope (Debezium's "before"): a DELETE or UPDATE_BEFORE change takes its row
	// from it, or from only when it is null. Merge-on-read with only; icebeam addition.
	KeyBeforeField = config.KeyBeforeField
	// KeyEvolveSchema lets the write evolve the table's schema to fit the rows: a field
	// the table lacks becomes a new optional column (nested struct fields too), int,
	// float and decimal columns widen to long, double and a larger precision, and a
	// required column a row leaves null becomes optional. Anything else stays an error.
	// Write (both modes); default false; icebeam addition.
	KeyEvolveSchema = config.KeyEvolveSchema
	// KeyMaximumTableCacheSize is the number of table metadata entries cached in memory. Write.
	KeyMaximumTableCacheSize = config.KeyMaximumTableCacheSize
	// KeyTableCacheRefreshIntervalSeconds is how often cached table metadata is refreshed
	// in streaming pipelines. Write.
	KeyTableCacheRefreshIntervalSeconds = config.KeyTableCacheRefreshIntervalSeconds
	// KeyTableCachePollingBuckets is accepted for Dataflow config compatibility: icebeam
	// has no catalog pollers, so only 1 (the default) is accepted and any other value is
	// refused at construction (ErrUnsupported). Write.
	KeyTableCachePollingBuckets = config.KeyTableCachePollingBuckets
	// KeyUseSideInputTableCache is accepted for Dataflow config compatibility: icebeam
	// has no side-input table cache, so only false (the default) is accepted and true is
	// refused at construction (ErrUnsupported). Write.
	KeyUseSideInputTableCache = config.KeyUseSideInputTableCache

	// KeyFromSnapshot starts a changelog or continuous read after this snapshot
	// (exclusive). Changes; streaming read.
	KeyFromSnapshot = config.KeyFromSnapshot
	// KeyToSnapshot ends a changelog or continuous read at this snapshot (inclusive);
	// default the current snapshot (changelog) or never (continuous). Changes; streaming read.
	KeyToSnapshot = config.KeyToSnapshot
	// KeyFromTimestamp starts a changelog or continuous read at the first snapshot
	// committed at or after this time (epoch milliseconds). Changes; streaming read.
	KeyFromTimestamp = config.KeyFromTimestamp
	// KeyToTimestamp ends a changelog or continuous read at the last snapshot committed
	// at or before this time (epoch milliseconds). Changes; streaming read.
	KeyToTimestamp = config.KeyToTimestamp
	// KeyStartingStrategy is "earliest" (default) or "latest": where a changelog or
	// continuous read without from_snapshot or from_timestamp starts. Changes; streaming read.
	KeyStartingStrategy = config.KeyStartingStrategy
	// KeyStreaming makes a read or changelog read continuous: it polls the table for new
	// snapshots on main. Read and changes; default false.
	KeyStreaming = config.KeyStreaming
	// KeyPollIntervalSeconds is how often a continuous read polls for new snapshots (at
	// least 1). Read and changes, with streaming only; default 60.
	KeyPollIntervalSeconds = config.KeyPollIntervalSeconds
	// KeyMaintenanceEveryCommits runs inline maintenance (compaction, and expiry when
	// expire_older_than_seconds or retain_last is set) after every this many commits of
	// the sink to a table, counted on from the table's commits since its last
	// compaction at a run's first commit. Write; default disabled.
	KeyMaintenanceEveryCommits = config.KeyMaintenanceEveryCommits
	// KeyMaintenanceIntervalSeconds runs inline maintenance when at least this many
	// seconds passed since the table's last compaction (read from the table at a run's
	// first commit, so batch jobs maintain too). Write; default disabled.
	KeyMaintenanceIntervalSeconds = config.KeyMaintenanceIntervalSeconds
	// KeyOperations lists the maintenance operations to run: rewrite_data_files,
	// expire_snapshots, remove_orphan_files. Maintain; default all three.
	KeyOperations = config.KeyOperations
	// KeyTargetFileSizeBytes is the size of the files compaction writes. Maintain.
	KeyTargetFileSizeBytes = config.KeyTargetFileSizeBytes
	// KeyMinInputFiles is how many files of a partition make a bin worth rewriting for
	// size alone. Maintain; default 5.
	KeyMinInputFiles = config.KeyMinInputFiles
	// KeyDeleteFileThreshold rewrites data files with at least this many delete files.
	// Maintain.
	KeyDeleteFileThreshold = config.KeyDeleteFileThreshold
	// KeyRewriteAll rewrites every selected data file. Maintain.
	KeyRewriteAll = config.KeyRewriteAll
	// KeyExpireOlderThanSeconds expires snapshots older than this. Maintain and write.
	KeyExpireOlderThanSeconds = config.KeyExpireOlderThanSeconds
	// KeyRetainLast keeps at least this many snapshots per branch. Maintain and write.
	KeyRetainLast = config.KeyRetainLast
	// KeyOrphanOlderThanSeconds removes only orphan files older than this. Maintain;
	// default 3 days.
	KeyOrphanOlderThanSeconds = config.KeyOrphanOlderThanSeconds
	// KeyDryRun lists orphan files without deleting them. Maintain.
	KeyDryRun = config.KeyDryRun
)

// ReadKeys returns the keys ParseReadConfig accepts, in ReadConfig field order.
func ReadKeys() []string { return readSchema.Keys() }

// WriteKeys returns the keys ParseWriteConfig accepts, in WriteConfig field order.
func WriteKeys() []string { return writeSchema.Keys() }

// MergeOnReadOnlyKeys returns the write keys valid only with mode merge-on-read; setting
// one of them in append mode is an error.
func MergeOnReadOnlyKeys() []string { return config.MergeOnReadOnlyKeys() }
