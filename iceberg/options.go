package iceberg

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
)

// Options.
//
// Read and Write take a whole config and, optionally, options that change it; a config's
// With method applies options too. Each option sets one key. Options only store values:
// Validate (run by Read and Write) judges them, so a bad value is reported, never dropped.
// Options copy the slices and maps they are given.
//
// Naming: an option is named after its key (WithFilter for filter, WithNumShards for
// num_shards). The three keys both transforms have (keep, drop) are WithKeep / WithDrop
// for reads and WithWriteKeep / WithWriteDrop for writes. Keys ReadChanges shares with
// Read are WithChanges... for ReadChanges (WithChangesFilter, WithChangesStreaming), and
// the range keys ReadChanges had first are WithRead... for a continuous Read
// (WithReadFromSnapshot, WithReadToTimestamp). Keys counted in seconds take a
// time.Duration, rounded up to whole seconds (negative durations stay negative and are
// rejected by Validate).

// ReadOption changes a ReadConfig.
type ReadOption func(*ReadConfig)

// WriteOption changes a WriteConfig.
type WriteOption func(*WriteConfig)

// ChangesOption changes a ChangesConfig.
type ChangesOption func(*ChangesConfig)

// WithFilter sets filter, a SQL predicate (Calcite syntax) pushed into the scan.
func WithFilter(predicate string) ReadOption {
	return func(c *ReadConfig) { c.Filter = predicate }
}

// WithKeep sets keep: the only columns to read.
func WithKeep(cols ...string) ReadOption {
	cols = slices.Clone(cols)
	return func(c *ReadConfig) { c.Keep = cols }
}

// WithDrop sets drop: the columns not to read.
func WithDrop(cols ...string) ReadOption {
	cols = slices.Clone(cols)
	return func(c *ReadConfig) { c.Drop = cols }
}

// WithSnapshotID sets snapshot_id: read the table as of this snapshot.
func WithSnapshotID(id int64) ReadOption {
	return func(c *ReadConfig) { c.SnapshotID = &id }
}

// WithAsOfTimestamp sets as_of_timestamp: read the snapshot current at t (stored as
// RFC 3339 in UTC, nanosecond precision).
func WithAsOfTimestamp(t time.Time) ReadOption {
	s := t.UTC().Format(time.RFC3339Nano)
	return func(c *ReadConfig) { c.AsOfTimestamp = s }
}

// WithBranch sets branch: read the head of this branch or tag.
func WithBranch(name string) ReadOption {
	return func(c *ReadConfig) { c.Branch = name }
}

// WithStreaming sets streaming: a continuous Read of the rows appended to main (see Read).
func WithStreaming(on bool) ReadOption {
	return func(c *ReadConfig) { c.Streaming = on }
}

// WithPollInterval sets poll_interval_seconds of a continuous Read (d rounded up to
// whole seconds).
func WithPollInterval(d time.Duration) ReadOption {
	s := seconds(d)
	return func(c *ReadConfig) { c.PollIntervalSeconds = &s }
}

// WithReadStartingStrategy sets starting_strategy of a continuous Read: StartEarliest
// (the current snapshot's rows first) or StartLatest (only later appends).
func WithReadStartingStrategy(s StartingStrategy) ReadOption {
	return func(c *ReadConfig) { c.StartingStrategy = s }
}

// WithReadFromSnapshot sets from_snapshot of a continuous Read: start with the rows
// appended after this snapshot (exclusive).
func WithReadFromSnapshot(id int64) ReadOption {
	return func(c *ReadConfig) { c.FromSnapshot = &id }
}

// WithReadToSnapshot sets to_snapshot of a continuous Read: end at this snapshot
// (inclusive).
func WithReadToSnapshot(id int64) ReadOption {
	return func(c *ReadConfig) { c.ToSnapshot = &id }
}

// WithReadFromTimestamp sets from_timestamp of a continuous Read: start with the rows
// appended by snapshots committed at or after t (stored in epoch milliseconds).
func WithReadFromTimestamp(t time.Time) ReadOption {
	ms := t.UnixMilli()
	return func(c *ReadConfig) { c.FromTimestamp = &ms }
}

