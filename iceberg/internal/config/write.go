package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Mode is the write mode of the mode key.
type Mode string

// Write modes.
const (
	// Append appends every row as new data. The default.
	Append Mode = "append"
	// MergeOnRead applies every row as a change (INSERT, UPDATE_BEFORE, UPDATE_AFTER,
	// DELETE) to the row with the same equality_columns, deleting prior rows with deletion
	// vectors (or equality deletes, see DeleteFormat).
	MergeOnRead Mode = "merge-on-read"
)

// DeleteFormat is how a merge-on-read write deletes prior rows (the delete_format key).
type DeleteFormat string

// Delete formats. The empty DeleteFormat means DV on format-version 3 tables and
// Equality on format-version 2 tables.
const (
	// DeleteFormatDV writes Iceberg V3 binary deletion vectors (Puffin files).
	DeleteFormatDV DeleteFormat = "dv"
	// DeleteFormatEquality writes equality delete files.
	DeleteFormatEquality DeleteFormat = "equality"
)

// DistributionMode is how rows reach the file writers (the distribution_mode key).
type DistributionMode string

// Distribution modes.
const (
	// DistributionNone writes rows where they are, without a shuffle. The default.
	DistributionNone DistributionMode = "none"
	// DistributionHash shuffles rows by partition key before writing.
	DistributionHash DistributionMode = "hash"
)

// Change types of change_type_map values and of merge-on-read rows.
const (
	ChangeInsert       = "INSERT"
	ChangeUpdateBefore = "UPDATE_BEFORE"
	ChangeUpdateAfter  = "UPDATE_AFTER"
	ChangeDelete       = "DELETE"
)

// Defaults. WriteDefaults and WriteConfig.Resolved are built from these values only.
const (
	DefaultMode                     = Append
	DefaultDistributionMode         = DistributionNone
	DefaultNumShards                = 16
	DefaultSorterMemoryMB           = 100
	DefaultKeyIndexMemoryMB         = 256
	DefaultAllowedLatenessSeconds   = 21600
	DefaultTableCachePollingBuckets = 1
	DefaultSequenceNumberColumn     = "_commit_snapshot_sequence_number"
)

// writeDefaults holds every write default by key. Merge-on-read-only keys apply only in
// that mode. shards_per_partition defaults to the effective num_shards.
var writeDefaults = map[string]any{
	KeyMode:                     string(DefaultMode),
	KeyDistributionMode:         string(DefaultDistributionMode),
	KeyAllowedLatenessSeconds:   DefaultAllowedLatenessSeconds,
	KeyTableCachePollingBuckets: DefaultTableCachePollingBuckets,
	KeyNumShards:                DefaultNumShards,
	KeySorterMemoryMB:           DefaultSorterMemoryMB,
	KeyKeyIndexMemoryMB:         DefaultKeyIndexMemoryMB,
	KeySequenceNumberColumn:     DefaultSequenceNumberColumn,
}

// mergeOnReadOnly are the keys that only apply to mode merge-on-read; setting one in
// append mode is an error (never a silent no-op).
var mergeOnReadOnly = []string{
	KeyChangeTypeColumn, KeyChangeTypeMap, KeyEqualityColumns, KeySequenceNumberColumn,
	KeyUpsert, KeyDeleteFormat, KeyNumShards, KeyShardsPerPartition, KeySorterMemoryMB,
	KeyKeyIndexMemoryMB, KeyBeforeField,
}

// WriteDefaults returns the default of every write key that has one. The merge-on-read
// keys among them (num_shards, sorter_memory_mb, sequence_number_column) apply only in
// that mode; sink_id defaults to a fresh UUID assigned by the write transform.
func WriteDefaults() map[string]any {
	out := make(map[string]any, len(writeDefaults))
	for k, v := range writeDefaults {
		out[k] = v
	}
	return out
}

// MergeOnReadOnlyKeys returns the write keys that are valid only with mode merge-on-read.
func MergeOnReadOnlyKeys() []string { return slices.Clone(mergeOnReadOnly) }

// WriteConfig configures a write to one or more Iceberg tables. Each managed field is
// tagged with its managed key; the zero value of a field (nil for pointers) means "not set",
// and Resolved fills in defaults.
type WriteConfig struct {
	// Table is the table identifier, or a template such as "db.events_{region}" whose
	// {column} placeholders are filled from each row. Required.
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
	// DistributionMode is DistributionNone (default) or DistributionHash.
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
}

