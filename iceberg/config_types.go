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
	// Table is the table identifier, e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required. Values of secret keys (see
	// IsSecretKey) are never logged or put in errors.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Filter is a SQL predicate (Calcite syntax) pushed into the scan.
	Filter string `managed:"filter"`
	// Keep lists the only columns to read. Exclusive with Drop.
	Keep []string `managed:"keep"`
	// Drop lists the columns not to read. Exclusive with Keep.
	Drop []string `managed:"drop"`
	// SnapshotID reads the table as of this snapshot; nil reads the current snapshot.
	// Exclusive with AsOfTimestamp and Branch.
	SnapshotID *int64 `managed:"snapshot_id"`
	// AsOfTimestamp reads the snapshot current at this time: RFC 3339 or epoch
	// milliseconds. Exclusive with SnapshotID and Branch.
	AsOfTimestamp string `managed:"as_of_timestamp"`
	// Branch reads the head of this branch or tag instead of main. Exclusive with
	// SnapshotID and AsOfTimestamp.
	Branch string `managed:"branch"`
	// FromSnapshot starts a continuous read after this snapshot (exclusive): the rows
	// appended by the snapshots after it. Only with Streaming; exclusive with
	// FromTimestamp and StartingStrategy.
	FromSnapshot *int64 `managed:"from_snapshot"`
	// ToSnapshot ends a continuous read at this snapshot (inclusive). Only with
	// Streaming; exclusive with ToTimestamp.
	ToSnapshot *int64 `managed:"to_snapshot"`
	// FromTimestamp starts a continuous read with the snapshots committed at or after
	// this time (epoch milliseconds): the rows they append. Only with Streaming.
	FromTimestamp *int64 `managed:"from_timestamp"`
	// ToTimestamp ends a continuous read with the last snapshot committed at or before
	// this time (epoch milliseconds). Only with Streaming.
	ToTimestamp *int64 `managed:"to_timestamp"`
	// StartingStrategy is where a continuous read without FromSnapshot or FromTimestamp
	// starts: "earliest" (default) reads the current snapshot's rows first, "latest"
	// only what later snapshots append. Only with Streaming.
	StartingStrategy StartingStrategy `managed:"starting_strategy"`
	// Streaming makes the read continuous: its start (the current snapshot's rows, or
	// see StartingStrategy and FromSnapshot), then the rows each new snapshot on main
	// appends, polling every PollIntervalSeconds, until ToSnapshot or ToTimestamp (if
	// set). Exclusive with SnapshotID, AsOfTimestamp and Branch.
	Streaming bool `managed:"streaming"`
	// PollIntervalSeconds is how often a continuous read looks for new snapshots (at
	// least 1; default DefaultPollIntervalSeconds). Only with Streaming.
	PollIntervalSeconds *int `managed:"poll_interval_seconds"`
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
	// Table is the table identifier, or, for appends, a template such as
	// "db.events_{region}" whose {column} placeholders are filled from each row.
	// Merge-on-read writes take one table: a template is refused at construction
	// (ErrUnsupported). Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the tables. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required. Values of secret keys (see
	// IsSecretKey) are never logged or put in errors.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Mode is Append (default) or MergeOnRead.
	Mode Mode `managed:"mode"`
	// ChangeTypeColumn names the column with each row's change type (a dotted path
	// names a field of a struct column). Merge-on-read.
	ChangeTypeColumn string `managed:"change_type_column"`
	// ChangeTypeMap maps ChangeTypeColumn values to INSERT, UPDATE_BEFORE, UPDATE_AFTER
	// or DELETE. Merge-on-read; needs ChangeTypeColumn.
	ChangeTypeMap map[string]string `managed:"change_type_map"`
	// EqualityColumns identify a row (the key). Merge-on-read.
	EqualityColumns []string `managed:"equality_columns"`
	// SequenceNumberColumn names the INT64 column ordering a key's changes (a dotted
	// path such as "source.lsn" names a field of a struct column). Merge-on-read;
	// default DefaultSequenceNumberColumn.
	SequenceNumberColumn string `managed:"sequence_number_column"`
	// Upsert applies only after-images, as upserts. Merge-on-read.
	Upsert bool `managed:"upsert"`
	// DeleteFormat is DeleteFormatDV or DeleteFormatEquality; empty picks by the table's
	// format version. Merge-on-read.
	DeleteFormat DeleteFormat `managed:"delete_format"`
	// NumShards is the number of key-hash shards per destination (>= 1). Merge-on-read;
	// default DefaultNumShards.
	NumShards *int `managed:"num_shards"`
	// ShardsPerPartition bounds the shards of one partition (1..NumShards). Merge-on-read;
	// default NumShards.
	ShardsPerPartition *int `managed:"shards_per_partition"`
	// AutoSharding adjusts the number of writers to the volume. Needs DistributionHash.
	AutoSharding bool `managed:"auto_sharding"`
	// DistributionMode is DistributionNone (default) or DistributionHash (rows shuffled
	// by partition key; an unpartitioned table's rows are written where they are).
	DistributionMode DistributionMode `managed:"distribution_mode"`
	// SorterMemoryMB is the in-memory sort buffer before spilling (>= 1). Merge-on-read;
	// default DefaultSorterMemoryMB.
	SorterMemoryMB *int `managed:"sorter_memory_mb"`
	// KeyIndexMemoryMB bounds the key index of a table in each worker (>= 0; 0 turns
	// it off). Merge-on-read; default DefaultKeyIndexMemoryMB.
	KeyIndexMemoryMB *int `managed:"key_index_memory_mb"`
	// DirectWriteByteLimit is the bundle size up to which streaming writes go direct (>= 1).
	DirectWriteByteLimit *int `managed:"direct_write_byte_limit"`
	// AllowedLatenessSeconds is how late a row may be before it goes to the dead letter
	// output (>= 0); default DefaultAllowedLatenessSeconds.
	AllowedLatenessSeconds *int `managed:"allowed_lateness_seconds"`
	// SinkID namespaces the idempotency tokens; empty means a fresh UUID assigned when the
	// write transform is constructed. Set it (stable across restarts) for exactly-once.
	// It is part of snapshot summary keys: printable UTF-8, no control characters.
	SinkID string `managed:"sink_id"`
	// SnapshotProperties are added to every snapshot summary; keys under "beam.cdc." are
	// reserved.
	SnapshotProperties map[string]string `managed:"snapshot_properties"`
	// TokenHeartbeatSeconds makes the sink commit empty token refreshes while idle (>= 1);
	// nil disables. Streaming.
	TokenHeartbeatSeconds *int `managed:"token_heartbeat_seconds"`
	// TriggeringFrequencySeconds is the commit interval of streaming writes (>= 1).
	TriggeringFrequencySeconds *int `managed:"triggering_frequency_seconds"`
	// PartitionFields is the partition spec of tables the write creates (see
	// ParsePartitionField).
	PartitionFields []string `managed:"partition_fields"`
	// SortFields is the sort order of tables the write creates (see ParseSortField).
	SortFields []string `managed:"sort_fields"`
	// TableProperties are set on tables the write creates.
	TableProperties map[string]string `managed:"table_properties"`
	// WriteProperties configure the file writers (e.g. Parquet settings).
	WriteProperties map[string]string `managed:"write_properties"`
	// Keep lists the only fields kept before writing. Exclusive with Drop and Only.
	Keep []string `managed:"keep"`
	// Drop lists fields dropped before writing. Exclusive with Keep and Only.
	Drop []string `managed:"drop"`
	// Only names the single record field to write. Exclusive with Keep and Drop. In
	// merge-on-read mode it is the field holding each change's row image (a Debezium
	// envelope's "after"); the control columns are read from the whole input row.
	Only string `managed:"only"`
	// BeforeField names the field holding a change envelope's before-image
	// (Debezium's "before"): DELETE and UPDATE_BEFORE changes take their row from it,
	// or from Only when it is null. Merge-on-read; needs Only.
	BeforeField string `managed:"before_field"`
	// EvolveSchema lets the write evolve the table's schema to fit the rows (new
	// optional columns, lossless widening, required to optional); see KeyEvolveSchema.
	EvolveSchema bool `managed:"evolve_schema"`
	// MaximumTableCacheSize is the number of table metadata entries cached (>= 1).
	MaximumTableCacheSize *int `managed:"maximum_table_cache_size"`
	// TableCacheRefreshIntervalSeconds is how often cached metadata is refreshed (>= 1).
	TableCacheRefreshIntervalSeconds *int `managed:"table_cache_refresh_interval_seconds"`
	// TableCachePollingBuckets is accepted for Dataflow config compatibility and not
	// implemented: icebeam has no catalog pollers. Unset or 1 changes nothing; any other
	// value fails at construction with ErrUnsupported.
	TableCachePollingBuckets *int `managed:"table_cache_polling_buckets"`
	// UseSideInputTableCache is accepted for Dataflow config compatibility and not
	// implemented: icebeam has no side-input table cache. False changes nothing; true
	// fails at construction with ErrUnsupported.
	UseSideInputTableCache bool `managed:"use_side_input_table_cache"`
	// MaintenanceEveryCommits runs inline maintenance on a table after every this many
	// commits of the sink to it (>= 1): compaction of the table's small and
	// delete-heavy files, and snapshot expiry when ExpireOlderThanSeconds or RetainLast
	// is set. It runs in its own step after the commit step. A run's first commit
	// counts on from the table's commits since its last compaction, so batch jobs of
	// one commit each maintain every this many runs. Default disabled.
	MaintenanceEveryCommits *int `managed:"maintenance_every_commits"`
	// MaintenanceIntervalSeconds runs inline maintenance on a table at a commit when at
	// least this many seconds passed since the table's last compaction (its oldest
	// snapshot if never compacted), read from the table at a run's first commit (>= 1).
	// Default disabled.
	MaintenanceIntervalSeconds *int `managed:"maintenance_interval_seconds"`
	// ExpireOlderThanSeconds makes inline maintenance expire snapshots older than this
	// (>= 0), keeping the sinks' newest tokens. Only with a maintenance key.
	ExpireOlderThanSeconds *int `managed:"expire_older_than_seconds"`
	// RetainLast makes inline maintenance keep at least this many snapshots per branch
	// when it expires snapshots (>= 1). Only with a maintenance key.
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
	// Table is the table identifier, e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Filter is a SQL predicate (Calcite syntax): only changed rows matching it are read.
	Filter string `managed:"filter"`
	// Keep lists the only table columns to emit. Exclusive with Drop.
	Keep []string `managed:"keep"`
	// Drop lists table columns not to emit. Exclusive with Keep.
	Drop []string `managed:"drop"`
	// FromSnapshot starts after this snapshot (exclusive): its own changes are not read.
	// Exclusive with FromTimestamp and StartingStrategy.
	FromSnapshot *int64 `managed:"from_snapshot"`
	// ToSnapshot ends at this snapshot (inclusive); nil: the table's current snapshot.
	// Exclusive with ToTimestamp.
	ToSnapshot *int64 `managed:"to_snapshot"`
	// FromTimestamp reads the changes of snapshots committed at or after this time
	// (epoch milliseconds). Exclusive with FromSnapshot and StartingStrategy.
	FromTimestamp *int64 `managed:"from_timestamp"`
	// ToTimestamp ends at the last snapshot committed at or before this time (epoch
	// milliseconds). Exclusive with ToSnapshot.
	ToTimestamp *int64 `managed:"to_timestamp"`
	// StartingStrategy is where the read starts when neither FromSnapshot nor
	// FromTimestamp is set: "earliest" (default) or "latest".
	StartingStrategy StartingStrategy `managed:"starting_strategy"`
	// Streaming makes the read continuous: after the range's start it follows main,
	// emitting the changes of each new snapshot, until ToSnapshot or ToTimestamp (if set).
	Streaming bool `managed:"streaming"`
	// PollIntervalSeconds is how often a continuous read looks for new snapshots (at
	// least 1; default DefaultPollIntervalSeconds). Only with Streaming.
	PollIntervalSeconds *int `managed:"poll_interval_seconds"`
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