// WithReadToTimestamp sets to_timestamp of a continuous Read: end with the last
// snapshot committed at or before t (stored in epoch milliseconds).
func WithReadToTimestamp(t time.Time) ReadOption {
	ms := t.UnixMilli()
	return func(c *ReadConfig) { c.ToTimestamp = &ms }
}

// WithOutputType makes Read emit values of struct type t instead of Row; columns match
// fields by `iceberg:"name"` tag, then `beam:"name"` tag, then name.
func WithOutputType(t reflect.Type) ReadOption {
	return func(c *ReadConfig) { c.OutputType = t }
}

// WithMode sets mode: Append or MergeOnRead.
func WithMode(m Mode) WriteOption {
	return func(c *WriteConfig) { c.Mode = m }
}

// WithSinkID sets sink_id, the stable id of the sink's exactly-once tokens.
func WithSinkID(id string) WriteOption {
	return func(c *WriteConfig) { c.SinkID = id }
}

// WithEqualityColumns sets equality_columns, the columns that identify a row.
func WithEqualityColumns(cols ...string) WriteOption {
	cols = slices.Clone(cols)
	return func(c *WriteConfig) { c.EqualityColumns = cols }
}

// WithChangeTypeColumn sets change_type_column, the column holding each row's change type.
func WithChangeTypeColumn(col string) WriteOption {
	return func(c *WriteConfig) { c.ChangeTypeColumn = col }
}

// WithChangeTypeMap sets change_type_map, from change_type_column values to ChangeInsert,
// ChangeUpdateBefore, ChangeUpdateAfter or ChangeDelete.
func WithChangeTypeMap(m map[string]string) WriteOption {
	m = maps.Clone(m)
	return func(c *WriteConfig) { c.ChangeTypeMap = m }
}

// WithSequenceNumberColumn sets sequence_number_column, the INT64 column ordering changes.
func WithSequenceNumberColumn(col string) WriteOption {
	return func(c *WriteConfig) { c.SequenceNumberColumn = col }
}

// WithUpsert sets upsert: apply only after-images, as upserts.
func WithUpsert(on bool) WriteOption {
	return func(c *WriteConfig) { c.Upsert = on }
}

// WithDeleteFormat sets delete_format: DeleteFormatDV or DeleteFormatEquality.
func WithDeleteFormat(f DeleteFormat) WriteOption {
	return func(c *WriteConfig) { c.DeleteFormat = f }
}

// WithNumShards sets num_shards, the key-hash shards per destination.
func WithNumShards(n int) WriteOption {
	return func(c *WriteConfig) { c.NumShards = &n }
}

// WithShardsPerPartition sets shards_per_partition (1..num_shards).
func WithShardsPerPartition(n int) WriteOption {
	return func(c *WriteConfig) { c.ShardsPerPartition = &n }
}

// WithAutoSharding sets auto_sharding (needs DistributionHash).
func WithAutoSharding(on bool) WriteOption {
	return func(c *WriteConfig) { c.AutoSharding = on }
}

// WithDistributionMode sets distribution_mode: DistributionNone or DistributionHash
// (rows shuffled by partition key; an unpartitioned table's rows are written where
// they are, as with DistributionNone).
func WithDistributionMode(m DistributionMode) WriteOption {
	return func(c *WriteConfig) { c.DistributionMode = m }
}

// WithMaintenanceEveryCommits sets maintenance_every_commits: compact each table the
// write commits to (and expire its snapshots, see WithExpireSnapshots) after every n
// of its commits. A run's first commit counts on from the table's commits since its
// last compaction, so a batch job run again and again maintains every n runs.
func WithMaintenanceEveryCommits(n int) WriteOption {
	return func(c *WriteConfig) { c.MaintenanceEveryCommits = &n }
}

