package iceberg

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
)

// The config types are defined here and only here: each field's managed tag is its
// key for the parser and for Map (the internal config package derives a Schema from
// the tags), and each field's comment is what go doc shows. Validation is in
// config_read.go, config_write.go and maintain.go; printing in config_print.go. What
// the stages below the facade see is not a config but a plan built from a validated
// one (read.Spec, write.Spec, maintain.Spec).

// ReadConfig configures Read: one field per managed read key (tagged
// `managed:"<key>"`), plus OutputType, which only WithOutputType sets. A zero field
// means "not set". Printing it (fmt, encoding/json) redacts catalog secrets.
type ReadConfig struct {
	// Table is the table identifier (`db.table`), e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table; every worker must use the
	// same name. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties are the properties that build the catalog: `type` (`sql`, `rest`,
	// `hadoop`, `glue`, `hive`), `uri`, `warehouse`, storage settings. A property the
	// catalog type does not read is an error naming the closest one (see Catalogs in the
	// README). Values of secret keys (see [IsSecretKey]) are never logged or put in
	// errors. Required (`type`).
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop configuration properties. Not used by icebeam: any entry
	// is rejected with [ErrUnsupported] (put storage settings in `catalog_properties`).
	ConfigProperties map[string]string `managed:"config_properties"`
	// Filter is a SQL predicate (Calcite syntax) applied during the scan, e.g. `id > 5 AND
	// status = 'ACTIVE'` (see Filter syntax in the README).
	Filter string `managed:"filter" option:"WithFilter(predicate)"`
	// Keep lists the only columns to read (also the row lineage columns `_row_id` and
	// `_last_updated_sequence_number` on format version 3). Exclusive with `drop`.
	// Default: all columns.
	Keep []string `managed:"keep" option:"WithKeep(cols)"`
	// Drop lists the columns not to read. Exclusive with `keep`. Default: none.
	Drop []string `managed:"drop" option:"WithDrop(cols)"`
	// SnapshotID reads the table as of this snapshot. Exclusive with `as_of_timestamp`,
	// `branch` and `streaming`. Default: the current snapshot.
	SnapshotID *int64 `managed:"snapshot_id" option:"WithSnapshotID(id)"`
	// AsOfTimestamp reads the snapshot current at this time: RFC 3339 or epoch
	// milliseconds. Exclusive with `snapshot_id`, `branch` and `streaming`. Default: the
	// current snapshot.
	AsOfTimestamp string `managed:"as_of_timestamp"`
	// Branch reads the head of this branch or tag instead of main. Exclusive with
	// `snapshot_id`, `as_of_timestamp` and `streaming`. Default: `main`.
	Branch string `managed:"branch" option:"WithBranch(name)"`
	// FromSnapshot starts a continuous read (`streaming`, required) after this snapshot
	// (exclusive): the rows appended by the snapshots after it. Exclusive with
	// `from_timestamp` and `starting_strategy`. Default: see `starting_strategy`.
	FromSnapshot *int64 `managed:"from_snapshot" option:"WithReadFromSnapshot(id)"`
	// ToSnapshot ends a continuous read (`streaming`, required) at this snapshot
	// (inclusive). Exclusive with `to_timestamp`. Default: none (the read goes on).
	ToSnapshot *int64 `managed:"to_snapshot" option:"WithReadToSnapshot(id)"`
	// FromTimestamp starts a continuous read (`streaming`, required) with the snapshots
	// committed at or after this time (epoch milliseconds), which may be in the future:
	// the rows they append. Exclusive with `from_snapshot` and `starting_strategy`.
	// Default: see `starting_strategy`.
	FromTimestamp *int64 `managed:"from_timestamp" option:"WithReadFromTimestamp(t millis)"`
	// ToTimestamp ends a continuous read (`streaming`, required) with the last snapshot
	// committed at or before this time (epoch milliseconds): the read stops when main has
	// a later snapshot, or at its first poll starting 5 s (for commits in flight) after
	// this time. Exclusive with `to_snapshot`. Default: none (the read goes on).
	ToTimestamp *int64 `managed:"to_timestamp" option:"WithReadToTimestamp(t millis)"`
	// StartingStrategy is where a continuous read (`streaming`, required) without
	// `from_snapshot` or `from_timestamp` starts: `earliest` ([StartEarliest]) emits the
	// current snapshot's rows first, `latest` ([StartLatest]) only the rows appended
	// later. Default: `earliest`.
	StartingStrategy StartingStrategy `managed:"starting_strategy" option:"WithReadStartingStrategy(s)"`
	// Streaming makes the read continuous: its start (the current snapshot's rows, or see
	// `starting_strategy` and `from_snapshot`), then the rows each new snapshot on main
	// appends, polling every `poll_interval_seconds`, until `to_snapshot` or
	// `to_timestamp` if set. Exclusive with `snapshot_id`, `as_of_timestamp` and `branch`.
	// Default: `false`.
	Streaming bool `managed:"streaming" option:"WithStreaming(on)"`
	// PollIntervalSeconds is how often a continuous read (`streaming`, required) looks for
	// new snapshots; at least 1. Default: `60` ([DefaultPollIntervalSeconds]).
	PollIntervalSeconds *int `managed:"poll_interval_seconds" option:"WithPollInterval(d seconds)"`
	// OutputType is the struct type the read emits instead of Row. Not a managed key: it is
	// set by a typed option only and never appears in Map.
	OutputType reflect.Type `managed:"-"`
	// Schema is the table's schema as the read expects it, given up front (WithSchema):
	// Read then builds without reaching the catalog, and checks at run time that the
	// columns it reads have these types. Not a managed key.
	Schema *ibg.Schema `managed:"-"`
	// After holds the read back until these PCollections are complete (WithReadAfter).
	// Not a managed key.
	After []beam.PCollection `managed:"-"`
}