// ParseWriteConfig builds a WriteConfig from a managed-style map and validates it. Every
// problem is reported at once (see ParseReadConfig). SinkID stays empty when not given.
func ParseWriteConfig(m map[string]any) (WriteConfig, error) {
	return parse[WriteConfig](writeSchema, m, readSchema)
}

// Map returns the managed-style map of the keys set in c: the inverse of ParseWriteConfig.
func (c WriteConfig) Map() map[string]any {
	return writeSchema.encode(reflect.ValueOf(c))
}

// IsMergeOnRead reports whether c writes in merge-on-read mode.
func (c WriteConfig) IsMergeOnRead() bool { return c.Mode == MergeOnRead }

// Resolved returns a copy of c with every unset key that has a default set to it (see
// WriteDefaults); merge-on-read defaults apply only in that mode, and shards_per_partition
// defaults to num_shards. SinkID and DeleteFormat are left as they are. The result
// validates exactly when c does.
func (c WriteConfig) Resolved() WriteConfig {
	v := reflect.ValueOf(&c).Elem()
	mor := c.Mode == MergeOnRead
	for key, def := range writeDefaults {
		if !mor && slices.Contains(mergeOnReadOnly, key) {
			continue
		}
		if writeSchema.isSet(v, key) {
			continue
		}
		f := writeSchema.fields[key]
		if err := decodeField(f, def, v.FieldByIndex(f.index)); err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", key, err))
		}
	}
	if mor && c.ShardsPerPartition == nil && c.NumShards != nil {
		n := *c.NumShards
		c.ShardsPerPartition = &n
	}
	return c
}

// Lateness returns allowed_lateness_seconds as a duration, or its default.
func (c WriteConfig) Lateness() time.Duration {
	if c.AllowedLatenessSeconds != nil {
		return time.Duration(*c.AllowedLatenessSeconds) * time.Second
	}
	return DefaultAllowedLatenessSeconds * time.Second
}

// PartitionSpec parses PartitionFields (see ParsePartitionFields).
func (c WriteConfig) PartitionSpec() ([]PartitionField, error) {
	return ParsePartitionFields(c.PartitionFields)
}

// SortOrder parses SortFields (see ParseSortFields).
func (c WriteConfig) SortOrder() ([]SortField, error) {
	return ParseSortFields(c.SortFields)
}

