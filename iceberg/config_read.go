package iceberg

import (
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// The schemas of the configs: their managed keys, from the struct tags.
var (
	readSchema     = config.NewSchema("read", reflect.TypeFor[ReadConfig]())
	writeSchema    = config.NewSchema("write", reflect.TypeFor[WriteConfig]())
	changesSchema  = config.NewSchema("changes", reflect.TypeFor[ChangesConfig]())
	maintainSchema = config.NewSchema("maintain", reflect.TypeFor[MaintainConfig]())
)

// Map returns c as a managed-style map, the exact inverse of ParseReadConfig (secrets
// included: it is for round trips, not for printing). OutputType is not included.
func (c ReadConfig) Map() map[string]any { return readSchema.Encode(reflect.ValueOf(c)) }

// Validate reports every problem of c at once, each a *ConfigError naming its key
// (use errors.As, or errors.Is with ErrInvalidConfig).
func (c ReadConfig) Validate() error {
	var errs config.Errors
	checkSource(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties, c.Keep, c.Drop)
	set := map[string]bool{
		KeySnapshotID: c.SnapshotID != nil, KeyAsOfTimestamp: c.AsOfTimestamp != "", KeyBranch: c.Branch != "",
	}
	config.CheckExclusive(&errs, set, KeySnapshotID, KeyAsOfTimestamp, KeyBranch)
	if c.SnapshotID != nil && *c.SnapshotID <= 0 {
		errs.Add(config.Errorf(KeySnapshotID, "must be positive, got %d", *c.SnapshotID))
	}
	if c.AsOfTimestamp != "" {
		if _, err := config.ParseTimestamp(c.AsOfTimestamp); err != nil {
			errs.Add(&ConfigError{Key: KeyAsOfTimestamp, Err: err})
		}
	}
	if c.Branch != "" && config.Blank(c.Branch) {
		errs.Add(config.Errorf(KeyBranch, "blank branch name"))
	}
	r := c.snapshotRange()
	r.check(&errs)
	if c.Streaming {
		for _, k := range []string{KeySnapshotID, KeyAsOfTimestamp, KeyBranch} {
			if set[k] {
				errs.Add(config.Errorf(k, "not with streaming: a continuous read follows main from its start "+
					"(set with from_snapshot, from_timestamp or starting_strategy)"))
			}
		}
	} else {
		rs := r.set()
		for _, k := range []string{KeyFromSnapshot, KeyToSnapshot, KeyFromTimestamp, KeyToTimestamp, KeyStartingStrategy} {
			if rs[k] {
				errs.Add(config.Errorf(k, "only a continuous read takes a snapshot range: set streaming: true "+
					"(a batch read takes snapshot_id, as_of_timestamp or branch)"))
			}
		}
	}
	if c.OutputType != nil && c.OutputType.Kind() != reflect.Struct {
		errs.Add(config.Errorf("OutputType", "must be a struct type, got %s", c.OutputType))
	}
	if c.Streaming && c.Schema != nil {
		errs.Add(config.Errorf("Schema", "%w: not with streaming: a continuous read loads the table at construction", ErrUnsupported))
	}
	if c.Streaming && len(c.After) > 0 {
		errs.Add(config.Errorf("After", "%w: not with streaming", ErrUnsupported))
	}
	return errs.Err()
}

// AsOf returns AsOfTimestamp as a time, or the zero time when it is not set.
func (c ReadConfig) AsOf() (time.Time, error) {
	if c.AsOfTimestamp == "" {
		return time.Time{}, nil
	}
	t, err := config.ParseTimestamp(c.AsOfTimestamp)
	if err != nil {
		return time.Time{}, &ConfigError{Key: KeyAsOfTimestamp, Err: err}
	}
	return t, nil
}

// AsOfMillis returns AsOfTimestamp in milliseconds since the Unix epoch, or 0 when it
// is not set.
func (c ReadConfig) AsOfMillis() (int64, error) {
	t, err := c.AsOf()
	if err != nil || t.IsZero() {
		return 0, err
	}
	return t.UnixMilli(), nil
}

// SnapshotIDValue returns *SnapshotID, or 0 when it is not set.
func (c ReadConfig) SnapshotIDValue() int64 {
	if c.SnapshotID == nil {
		return 0
	}
	return *c.SnapshotID
}

// PollInterval returns PollIntervalSeconds as a duration, or its default.
func (c ReadConfig) PollInterval() time.Duration { return c.snapshotRange().pollInterval() }

// Strategy returns StartingStrategy, or StartEarliest when it is not set.
func (c ReadConfig) Strategy() StartingStrategy { return c.snapshotRange().strategy() }

// Map returns c as a managed-style map, the exact inverse of ParseChangesConfig
// (secrets included: it is for round trips, not for printing).
func (c ChangesConfig) Map() map[string]any { return changesSchema.Encode(reflect.ValueOf(c)) }

// Validate reports every problem of c at once, each a *ConfigError naming its key.
func (c ChangesConfig) Validate() error {
	var errs config.Errors
	checkSource(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties, c.Keep, c.Drop)
	r := c.snapshotRange()
	r.check(&errs)
	return errs.Err()
}

// PollInterval returns PollIntervalSeconds as a duration, or its default.
func (c ChangesConfig) PollInterval() time.Duration { return c.snapshotRange().pollInterval() }

// Strategy returns StartingStrategy, or StartEarliest when it is not set.
func (c ChangesConfig) Strategy() StartingStrategy { return c.snapshotRange().strategy() }

// checkSource reports the problems of the keys that name what a read reads: the
// table and catalog, a table template (writes only), keep with drop, and malformed
// column names.
func checkSource(errs *config.Errors, table, catalog string, catalogProps, configProps map[string]string, keep, drop []string) {
	config.CheckCommon(errs, table, catalog, catalogProps, configProps)
	if strings.ContainsAny(table, "{}") {
		errs.Add(config.Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	config.CheckExclusive(errs, map[string]bool{KeyKeep: len(keep) > 0, KeyDrop: len(drop) > 0}, KeyKeep, KeyDrop)
	config.CheckColumns(errs, KeyKeep, keep)
	config.CheckColumns(errs, KeyDrop, drop)
}

// snapshotRange is where a changelog or continuous read starts and ends on a table's
// history, and how often it polls: the range keys ReadConfig and ChangesConfig share,
// for the checks and defaults they share.
type snapshotRange struct {
	from, to           *int64 // from_snapshot, to_snapshot
	fromTime, toTime   *int64 // from_timestamp, to_timestamp
	strategyKey        StartingStrategy
	streaming          bool
	pollIntervalSecond *int
}

func (c ReadConfig) snapshotRange() snapshotRange {
	return snapshotRange{c.FromSnapshot, c.ToSnapshot, c.FromTimestamp, c.ToTimestamp, c.StartingStrategy, c.Streaming, c.PollIntervalSeconds}
}

func (c ChangesConfig) snapshotRange() snapshotRange {
	return snapshotRange{c.FromSnapshot, c.ToSnapshot, c.FromTimestamp, c.ToTimestamp, c.StartingStrategy, c.Streaming, c.PollIntervalSeconds}
}

func (r snapshotRange) pollInterval() time.Duration {
	if r.pollIntervalSecond == nil {
		return DefaultPollIntervalSeconds * time.Second
	}
	return time.Duration(*r.pollIntervalSecond) * time.Second
}

func (r snapshotRange) strategy() StartingStrategy {
	if r.strategyKey == "" {
		return StartEarliest
	}
	return r.strategyKey
}

// set records which range keys are given, for CheckExclusive.
func (r snapshotRange) set() map[string]bool {
	return map[string]bool{
		KeyFromSnapshot: r.from != nil, KeyToSnapshot: r.to != nil,
		KeyFromTimestamp: r.fromTime != nil, KeyToTimestamp: r.toTime != nil,
		KeyStartingStrategy: r.strategyKey != "", KeyPollIntervalSeconds: r.pollIntervalSecond != nil,
	}
}

// check reports contradictory or out-of-range range keys: one start (from_snapshot,
// from_timestamp or starting_strategy), one end (to_snapshot or to_timestamp),
// positive snapshot ids, non-negative epoch milliseconds, a start time not after the
// end time, a known strategy, and a poll interval of at least one second that only a
// continuous read may set.
func (r snapshotRange) check(errs *config.Errors) {
	set := r.set()
	config.CheckExclusive(errs, set, KeyFromSnapshot, KeyFromTimestamp, KeyStartingStrategy)
	config.CheckExclusive(errs, set, KeyToSnapshot, KeyToTimestamp)
	type key struct {
		name string
		v    *int64
	}
	for _, k := range []key{{KeyFromSnapshot, r.from}, {KeyToSnapshot, r.to}} {
		if k.v != nil && *k.v <= 0 {
			errs.Add(config.Errorf(k.name, "must be a positive snapshot id, got %d", *k.v))
		}
	}
	for _, k := range []key{{KeyFromTimestamp, r.fromTime}, {KeyToTimestamp, r.toTime}} {
		if k.v != nil && *k.v < 0 {
			errs.Add(config.Errorf(k.name, "epoch milliseconds must not be negative, got %d", *k.v))
		}
	}
	if r.fromTime != nil && r.toTime != nil && *r.fromTime > *r.toTime {
		errs.Add(config.Errorf(KeyFromTimestamp, "%d is after to_timestamp %d", *r.fromTime, *r.toTime))
	}
	switch r.strategyKey {
	case "", StartEarliest, StartLatest:
	default:
		errs.Add(config.Errorf(KeyStartingStrategy, "want %q or %q, got %q", StartEarliest, StartLatest, string(r.strategyKey)))
	}
	if r.pollIntervalSecond != nil {
		if !r.streaming {
			errs.Add(config.Errorf(KeyPollIntervalSeconds, "only a continuous read polls: set streaming: true, or remove %s", KeyPollIntervalSeconds))
		}
		config.CheckIntRange(errs, KeyPollIntervalSeconds, r.pollIntervalSecond, 1, math.MaxInt32)
	}
}