// WriteConfig configures Write: one field per managed write key (tagged
// `managed:"<key>"`). A zero field (nil for the *int fields) means "not set";
// Resolved fills in the defaults. Printing it (fmt, encoding/json) redacts catalog
// secrets.
type WriteConfig struct {
	// Table is the table identifier (`db.table`). For appends also a template such as
	// `db.events_{region}` whose `{column}` placeholders pick each row's table;
	// merge-on-read writes take one table (a template fails at construction with
	// [ErrUnsupported]). Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table; every worker must use the
	// same name. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties are the properties that build the catalog: `type` (`sql`, `rest`,
	// `hadoop`, `glue`, `hive`), `uri`, `warehouse`, storage settings. A property the
	// catalog type does not read is an error naming the closest one (see Catalogs in the
	// README). Values of secret keys (see [IsSecretKey]) are never logged or put in
	// errors. Required (`type`).
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop configuration properties. Not used by icebeam: any entry
	// is rejected with [ErrUnsupported] (put storage settings in `catalog_properties`).
	ConfigProperties map[string]string `managed:"config_properties"`
	// Mode is the write mode: `append` ([Append]) writes each row as new data;
	// `merge-on-read` ([MergeOnRead]) applies each row as a change (INSERT, UPDATE_BEFORE,
	// UPDATE_AFTER, DELETE) by key. Default: `append`.
	Mode Mode `managed:"mode" option:"WithMode(m)"`
	// ChangeTypeColumn names the column holding each row's change type; it is stripped
	// before writing. A dotted path (`meta.op`) names a field of a struct column. With
	// `only`, it is read from the envelope (Debezium: `op`). Merge-on-read only.
	ChangeTypeColumn string `managed:"change_type_column" option:"WithChangeTypeColumn(col)"`
	// ChangeTypeMap maps `change_type_column` values to INSERT, UPDATE_BEFORE,
	// UPDATE_AFTER or DELETE ([ChangeInsert], [ChangeUpdateBefore], [ChangeUpdateAfter],
	// [ChangeDelete]). Merge-on-read only; needs `change_type_column`.
	ChangeTypeMap map[string]string `managed:"change_type_map" option:"WithChangeTypeMap(m)"`
	// EqualityColumns are the columns that identify a row (the key); required when the
	// table does not exist yet, and with [WithoutCatalogAtConstruction]. Merge-on-read
	// only. Default: the table's identifier fields.
	EqualityColumns []string `managed:"equality_columns" option:"WithEqualityColumns(cols)"`
	// SequenceNumberColumn names the INT64 column ordering the changes of one key; it is
	// stripped before writing. A dotted path names a field of a struct column (Debezium:
	// `source.lsn`). Merge-on-read only. Default: `_commit_snapshot_sequence_number`
	// ([DefaultSequenceNumberColumn]).
	SequenceNumberColumn string `managed:"sequence_number_column" option:"WithSequenceNumberColumn(col)"`
	// Upsert treats every INSERT and UPDATE_AFTER as an upsert: the key's prior row is
	// deleted before the new one is written. Set it for Debezium-style maps whose updates
	// carry only the after-image (`u: UPDATE_AFTER`); without it, the prior row goes only
	// when an UPDATE_BEFORE or DELETE for the key comes too. Merge-on-read only. Default:
	// `false`.
	Upsert bool `managed:"upsert" option:"WithUpsert(on)"`
	// DeleteFormat is how prior rows are deleted: `dv`, deletion vectors
	// ([DeleteFormatDV]), or `equality`, equality delete files ([DeleteFormatEquality]).
	// icebeam key. Merge-on-read only. Default: `dv` on format-version 3, `equality` on 2.
	DeleteFormat DeleteFormat `managed:"delete_format" option:"WithDeleteFormat(f)"`
	// NumShards is the number of key-hash shards per destination (at least 1): the write
	// parallelism per table. Merge-on-read only. Default: `16` ([DefaultNumShards]).
	NumShards *int `managed:"num_shards" option:"WithNumShards(n)"`
	// ShardsPerPartition is the most shards one partition's rows may use, 1 to
	// `num_shards`. Below `num_shards` it needs every partition column among
	// `equality_columns` (a key whose partition changes must stay in one shard).
	// Merge-on-read only. Default: `num_shards`.
	ShardsPerPartition *int `managed:"shards_per_partition" option:"WithShardsPerPartition(n)"`
	// AutoSharding spreads each partition's rows of a bundle over successive shuffle
	// shards (one per 4 MiB packet), so a busy partition gets more writers and a quiet one
	// stays at one. Needs `distribution_mode` `hash`. Appends only: a merge-on-read write,
	// which shards by key hash (`num_shards`), refuses it with [ErrUnsupported]. Default:
	// `false`.
	AutoSharding bool `managed:"auto_sharding" option:"WithAutoSharding(on)"`
	// DistributionMode is how rows reach the file writers: `none` ([DistributionNone])
	// writes rows where they are; `hash` ([DistributionHash]) shuffles rows by partition
	// key first, so each partition gets its files from one writer (an unpartitioned table
	// is written as with `none`). Default: `none`.
	DistributionMode DistributionMode `managed:"distribution_mode" option:"WithDistributionMode(m)"`
	// SorterMemoryMB is the in-memory sort buffer (MB) of one shard's window before
	// spilling to disk; at least 1. In a batch pipeline the shards of a bundle run side by
	// side, up to GOMAXPROCS of them, each with its own buffer, so a worker may hold
	// GOMAXPROCS + 1 of them at once. Merge-on-read only. Default: `100`
	// ([DefaultSorterMemoryMB]).
	SorterMemoryMB *int `managed:"sorter_memory_mb" option:"WithSorterMemoryMB(mb)"`
	// KeyIndexMemoryMB is the memory budget (MB) of each worker's index of the table's
	// keys, which resolves a change's key to its row without reading the table each
	// window; `0` disables it (every window reads the key columns of the data files that
	// may hold its keys). icebeam key. Merge-on-read only. Default: `256`
	// ([DefaultKeyIndexMemoryMB]).
	KeyIndexMemoryMB *int `managed:"key_index_memory_mb" option:"WithKeyIndexMemoryMB(mb)"`
	// DirectWriteByteLimit is the bundle size (bytes, at least 1) up to which a streaming
	// append writes a bundle's rows directly; a larger bundle is shuffled by partition and
	// written by one writer per partition. Streaming appends only (needs
	// `triggering_frequency_seconds`): a merge-on-read write, which always shuffles
	// changes by key, refuses it with [ErrUnsupported].
	DirectWriteByteLimit *int `managed:"direct_write_byte_limit" option:"WithDirectWriteByteLimit(n)"`
	// AllowedLatenessSeconds is how late a row may be and still be committed, in a
	// late-pane commit of its window: lateness is measured from the end of the row's
	// window against the newest window the sink has committed to its table (the stand-in
	// for the watermark, which trails it by the commit latency), and later rows go to the
	// dead letter output. At least 0. Streaming writes. Default: `21600`, 6 hours
	// ([DefaultAllowedLatenessSeconds]).
	AllowedLatenessSeconds *int `managed:"allowed_lateness_seconds" option:"WithAllowedLateness(d seconds)"`
	// SinkID is the stable id namespacing the sink's exactly-once tokens in snapshot
	// summaries; set it (and keep it across restarts) for exactly-once. Printable UTF-8
	// (spaces allowed), no control characters: it becomes part of summary keys. Default: a
	// fresh UUID per pipeline construction.
	SinkID string `managed:"sink_id" option:"WithSinkID(id)"`
	// SnapshotProperties are extra properties added to every snapshot summary; keys under
	// `beam.cdc.` are reserved and rejected.
	SnapshotProperties map[string]string `managed:"snapshot_properties" option:"WithSnapshotProperties(p)"`
	// TokenHeartbeatSeconds keeps an idle sink's token: every this many seconds (at least
	// 1), if the sink's newest token snapshot is older than that, the sink commits an
	// empty snapshot carrying the same token, so snapshot expiry cannot drop it. Streaming
	// writes only (needs `triggering_frequency_seconds`), to a single table (a table
	// template is refused with [ErrUnsupported]). Default: disabled.
	TokenHeartbeatSeconds *int `managed:"token_heartbeat_seconds" option:"WithTokenHeartbeat(d seconds)"`
	// TriggeringFrequencySeconds is the length (at least 1) of the fixed event-time
	// windows a streaming write puts rows into: each table gets one commit per window, in
	// window order, when the watermark passes the window's end (and late-pane commits for
	// late rows). Set it for unbounded input: without it rows stay in the global window,
	// which never ends.
	TriggeringFrequencySeconds *int `managed:"triggering_frequency_seconds" option:"WithTriggeringFrequency(d seconds)"`
	// PartitionFields is the partition spec of tables the write creates (see
	// [ParsePartitionField]): `col`, `bucket(N, col)`, `truncate(N, col)` (also
	// `bucket(col, N)`, `bucket[N](col)`), `year(col)`, `month(col)`, `day(col)`,
	// `hour(col)`, `void(col)`. Default: unpartitioned.
	PartitionFields []string `managed:"partition_fields" option:"WithPartitionFields(fields)"`
	// SortFields is the sort order of tables the write creates (see [ParseSortField]):
	// `<term> [asc|desc] [nulls first|nulls last]`, the term a column or a transform such
	// as `bucket(16, id)`. Default: unsorted.
	SortFields []string `managed:"sort_fields" option:"WithSortFields(fields)"`
	// TableProperties are the Iceberg table properties of tables the write creates
	// (format-version 3 unless set here).
	TableProperties map[string]string `managed:"table_properties" option:"WithTableProperties(p)"`
	// WriteProperties are properties of the file writers, e.g. Parquet settings.
	WriteProperties map[string]string `managed:"write_properties" option:"WithWriteProperties(p)"`
	// Keep lists the only fields kept before writing. Exclusive with `drop` and `only`.
	// Default: all fields.
	Keep []string `managed:"keep" option:"WithWriteKeep(cols)"`
	// Drop lists the fields dropped before writing (merge-on-read: from each change's row
	// image, e.g. the struct holding a nested control column; control columns may not be
	// listed). Exclusive with `keep` and `only`. Default: none.
	Drop []string `managed:"drop" option:"WithWriteDrop(cols)"`
	// Only names the single record field to write (a dotted path). Merge-on-read: the
	// field of a change envelope holding the row image (Debezium: `after`); the control
	// columns are read from the whole input row. Exclusive with `keep` and `drop`; see
	// Debezium envelopes in the README.
	Only string `managed:"only" option:"WithOnly(field)"`
	// BeforeField names the field of the envelope holding the before-image (Debezium:
	// `before`): a DELETE or UPDATE_BEFORE change takes its row image from it, or from
	// `only` when it is null; a change with neither image goes to the dead letter output.
	// icebeam key. Merge-on-read only; needs `only`.
	BeforeField string `managed:"before_field" option:"WithBeforeField(field)"`
	// EvolveSchema lets the write evolve the table's schema to fit the rows, instead of
	// dead-lettering the rows it cannot take: a field the table lacks becomes a new
	// optional column (nested struct fields too), int, float and decimal columns widen to
	// long, double and a larger precision, and a required column a row leaves null becomes
	// optional. Anything else stays an error. Both modes. icebeam key; see Schema
	// evolution in the README. Default: `false`.
	EvolveSchema bool `managed:"evolve_schema" option:"WithSchemaEvolution(on)"`
	// MaximumTableCacheSize is the number of tables whose metadata a worker process keeps
	// in memory (at least 1); the least recently used go first. Default: 1000.
	MaximumTableCacheSize *int `managed:"maximum_table_cache_size" option:"WithMaximumTableCacheSize(n)"`
	// TableCacheRefreshIntervalSeconds is how often (seconds, at least 1) cached table
	// metadata is refreshed from the catalog in streaming pipelines.
	TableCacheRefreshIntervalSeconds *int `managed:"table_cache_refresh_interval_seconds" option:"WithTableCacheRefreshInterval(d seconds)"`
	// TableCachePollingBuckets is accepted for compatibility with Dataflow's configs and
	// not implemented (icebeam has no catalog pollers): `1` changes nothing, any other
	// value fails at construction with [ErrUnsupported]. Default: `1`.
	TableCachePollingBuckets *int `managed:"table_cache_polling_buckets" option:"WithTableCachePollingBuckets(n)"`
	// UseSideInputTableCache is accepted for compatibility with Dataflow's configs and not
	// implemented (each worker caches tables itself): `false` changes nothing, `true`
	// fails at construction with [ErrUnsupported]. Default: `false`.
	UseSideInputTableCache bool `managed:"use_side_input_table_cache" option:"WithSideInputTableCache(on)"`
	// MaintenanceEveryCommits runs inline maintenance on a table after every this many
	// commits of the sink to it (at least 1): compaction of the table's small and
	// delete-heavy files, and snapshot expiry when `expire_older_than_seconds` or
	// `retain_last` is set ([WithExpireSnapshots]). It runs in its own step after the
	// commit step. A run's first commit counts on from the table's commits since its last
	// compaction, so batch jobs of one commit each maintain every this many runs. icebeam
	// key; see Maintenance in the README. Default: disabled.
	MaintenanceEveryCommits *int `managed:"maintenance_every_commits" option:"WithMaintenanceEveryCommits(n)"`
	// MaintenanceIntervalSeconds runs inline maintenance (as `maintenance_every_commits`)
	// on a table at a commit when at least this many seconds (at least 1) passed since the
	// table's last compaction (any icebeam sink's or Maintain's; its oldest snapshot if it
	// was never compacted). A run's first commit reads that time from the table, so batch
	// jobs maintain too. icebeam key. Default: disabled.
	MaintenanceIntervalSeconds *int `managed:"maintenance_interval_seconds" option:"WithMaintenanceInterval(d seconds)"`
	// ExpireOlderThanSeconds makes inline maintenance expire snapshots older than this (at
	// least 0) beyond `retain_last`, keeping each recent sink's newest exactly-once token.
	// Only with `maintenance_every_commits` or `maintenance_interval_seconds`. icebeam
	// key. Default: the table's `history.expire.max-snapshot-age-ms` (5 days when unset).
	ExpireOlderThanSeconds *int `managed:"expire_older_than_seconds"`
	// RetainLast makes inline maintenance keep at least this many snapshots of each branch
	// (at least 1), whatever their age, when it expires snapshots. Only with
	// `maintenance_every_commits` or `maintenance_interval_seconds`. icebeam key. Default:
	// the table's `history.expire.min-snapshots-to-keep` (1 when unset).
	RetainLast *int `managed:"retain_last"`
	// NoCatalogAtConstruction builds the write without reaching the catalog
	// (WithoutCatalogAtConstruction): the checks that need the table run when the
	// job does. Not a managed key.
	NoCatalogAtConstruction bool `managed:"-"`
}