// WithMaintenanceInterval sets maintenance_interval_seconds: maintain each table the
// write commits to when at least d passed since the table's last compaction. A run's
// first commit reads that time from the table, so a batch job run again and again
// maintains once d has passed.
func WithMaintenanceInterval(d time.Duration) WriteOption {
	return func(c *WriteConfig) { s := int(d / time.Second); c.MaintenanceIntervalSeconds = &s }
}

// WithExpireSnapshots sets expire_older_than_seconds and retain_last: inline
// maintenance also expires snapshots older than olderThan beyond the newest
// retainLast of each branch, keeping the sinks' newest tokens.
func WithExpireSnapshots(olderThan time.Duration, retainLast int) WriteOption {
	return func(c *WriteConfig) {
		s := int(olderThan / time.Second)
		c.ExpireOlderThanSeconds, c.RetainLast = &s, &retainLast
	}
}

// WithKeyIndexMemoryMB sets key_index_memory_mb, the budget of the per-worker key
// index (0: resolve keys by reading data files).
func WithKeyIndexMemoryMB(mb int) WriteOption {
	return func(c *WriteConfig) { c.KeyIndexMemoryMB = &mb }
}

// WithSorterMemoryMB sets sorter_memory_mb, the in-memory sort buffer before spilling.
func WithSorterMemoryMB(mb int) WriteOption {
	return func(c *WriteConfig) { c.SorterMemoryMB = &mb }
}

// WithDirectWriteByteLimit sets direct_write_byte_limit.
func WithDirectWriteByteLimit(n int) WriteOption {
	return func(c *WriteConfig) { c.DirectWriteByteLimit = &n }
}

// WithAllowedLateness sets allowed_lateness_seconds (d rounded up to whole seconds).
func WithAllowedLateness(d time.Duration) WriteOption {
	s := seconds(d)
	return func(c *WriteConfig) { c.AllowedLatenessSeconds = &s }
}

// WithTokenHeartbeat sets token_heartbeat_seconds (d rounded up to whole seconds).
func WithTokenHeartbeat(d time.Duration) WriteOption {
	s := seconds(d)
	return func(c *WriteConfig) { c.TokenHeartbeatSeconds = &s }
}

// WithTriggeringFrequency sets triggering_frequency_seconds (d rounded up to whole seconds).
func WithTriggeringFrequency(d time.Duration) WriteOption {
	s := seconds(d)
	return func(c *WriteConfig) { c.TriggeringFrequencySeconds = &s }
}

// WithSnapshotProperties sets snapshot_properties, added to every snapshot summary.
func WithSnapshotProperties(p map[string]string) WriteOption {
	p = maps.Clone(p)
	return func(c *WriteConfig) { c.SnapshotProperties = p }
}

// WithPartitionFields sets partition_fields for tables the write creates.
func WithPartitionFields(fields ...string) WriteOption {
	fields = slices.Clone(fields)
	return func(c *WriteConfig) { c.PartitionFields = fields }
}

// WithSortFields sets sort_fields for tables the write creates.
func WithSortFields(fields ...string) WriteOption {
	fields = slices.Clone(fields)
	return func(c *WriteConfig) { c.SortFields = fields }
}

// WithTableProperties sets table_properties for tables the write creates.
func WithTableProperties(p map[string]string) WriteOption {
	p = maps.Clone(p)
	return func(c *WriteConfig) { c.TableProperties = p }
}

// WithWriteProperties sets write_properties for the file writers.
func WithWriteProperties(p map[string]string) WriteOption {
	p = maps.Clone(p)
	return func(c *WriteConfig) { c.WriteProperties = p }
}

// WithWriteKeep sets the write's keep: the only fields kept before writing.
func WithWriteKeep(cols ...string) WriteOption {
	cols = slices.Clone(cols)
	return func(c *WriteConfig) { c.Keep = cols }
}

// WithWriteDrop sets the write's drop: the fields dropped before writing.
func WithWriteDrop(cols ...string) WriteOption {
	cols = slices.Clone(cols)
	return func(c *WriteConfig) { c.Drop = cols }
}

// WithOnly sets only: the single record field to write.
func WithOnly(field string) WriteOption {
	return func(c *WriteConfig) { c.Only = field }
}

