package config

// Managed configuration keys. They are the keys of Dataflow's managed Iceberg I/O, plus a
// few icebeam additions (snapshot_id, as_of_timestamp, branch, delete_format,
// before_field, evolve_schema, ...). Every key is the managed tag of a field of ReadConfig,
// WriteConfig, ChangesConfig or MaintainConfig.
const (
	// KeyTable is the table identifier ("db.table"); for writes it may be a template such
	// as "db.events_{region}". Read and write.
	KeyTable = "table"
	// KeyCatalogName is the name of the catalog that holds the table. Read and write.
	KeyCatalogName = "catalog_name"
	// KeyCatalogProperties are the properties that build the catalog; "type" is required.
	// Read and write.
	KeyCatalogProperties = "catalog_properties"
	// KeyConfigProperties are Hadoop configuration properties. icebeam does not use Hadoop:
	// any entry is rejected with ErrUnsupported. Read and write.
	KeyConfigProperties = "config_properties"
	// KeyFilter is a SQL predicate (Calcite syntax) applied during the scan. Read.
	KeyFilter = "filter"
	// KeyKeep lists the only columns to read (read) or to keep before writing (write).
	KeyKeep = "keep"
	// KeyDrop lists columns to leave out of the read (read) or to drop before writing (write).
	KeyDrop = "drop"
	// KeySnapshotID reads the table as of this snapshot. Read.
	KeySnapshotID = "snapshot_id"
	// KeyAsOfTimestamp reads the table as of this time: RFC 3339 or epoch milliseconds. Read.
	KeyAsOfTimestamp = "as_of_timestamp"
	// KeyBranch reads the head of this branch or tag instead of main. Read.
	KeyBranch = "branch"

	// KeyMode is the write mode: "append" (default) or "merge-on-read". Write.
	KeyMode = "mode"
	// KeyChangeTypeColumn names the column holding each row's change type; a dotted
	// path names a field of a struct column. Merge-on-read.
	KeyChangeTypeColumn = "change_type_column"
	// KeyChangeTypeMap maps change_type_column values to INSERT, UPDATE_BEFORE,
	// UPDATE_AFTER or DELETE. Merge-on-read.
	KeyChangeTypeMap = "change_type_map"
	// KeyEqualityColumns are the columns that identify a row (the key). Merge-on-read.
	KeyEqualityColumns = "equality_columns"
	// KeySequenceNumberColumn names the INT64 column that orders the changes of one key;
	// a dotted path (such as "source.lsn") names a field of a struct column.
	// Merge-on-read; default "_commit_snapshot_sequence_number".
	KeySequenceNumberColumn = "sequence_number_column"
	// KeyUpsert applies only after-images, as upserts. Merge-on-read; default false.
	KeyUpsert = "upsert"
	// KeyDeleteFormat is how prior rows are deleted: "dv" (deletion vectors) or "equality";
	// empty means dv on format-version 3 and equality on 2. Merge-on-read; icebeam addition.
	KeyDeleteFormat = "delete_format"
	// KeyNumShards is the number of key-hash shards per destination. Merge-on-read; default 16.
	KeyNumShards = "num_shards"
	// KeyShardsPerPartition bounds the shards one partition's rows may use (1..num_shards;
	// default num_shards). Merge-on-read.
	KeyShardsPerPartition = "shards_per_partition"
	// KeyAutoSharding spreads a partition's rows of one bundle over successive shuffle
	// shards, so busy partitions get more writers. Needs distribution_mode "hash".
	// Append writes.
	KeyAutoSharding = "auto_sharding"
	// KeyDistributionMode is "none" (default: no shuffle) or "hash" (shuffle by partition;
	// an unpartitioned table's rows are not shuffled). Write.
	KeyDistributionMode = "distribution_mode"
	// KeySorterMemoryMB is the in-memory sort buffer in MB before spilling to disk.
	// Merge-on-read; default 100.
	KeySorterMemoryMB = "sorter_memory_mb"
	// KeyKeyIndexMemoryMB bounds the per-worker index of a table's keys (MB; 0: no
	// index, keys are resolved by reading data files). Merge-on-read; default 256.
	KeyKeyIndexMemoryMB = "key_index_memory_mb"
	// KeyDirectWriteByteLimit is the bundle size up to which a streaming append writes
	// the bundle directly; larger bundles are shuffled by partition. Append writes.
	KeyDirectWriteByteLimit = "direct_write_byte_limit"
	// KeyAllowedLatenessSeconds is how long after its window's end, measured against the
	// newest window the sink has committed, a row is still written (in a late-pane
	// commit); later rows go to the dead letter output. Streaming writes; default 21600
	// (6 hours).
	KeyAllowedLatenessSeconds = "allowed_lateness_seconds"
	// KeySinkID is the stable id that namespaces the sink's idempotency tokens:
	// printable UTF-8, no control characters. Write; default: a fresh UUID per
	// pipeline construction.
	KeySinkID = "sink_id"
	// KeySnapshotProperties are extra snapshot summary properties; keys under "beam.cdc."
	// are reserved. Write.
	KeySnapshotProperties = "snapshot_properties"
	// KeyTokenHeartbeatSeconds makes the sink commit empty token refreshes while idle.
	// Streaming writes; default disabled.
	KeyTokenHeartbeatSeconds = "token_heartbeat_seconds"
	// KeyTriggeringFrequencySeconds is the length of the fixed event-time windows a
	// streaming write commits, one commit per table and window. Write.
	KeyTriggeringFrequencySeconds = "triggering_frequency_seconds"
	// KeyPartitionFields is the partition spec of a table the write creates. Write.
	KeyPartitionFields = "partition_fields"
	// KeySortFields is the sort order of a table the write creates. Write.
	KeySortFields = "sort_fields"
	// KeyTableProperties are the properties of a table the write creates. Write.
	KeyTableProperties = "table_properties"
	// KeyWriteProperties are properties of the file writers (Parquet settings). Write.
	KeyWriteProperties = "write_properties"
	// KeyOnly names the single record field to write (a dotted path into struct
	// fields). Merge-on-read: the record field holding each change's row image (a
	// Debezium envelope's "after"). Write.
	KeyOnly = "only"
	// KeyBeforeField names the record field holding the before-image of a change
	// envelope (Debezium's "before"): a DELETE or UPDATE_BEFORE change takes its row
	// from it, or from only when it is null. Merge-on-read with only; icebeam addition.
	KeyBeforeField = "before_field"
	// KeyEvolveSchema lets the write evolve the table's schema to fit the rows: a field
	// the table lacks becomes a new optional column (nested struct fields too), int,
	// float and decimal columns widen to long, double and a larger precision, and a
	// required column a row leaves null becomes optional. Anything else stays an error.
	// Write (both modes); default false; icebeam addition.
	KeyEvolveSchema = "evolve_schema"
	// KeyMaximumTableCacheSize is the number of table metadata entries cached in memory. Write.
	KeyMaximumTableCacheSize = "maximum_table_cache_size"
	// KeyTableCacheRefreshIntervalSeconds is how often cached table metadata is refreshed
	// in streaming pipelines. Write.
	KeyTableCacheRefreshIntervalSeconds = "table_cache_refresh_interval_seconds"
	// KeyTableCachePollingBuckets is accepted for Dataflow config compatibility: icebeam
	// has no catalog pollers, so only 1 (the default) is accepted and any other value is
	// refused at construction (ErrUnsupported). Write.
	KeyTableCachePollingBuckets = "table_cache_polling_buckets"
	// KeyUseSideInputTableCache is accepted for Dataflow config compatibility: icebeam
	// has no side-input table cache, so only false (the default) is accepted and true is
	// refused at construction (ErrUnsupported). Write.
	KeyUseSideInputTableCache = "use_side_input_table_cache"

	// KeyMaintenanceEveryCommits runs inline maintenance (compaction of the table, and
	// expiry when expire_older_than_seconds or retain_last is set) after every this
	// many commits of the sink to a table. Write; default disabled.
	KeyMaintenanceEveryCommits = "maintenance_every_commits"
	// KeyMaintenanceIntervalSeconds runs inline maintenance when at least this many
	// seconds passed since the table's last compaction (read from the table at a run's
	// first commit, so batch jobs maintain too). Write; default disabled.
	KeyMaintenanceIntervalSeconds = "maintenance_interval_seconds"

	// KeyOperations lists the maintenance operations to run: rewrite_data_files,
	// expire_snapshots, remove_orphan_files. Maintain; default all three.
	KeyOperations = "operations"
	// KeyTargetFileSizeBytes is the size of the files compaction writes. Maintain;
	// default the table's write.target-file-size-bytes.
	KeyTargetFileSizeBytes = "target_file_size_bytes"
	// KeyMinInputFiles is how many files of a partition make a bin worth rewriting for
	// size alone. Maintain; default 5.
	KeyMinInputFiles = "min_input_files"
	// KeyDeleteFileThreshold rewrites data files with at least this many delete files.
	// Maintain; default unset.
	KeyDeleteFileThreshold = "delete_file_threshold"
	// KeyRewriteAll rewrites every selected data file. Maintain; default false.
	KeyRewriteAll = "rewrite_all"
	// KeyExpireOlderThanSeconds expires snapshots older than this. Maintain and write
	// (inline maintenance); default the table's history.expire.max-snapshot-age-ms.
	KeyExpireOlderThanSeconds = "expire_older_than_seconds"
	// KeyRetainLast keeps at least this many snapshots per branch. Maintain and write;
	// default the table's history.expire.min-snapshots-to-keep.
	KeyRetainLast = "retain_last"
	// KeyOrphanOlderThanSeconds removes only orphan files older than this. Maintain;
	// default 3 days.
	KeyOrphanOlderThanSeconds = "orphan_older_than_seconds"
	// KeyDryRun lists orphan files without deleting them. Maintain; default false.
	KeyDryRun = "dry_run"

	// KeyFromSnapshot starts a changelog or continuous read after this snapshot
	// (exclusive). Changes; streaming read.
	KeyFromSnapshot = "from_snapshot"
	// KeyToSnapshot ends a changelog or continuous read at this snapshot (inclusive);
	// default the current snapshot (changelog) or never (continuous). Changes; streaming read.
	KeyToSnapshot = "to_snapshot"
	// KeyFromTimestamp starts a changelog or continuous read at the first snapshot
	// committed at or after this time (epoch milliseconds). Changes; streaming read.
	KeyFromTimestamp = "from_timestamp"
	// KeyToTimestamp ends a changelog or continuous read at the last snapshot committed
	// at or before this time (epoch milliseconds). Changes; streaming read.
	KeyToTimestamp = "to_timestamp"
	// KeyStartingStrategy is "earliest" (default) or "latest": where a changelog or
	// continuous read without from_snapshot or from_timestamp starts. Changes; streaming read.
	KeyStartingStrategy = "starting_strategy"
	// KeyStreaming makes a read or changelog read continuous: it polls the table for new
	// snapshots on main. Read and changes; default false.
	KeyStreaming = "streaming"
	// KeyPollIntervalSeconds is how often a continuous read polls for new snapshots (at
	// least 1). Read and changes, with streaming only; default 60.
	KeyPollIntervalSeconds = "poll_interval_seconds"
)