// Validate reports every problem of c at once (see ParseReadConfig for the error form).
func (c WriteConfig) Validate() error {
	var errs Errors
	v := reflect.ValueOf(c)
	checkCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	checkTemplate(&errs, c.Table)

	switch c.Mode {
	case "", Append, MergeOnRead:
	default:
		errs.Add(Errorf(KeyMode, "unknown mode %q (want %q or %q)", c.Mode, Append, MergeOnRead))
	}
	if c.Mode != MergeOnRead {
		for _, k := range mergeOnReadOnly {
			if writeSchema.isSet(v, k) {
				errs.Add(Errorf(k, "applies only to mode %q (mode is %q)", MergeOnRead, Append))
			}
		}
	}

	// Change rows.
	checkColumn(&errs, KeyChangeTypeColumn, c.ChangeTypeColumn)
	checkColumn(&errs, KeySequenceNumberColumn, c.SequenceNumberColumn)
	checkMapKeys(&errs, KeyChangeTypeMap, c.ChangeTypeMap)
	for _, k := range sortedKeys(c.ChangeTypeMap) {
		switch c.ChangeTypeMap[k] {
		case ChangeInsert, ChangeUpdateBefore, ChangeUpdateAfter, ChangeDelete:
		default:
			errs.Add(Errorf(KeyChangeTypeMap+"."+k, "unknown change type %q (want %s, %s, %s or %s)",
				c.ChangeTypeMap[k], ChangeInsert, ChangeUpdateBefore, ChangeUpdateAfter, ChangeDelete))
		}
	}
	if len(c.ChangeTypeMap) > 0 && c.ChangeTypeColumn == "" {
		errs.Add(Errorf(KeyChangeTypeMap, "needs %s: the map translates that column's values", KeyChangeTypeColumn))
	}
	seqCol := c.SequenceNumberColumn
	if seqCol == "" {
		seqCol = DefaultSequenceNumberColumn
	}
	if c.Mode == MergeOnRead && c.ChangeTypeColumn != "" && c.ChangeTypeColumn == seqCol {
		errs.Add(Errorf(KeyChangeTypeColumn, "is the same column as %s (%q)", KeySequenceNumberColumn, seqCol))
	}
	checkColumns(&errs, KeyEqualityColumns, c.EqualityColumns)
	for _, col := range c.EqualityColumns {
		// With only, the control columns are fields of the envelope, not of the
		// row image the equality columns name.
		if c.Mode == MergeOnRead && c.Only == "" && (col == c.ChangeTypeColumn || col == seqCol) {
			errs.Add(Errorf(KeyEqualityColumns, "column %q is a control column (change type or sequence number), stripped before writing", col))
		}
	}

	// Projection.
	set := map[string]bool{KeyKeep: len(c.Keep) > 0, KeyDrop: len(c.Drop) > 0, KeyOnly: c.Only != ""}
	checkExclusive(&errs, set, KeyKeep, KeyDrop, KeyOnly)
	checkColumns(&errs, KeyKeep, c.Keep)
	checkColumns(&errs, KeyDrop, c.Drop)
	checkColumn(&errs, KeyOnly, c.Only)
	checkColumn(&errs, KeyBeforeField, c.BeforeField)
	for _, p := range []struct{ key, path string }{
		{KeyChangeTypeColumn, c.ChangeTypeColumn}, {KeySequenceNumberColumn, c.SequenceNumberColumn},
		{KeyOnly, c.Only}, {KeyBeforeField, c.BeforeField},
	} {
		checkPath(&errs, p.key, p.path)
	}
	if c.BeforeField != "" {
		switch {
		case c.Only == "":
			errs.Add(Errorf(KeyBeforeField, "needs %s: it names the before-image of the envelope whose row image %s names", KeyOnly, KeyOnly))
		case c.BeforeField == c.Only:
			errs.Add(Errorf(KeyBeforeField, "is the same field as %s (%q)", KeyOnly, c.Only))
		}
	}
	if c.Mode == MergeOnRead {
		for _, col := range c.EqualityColumns {
			if slices.Contains(c.Drop, col) {
				errs.Add(Errorf(KeyDrop, "drops equality column %q", col))
			}
			if len(c.Keep) > 0 && !slices.Contains(c.Keep, col) {
				errs.Add(Errorf(KeyKeep, "does not keep equality column %q", col))
			}
		}
		// The control columns are read from each input row before keep, drop or
		// only apply, and are never written: naming one there does nothing.
		controls := []string{seqCol}
		if c.ChangeTypeColumn != "" {
			controls = append(controls, c.ChangeTypeColumn)
		}
		for _, col := range controls {
			switch {
			case slices.Contains(c.Keep, col):
				errs.Add(Errorf(KeyKeep, "lists control column %q: control columns are read from each row and never written", col))
			case slices.Contains(c.Drop, col):
				errs.Add(Errorf(KeyDrop, "lists control column %q: control columns are read from each row and never written", col))
			case col == c.Only || col == c.BeforeField:
				key := KeyOnly
				if col == c.BeforeField {
					key = KeyBeforeField
				}
				errs.Add(Errorf(key, "names control column %q, which holds no row image", col))
			}
		}
	}

	// Formats and distribution.
	switch c.DeleteFormat {
	case "", DeleteFormatDV, DeleteFormatEquality:
	default:
		errs.Add(Errorf(KeyDeleteFormat, "unknown delete format %q (want %q or %q)", c.DeleteFormat, DeleteFormatDV, DeleteFormatEquality))
	}
	if fv, ok := c.TableProperties["format-version"]; ok {
		switch fv {
		case "1", "2", "3":
			if c.DeleteFormat == DeleteFormatDV && fv != "3" {
				errs.Add(Errorf(KeyDeleteFormat, "%q needs format-version 3, table_properties sets %s", DeleteFormatDV, fv))
			}
		default:
			errs.Add(Errorf(KeyTableProperties+".format-version", "want 1, 2 or 3, got %q", fv))
		}
	}
	switch c.DistributionMode {
	case "", DistributionNone, DistributionHash:
	default:
		errs.Add(Errorf(KeyDistributionMode, "unknown distribution mode %q (want %q or %q)", c.DistributionMode, DistributionNone, DistributionHash))
	}
	if c.AutoSharding && c.DistributionMode != DistributionHash {
		errs.Add(Errorf(KeyAutoSharding, "needs %s %q", KeyDistributionMode, DistributionHash))
	}

	// Numbers.
	const maxI = math.MaxInt32
	checkIntRange(&errs, KeyNumShards, c.NumShards, 1, maxI)
	numShards := DefaultNumShards
	if c.NumShards != nil && *c.NumShards >= 1 {
		numShards = *c.NumShards
	}
	checkIntRange(&errs, KeyShardsPerPartition, c.ShardsPerPartition, 1, numShards)
	checkIntRange(&errs, KeySorterMemoryMB, c.SorterMemoryMB, 1, maxI)
	checkIntRange(&errs, KeyKeyIndexMemoryMB, c.KeyIndexMemoryMB, 0, maxI)
	checkIntRange(&errs, KeyDirectWriteByteLimit, c.DirectWriteByteLimit, 1, maxI)
	checkIntRange(&errs, KeyAllowedLatenessSeconds, c.AllowedLatenessSeconds, 0, maxI)
	checkIntRange(&errs, KeyTokenHeartbeatSeconds, c.TokenHeartbeatSeconds, 1, maxI)
	checkIntRange(&errs, KeyTriggeringFrequencySeconds, c.TriggeringFrequencySeconds, 1, maxI)
	checkIntRange(&errs, KeyMaximumTableCacheSize, c.MaximumTableCacheSize, 1, maxI)
	checkIntRange(&errs, KeyTableCacheRefreshIntervalSeconds, c.TableCacheRefreshIntervalSeconds, 1, maxI)
	checkIntRange(&errs, KeyTableCachePollingBuckets, c.TableCachePollingBuckets, 1, maxI)
	checkIntRange(&errs, KeyMaintenanceEveryCommits, c.MaintenanceEveryCommits, 1, maxI)
	checkIntRange(&errs, KeyMaintenanceIntervalSeconds, c.MaintenanceIntervalSeconds, 1, maxI)
	checkIntRange(&errs, KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds, 0, maxI)
	checkIntRange(&errs, KeyRetainLast, c.RetainLast, 1, maxI)
	if c.MaintenanceEveryCommits == nil && c.MaintenanceIntervalSeconds == nil {
		for _, k := range []struct {
			key string
			set bool
		}{{KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds != nil}, {KeyRetainLast, c.RetainLast != nil}} {
			if k.set {
				errs.Add(Errorf(k.key, "applies to inline maintenance: set %s or %s too", KeyMaintenanceEveryCommits, KeyMaintenanceIntervalSeconds))
			}
		}
	}

	if c.TriggeringFrequencySeconds == nil {
		for _, k := range []struct {
			key string
			set bool
		}{
			{KeyDirectWriteByteLimit, c.DirectWriteByteLimit != nil && *c.DirectWriteByteLimit >= 1},
			{KeyTokenHeartbeatSeconds, c.TokenHeartbeatSeconds != nil && *c.TokenHeartbeatSeconds >= 1},
		} {
			if k.set {
				errs.Add(Errorf(k.key, "applies to streaming writes: set %s too", KeyTriggeringFrequencySeconds))
			}
		}
	}

	// Sink identity and properties.
	checkSinkID(&errs, c.SinkID)
	checkMapKeys(&errs, KeySnapshotProperties, c.SnapshotProperties)
	for _, k := range sortedKeys(c.SnapshotProperties) {
		if strings.HasPrefix(k, "beam.cdc.") {
			errs.Add(Errorf(KeySnapshotProperties+"."+k, "keys under \"beam.cdc.\" are reserved for the sink's tokens"))
		}
	}
	checkMapKeys(&errs, KeyTableProperties, c.TableProperties)
	checkMapKeys(&errs, KeyWriteProperties, c.WriteProperties)

	// Table layout.
	if _, err := ParsePartitionFields(c.PartitionFields); err != nil {
		errs.Add(err)
	}
	if _, err := ParseSortFields(c.SortFields); err != nil {
		errs.Add(err)
	}
	return flatten(errs).Err()
}

// checkTemplate reports unbalanced braces and empty placeholders in a table template.
func checkTemplate(errs *Errors, table string) {
	depth := 0
	start := 0
	for i, r := range table {
		switch r {
		case '{':
			if depth > 0 {
				errs.Add(Errorf(KeyTable, "nested { in table template"))
				return
			}
			depth, start = 1, i
		case '}':
			if depth == 0 {
				errs.Add(Errorf(KeyTable, "unmatched } in table template"))
				return
			}
			if blank(table[start+1 : i]) {
				errs.Add(Errorf(KeyTable, "empty {} placeholder in table template"))
				return
			}
			depth = 0
		}
	}
	if depth > 0 {
		errs.Add(Errorf(KeyTable, "unclosed { in table template"))
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