// WithBeforeField sets before_field: the record field holding a change envelope's
// before-image (merge-on-read, with only).
func WithBeforeField(field string) WriteOption {
	return func(c *WriteConfig) { c.BeforeField = field }
}

// WithSchemaEvolution sets evolve_schema: the write evolves the table's schema to fit
// the rows (new optional columns, lossless widening, required to optional).
func WithSchemaEvolution(on bool) WriteOption {
	return func(c *WriteConfig) { c.EvolveSchema = on }
}

// WithMaximumTableCacheSize sets maximum_table_cache_size.
func WithMaximumTableCacheSize(n int) WriteOption {
	return func(c *WriteConfig) { c.MaximumTableCacheSize = &n }
}

// WithTableCacheRefreshInterval sets table_cache_refresh_interval_seconds (d rounded up
// to whole seconds).
func WithTableCacheRefreshInterval(d time.Duration) WriteOption {
	s := seconds(d)
	return func(c *WriteConfig) { c.TableCacheRefreshIntervalSeconds = &s }
}

// WithTableCachePollingBuckets sets table_cache_polling_buckets, accepted for Dataflow
// config compatibility only: icebeam has no catalog pollers, so any n but 1 makes the
// write fail at construction with ErrUnsupported.
func WithTableCachePollingBuckets(n int) WriteOption {
	return func(c *WriteConfig) { c.TableCachePollingBuckets = &n }
}

// WithSideInputTableCache sets use_side_input_table_cache, accepted for Dataflow config
// compatibility only: icebeam has no side-input table cache, so true makes the write
// fail at construction with ErrUnsupported.
func WithSideInputTableCache(on bool) WriteOption {
	return func(c *WriteConfig) { c.UseSideInputTableCache = on }
}

// seconds rounds d up to whole seconds. A negative d stays negative (at most -1) and a
// count beyond the int32 range is stored as is, so that Validate rejects both.
func seconds(d time.Duration) int {
	if d < 0 {
		return min(-1, int(d/time.Second))
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int(s)
}

// WithoutCatalogAtConstruction builds the write without reaching the catalog, so that
// a pipeline can be translated where the catalog or its credentials are not available
// (Dataflow's --dry_run, a CI job). Construction then checks the config and the
// input's type only; what needs the table runs when the job does: a missing table is
// created from the first row (for a struct type too), a struct field that does not fit
// an existing table's column dead-letters its rows instead of failing construction,
// and a merge-on-read write needs equality_columns (it cannot default them to the
// table's identifier fields) and fails the job when the table cannot take its deletes.
// A struct's time.Time fields are written as microsecond timestamps.
func WithoutCatalogAtConstruction() WriteOption {
	return func(c *WriteConfig) { c.NoCatalogAtConstruction = true }
}

// WithSchema gives Read the table's schema up front, so that it builds without
// reaching the catalog (Dataflow's --dry_run, a CI job, or a read of a table that a
// write of the same pipeline creates: see WithReadAfter). filter, keep, drop and the
// output type are checked against sc at construction; when the job runs, the read
// fails if a column it reads is missing from the table or has another type than in
// sc, and snapshot_id, as_of_timestamp and branch are checked then. Field ids and
// required flags of sc are not compared. Not with streaming.
func WithSchema(sc *ibg.Schema) ReadOption {
	return func(c *ReadConfig) { c.Schema = sc }
}

// WithReadAfter makes Read plan its scan only when every PCollection of signals is
// complete, as Beam Java's Wait.on does: a read of what a Write of the same pipeline
// commits waits for WriteResult.Snapshots. The signals are taken in the global
// window: in a batch pipeline a signal is complete when the steps producing it
// finished; an unbounded signal holds the read back until it ends. Combine it with
// WithSchema when the table may not exist when the pipeline is built. Not with
// streaming.
func WithReadAfter(signals ...beam.PCollection) ReadOption {
	return func(c *ReadConfig) { c.After = append(slices.Clone(c.After), signals...) }
}