// ChangesConfig configures ReadChanges: one field per managed changelog key (tagged
// `managed:"<key>"`). A zero field means "not set". Printing it (fmt,
// encoding/json) redacts catalog secrets.
type ChangesConfig struct {
	// Table is the table identifier (`db.table`), e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table; every worker must use the
	// same name. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties are the properties that build the catalog: `type` (`sql`, `rest`,
	// `hadoop`, `glue`, `hive`), `uri`, `warehouse`, storage settings. A property the
	// catalog type does not read is an error naming the closest one (see Catalogs in the
	// README). Values of secret keys (see [IsSecretKey]) are never logged or put in
	// errors. Required (`type`).
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop configuration properties. Not used by icebeam: any entry
	// is rejected with [ErrUnsupported] (put storage settings in `catalog_properties`).
	ConfigProperties map[string]string `managed:"config_properties"`
	// Filter is a SQL predicate (Calcite syntax): only changed rows matching it are read.
	Filter string `managed:"filter" option:"WithChangesFilter(predicate)"`
	// Keep lists the only table columns to emit. Exclusive with `drop`. Default: all
	// columns.
	Keep []string `managed:"keep" option:"WithChangesKeep(cols)"`
	// Drop lists the table columns not to emit. Exclusive with `keep`. Default: none.
	Drop []string `managed:"drop" option:"WithChangesDrop(cols)"`
	// FromSnapshot starts after this snapshot (exclusive): its own changes are not read.
	// It must be an ancestor of the end snapshot. Exclusive with `from_timestamp` and
	// `starting_strategy`. Default: see `starting_strategy`.
	FromSnapshot *int64 `managed:"from_snapshot" option:"WithFromSnapshot(id)"`
	// ToSnapshot ends at this snapshot (inclusive); a continuous read (`streaming`) stops
	// there. Exclusive with `to_timestamp`. Default: the table's current snapshot; with
	// `streaming`, none.
	ToSnapshot *int64 `managed:"to_snapshot" option:"WithToSnapshot(id)"`
	// FromTimestamp reads the changes of snapshots committed at or after this time (epoch
	// milliseconds); a continuous read may be given a future time. Exclusive with
	// `from_snapshot` and `starting_strategy`. Default: see `starting_strategy`.
	FromTimestamp *int64 `managed:"from_timestamp" option:"WithFromTimestamp(t millis)"`
	// ToTimestamp ends at the last snapshot committed at or before this time (epoch
	// milliseconds). A continuous read (`streaming`) stops when main has a later snapshot,
	// or at its first poll starting 5 s (for commits in flight) after this time. Exclusive
	// with `to_snapshot`. Default: the table's current snapshot; with `streaming`, none.
	ToTimestamp *int64 `managed:"to_timestamp" option:"WithToTimestamp(t millis)"`
	// StartingStrategy is where the read starts when neither `from_snapshot` nor
	// `from_timestamp` is set: `earliest` ([StartEarliest]) reads the whole history of the
	// end snapshot (the oldest snapshot's rows are INSERTs), `latest` ([StartLatest]) only
	// the end snapshot's own changes. Default: `earliest`.
	StartingStrategy StartingStrategy `managed:"starting_strategy" option:"WithStartingStrategy(s)"`
	// Streaming makes the read continuous: after the range's start it follows main,
	// emitting the changes of each new snapshot, polling every `poll_interval_seconds`,
	// until `to_snapshot` or `to_timestamp` if set. Default: `false`.
	Streaming bool `managed:"streaming" option:"WithChangesStreaming(on)"`
	// PollIntervalSeconds is how often a continuous read (`streaming`, required) looks for
	// new snapshots; at least 1. Default: `60` ([DefaultPollIntervalSeconds]).
	PollIntervalSeconds *int `managed:"poll_interval_seconds" option:"WithChangesPollInterval(d seconds)"`
}

// With returns a copy of c with opts applied in order (nil options are skipped). It
// does not validate: call Validate on the result.
func (c ReadConfig) With(opts ...ReadOption) ReadConfig { return with(c, opts) }

// With returns a copy of c with opts applied in order (nil options are skipped). It
// does not validate: call Validate on the result.
func (c WriteConfig) With(opts ...WriteOption) WriteConfig { return with(c, opts) }

// With returns a copy of c with opts applied in order (nil options are skipped). It
// does not validate: call Validate on the result.
func (c ChangesConfig) With(opts ...ChangesOption) ChangesConfig { return with(c, opts) }

// with applies opts to a copy of c.
func with[C any, O ~func(*C)](c C, opts []O) C {
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}
