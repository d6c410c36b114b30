package iceberg

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Map returns c as a managed-style map, the exact inverse of ParseWriteConfig
// (secrets included: it is for round trips, not for printing).
func (c WriteConfig) Map() map[string]any { return writeSchema.Encode(reflect.ValueOf(c)) }

// IsMergeOnRead reports whether c's mode is MergeOnRead.
func (c WriteConfig) IsMergeOnRead() bool { return c.Mode == MergeOnRead }

// Resolved returns a copy of c with every unset key that has a default set to it (see
// WriteDefaults); merge-on-read defaults apply only in that mode, and
// shards_per_partition defaults to num_shards. SinkID and DeleteFormat are left as
// they are. The result validates exactly when c does.
func (c WriteConfig) Resolved() WriteConfig {
	v := reflect.ValueOf(&c).Elem()
	mor := c.Mode == MergeOnRead
	morOnly := config.MergeOnReadOnlyKeys()
	for key, def := range config.WriteDefaults() {
		if mor || !slices.Contains(morOnly, key) {
			writeSchema.SetDefault(v, key, def)
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

// PartitionSpec parses PartitionFields (see ParsePartitionField).
func (c WriteConfig) PartitionSpec() ([]PartitionField, error) {
	return config.ParsePartitionFields(c.PartitionFields)
}

// SortOrder parses SortFields (see ParseSortField).
func (c WriteConfig) SortOrder() ([]SortField, error) {
	return config.ParseSortFields(c.SortFields)
}

// Validate reports every problem of c at once, each a *ConfigError naming its key.
func (c WriteConfig) Validate() error {
	var errs config.Errors
	config.CheckCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	config.CheckTemplate(&errs, c.Table)
	switch c.Mode {
	case "", Append, MergeOnRead:
	default:
		errs.Add(config.Errorf(KeyMode, "unknown mode %q (want %q or %q)", c.Mode, Append, MergeOnRead))
	}
	if c.Mode != MergeOnRead {
		v := reflect.ValueOf(c)
		for _, k := range config.MergeOnReadOnlyKeys() {
			if writeSchema.IsSet(v, k) {
				errs.Add(config.Errorf(k, "applies only to mode %q (mode is %q)", MergeOnRead, Append))
			}
		}
	}
	c.checkChangeRows(&errs)
	c.checkProjection(&errs)
	c.checkFormats(&errs)
	c.checkNumbers(&errs)
	c.checkSinkAndLayout(&errs)
	return config.Flatten(errs).Err()
}

// seqColumn returns the sequence number column, or its default.
func (c WriteConfig) seqColumn() string {
	if c.SequenceNumberColumn == "" {
		return DefaultSequenceNumberColumn
	}
	return c.SequenceNumberColumn
}

// checkChangeRows checks the keys that describe change rows: the change type column
// and map, the sequence number column and the equality columns.
func (c WriteConfig) checkChangeRows(errs *config.Errors) {
	config.CheckColumn(errs, KeyChangeTypeColumn, c.ChangeTypeColumn)
	config.CheckColumn(errs, KeySequenceNumberColumn, c.SequenceNumberColumn)
	config.CheckMapKeys(errs, KeyChangeTypeMap, c.ChangeTypeMap)
	for _, k := range config.SortedKeys(c.ChangeTypeMap) {
		switch c.ChangeTypeMap[k] {
		case ChangeInsert, ChangeUpdateBefore, ChangeUpdateAfter, ChangeDelete:
		default:
			errs.Add(config.Errorf(KeyChangeTypeMap+"."+k, "unknown change type %q (want %s, %s, %s or %s)",
				c.ChangeTypeMap[k], ChangeInsert, ChangeUpdateBefore, ChangeUpdateAfter, ChangeDelete))
		}
	}
	if len(c.ChangeTypeMap) > 0 && c.ChangeTypeColumn == "" {
		errs.Add(config.Errorf(KeyChangeTypeMap, "needs %s: the map translates that column's values", KeyChangeTypeColumn))
	}
	seqCol := c.seqColumn()
	if c.Mode == MergeOnRead && c.ChangeTypeColumn != "" && c.ChangeTypeColumn == seqCol {
		errs.Add(config.Errorf(KeyChangeTypeColumn, "is the same column as %s (%q)", KeySequenceNumberColumn, seqCol))
	}
	config.CheckColumns(errs, KeyEqualityColumns, c.EqualityColumns)
	for _, col := range c.EqualityColumns {
		// With only, the control columns are fields of the envelope, not of the
		// row image the equality columns name.
		if c.Mode == MergeOnRead && c.Only == "" && (col == c.ChangeTypeColumn || col == seqCol) {
			errs.Add(config.Errorf(KeyEqualityColumns, "column %q is a control column (change type or sequence number), stripped before writing", col))
		}
	}
}

// checkProjection checks keep, drop, only and before_field, alone and against the
// equality and control columns of a merge-on-read write.
func (c WriteConfig) checkProjection(errs *config.Errors) {
	set := map[string]bool{KeyKeep: len(c.Keep) > 0, KeyDrop: len(c.Drop) > 0, KeyOnly: c.Only != ""}
	config.CheckExclusive(errs, set, KeyKeep, KeyDrop, KeyOnly)
	config.CheckColumns(errs, KeyKeep, c.Keep)
	config.CheckColumns(errs, KeyDrop, c.Drop)
	config.CheckColumn(errs, KeyOnly, c.Only)
	config.CheckColumn(errs, KeyBeforeField, c.BeforeField)
	for _, p := range []struct{ key, path string }{
		{KeyChangeTypeColumn, c.ChangeTypeColumn}, {KeySequenceNumberColumn, c.SequenceNumberColumn},
		{KeyOnly, c.Only}, {KeyBeforeField, c.BeforeField},
	} {
		config.CheckPath(errs, p.key, p.path)
	}
	if c.BeforeField != "" {
		switch {
		case c.Only == "":
			errs.Add(config.Errorf(KeyBeforeField, "needs %s: it names the before-image of the envelope whose row image %s names", KeyOnly, KeyOnly))
		case c.BeforeField == c.Only:
			errs.Add(config.Errorf(KeyBeforeField, "is the same field as %s (%q)", KeyOnly, c.Only))
		}
	}
	if c.Mode != MergeOnRead {
		return
	}
	for _, col := range c.EqualityColumns {
		if slices.Contains(c.Drop, col) {
			errs.Add(config.Errorf(KeyDrop, "drops equality column %q", col))
		}
		if len(c.Keep) > 0 && !slices.Contains(c.Keep, col) {
			errs.Add(config.Errorf(KeyKeep, "does not keep equality column %q", col))
		}
	}
	// The control columns are read from each input row before keep, drop or only
	// apply, and are never written: naming one there does nothing.
	controls := []string{c.seqColumn()}
	if c.ChangeTypeColumn != "" {
		controls = append(controls, c.ChangeTypeColumn)
	}
	for _, col := range controls {
		switch {
		case slices.Contains(c.Keep, col):
			errs.Add(config.Errorf(KeyKeep, "lists control column %q: control columns are read from each row and never written", col))
		case slices.Contains(c.Drop, col):
			errs.Add(config.Errorf(KeyDrop, "lists control column %q: control columns are read from each row and never written", col))
		case col == c.Only || col == c.BeforeField:
			key := KeyOnly
			if col == c.BeforeField {
				key = KeyBeforeField
			}
			errs.Add(config.Errorf(key, "names control column %q, which holds no row image", col))
		}
	}
}

// checkFormats checks the delete format, the table's format version and the
// distribution.
func (c WriteConfig) checkFormats(errs *config.Errors) {
	switch c.DeleteFormat {
	case "", DeleteFormatDV, DeleteFormatEquality:
	default:
		errs.Add(config.Errorf(KeyDeleteFormat, "unknown delete format %q (want %q or %q)", c.DeleteFormat, DeleteFormatDV, DeleteFormatEquality))
	}
	if fv, ok := c.TableProperties["format-version"]; ok {
		switch fv {
		case "1", "2", "3":
			if c.DeleteFormat == DeleteFormatDV && fv != "3" {
				errs.Add(config.Errorf(KeyDeleteFormat, "%q needs format-version 3, table_properties sets %s", DeleteFormatDV, fv))
			}
		default:
			errs.Add(config.Errorf(KeyTableProperties+".format-version", "want 1, 2 or 3, got %q", fv))
		}
	}
	switch c.DistributionMode {
	case "", DistributionNone, DistributionHash:
	default:
		errs.Add(config.Errorf(KeyDistributionMode, "unknown distribution mode %q (want %q or %q)", c.DistributionMode, DistributionNone, DistributionHash))
	}
	if c.AutoSharding && c.DistributionMode != DistributionHash {
		errs.Add(config.Errorf(KeyAutoSharding, "needs %s %q", KeyDistributionMode, DistributionHash))
	}
}

// checkNumbers checks the ranges of the integer keys, and the keys that only apply
// with another: expiry with a maintenance key, streaming keys with
// triggering_frequency_seconds.
func (c WriteConfig) checkNumbers(errs *config.Errors) {
	const maxI = math.MaxInt32
	config.CheckIntRange(errs, KeyNumShards, c.NumShards, 1, maxI)
	numShards := DefaultNumShards
	if c.NumShards != nil && *c.NumShards >= 1 {
		numShards = *c.NumShards
	}
	for _, k := range []struct {
		key    string
		v      *int
		lo, hi int
	}{
		{KeyShardsPerPartition, c.ShardsPerPartition, 1, numShards},
		{KeySorterMemoryMB, c.SorterMemoryMB, 1, maxI},
		{KeyKeyIndexMemoryMB, c.KeyIndexMemoryMB, 0, maxI},
		{KeyDirectWriteByteLimit, c.DirectWriteByteLimit, 1, maxI},
		{KeyAllowedLatenessSeconds, c.AllowedLatenessSeconds, 0, maxI},
		{KeyTokenHeartbeatSeconds, c.TokenHeartbeatSeconds, 1, maxI},
		{KeyTriggeringFrequencySeconds, c.TriggeringFrequencySeconds, 1, maxI},
		{KeyMaximumTableCacheSize, c.MaximumTableCacheSize, 1, maxI},
		{KeyTableCacheRefreshIntervalSeconds, c.TableCacheRefreshIntervalSeconds, 1, maxI},
		{KeyTableCachePollingBuckets, c.TableCachePollingBuckets, 1, maxI},
		{KeyMaintenanceEveryCommits, c.MaintenanceEveryCommits, 1, maxI},
		{KeyMaintenanceIntervalSeconds, c.MaintenanceIntervalSeconds, 1, maxI},
		{KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds, 0, maxI},
		{KeyRetainLast, c.RetainLast, 1, maxI},
	} {
		config.CheckIntRange(errs, k.key, k.v, k.lo, k.hi)
	}
	type needs struct {
		key string
		set bool
	}
	if c.MaintenanceEveryCommits == nil && c.MaintenanceIntervalSeconds == nil {
		for _, k := range []needs{{KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds != nil}, {KeyRetainLast, c.RetainLast != nil}} {
			if k.set {
				errs.Add(config.Errorf(k.key, "applies to inline maintenance: set %s or %s too", KeyMaintenanceEveryCommits, KeyMaintenanceIntervalSeconds))
			}
		}
	}
	if c.TriggeringFrequencySeconds == nil {
		for _, k := range []needs{
			{KeyDirectWriteByteLimit, c.DirectWriteByteLimit != nil && *c.DirectWriteByteLimit >= 1},
			{KeyTokenHeartbeatSeconds, c.TokenHeartbeatSeconds != nil && *c.TokenHeartbeatSeconds >= 1},
		} {
			if k.set {
				errs.Add(config.Errorf(k.key, "applies to streaming writes: set %s too", KeyTriggeringFrequencySeconds))
			}
		}
	}
}

// checkSinkAndLayout checks the sink id, the property maps and the layout of tables
// the write creates.
func (c WriteConfig) checkSinkAndLayout(errs *config.Errors) {
	config.CheckSinkID(errs, c.SinkID)
	config.CheckMapKeys(errs, KeySnapshotProperties, c.SnapshotProperties)
	for _, k := range config.SortedKeys(c.SnapshotProperties) {
		if strings.HasPrefix(k, "beam.cdc.") {
			errs.Add(config.Errorf(KeySnapshotProperties+"."+k, "keys under \"beam.cdc.\" are reserved for the sink's tokens"))
		}
	}
	config.CheckMapKeys(errs, KeyTableProperties, c.TableProperties)
	config.CheckMapKeys(errs, KeyWriteProperties, c.WriteProperties)
	if _, err := config.ParsePartitionFields(c.PartitionFields); err != nil {
		errs.Add(err)
	}
	if _, err := config.ParseSortFields(c.SortFields); err != nil {
		errs.Add(err)
	}
}
