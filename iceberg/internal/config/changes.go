package config

import (
	"reflect"
	"strings"
	"time"
)

// StartingStrategy is where a changelog read without from_snapshot or from_timestamp
// starts (the starting_strategy key).
type StartingStrategy string

// Starting strategies.
const (
	// StartEarliest reads every change of the end snapshot's history, from the oldest
	// snapshot still in the table (inclusive). The default.
	StartEarliest StartingStrategy = "earliest"
	// StartLatest reads only the changes the end snapshot itself committed.
	StartLatest StartingStrategy = "latest"
)

// ChangesConfig configures a changelog read (ReadChanges): the rows changed between two
// snapshots of one table, or continuously (Streaming) by each new snapshot. Each managed field is tagged with its managed key; the zero
// value of a field means "not set".
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

var changesSchema = buildSchema("changes", reflect.TypeFor[ChangesConfig]())

// ChangesKeys returns the managed keys ChangesConfig accepts, in field order.
func ChangesKeys() []string { return append([]string(nil), changesSchema.keys...) }

// ParseChangesConfig builds a ChangesConfig from a managed-style map and validates it.
// Every problem is reported at once (see ParseReadConfig for the error form).
func ParseChangesConfig(m map[string]any) (ChangesConfig, error) {
	var c ChangesConfig
	errs := changesSchema.decode(m, reflect.ValueOf(&c), readSchema)
	if err := merge(errs, c.Validate()).Err(); err != nil {
		return ChangesConfig{}, err
	}
	return c, nil
}

// ParseChangesConfigJSON parses a JSON object of managed keys (see ParseChangesConfig).
// Numbers keep their full precision, so 64-bit snapshot ids survive.
func ParseChangesConfigJSON(b []byte) (ChangesConfig, error) {
	m, err := decodeJSON(b)
	if err != nil {
		return ChangesConfig{}, err
	}
	return ParseChangesConfig(m)
}

// ParseChangesConfigYAML parses a YAML mapping of managed keys (see ParseChangesConfig).
func ParseChangesConfigYAML(b []byte) (ChangesConfig, error) {
	m, err := decodeYAML(b)
	if err != nil {
		return ChangesConfig{}, err
	}
	return ParseChangesConfig(m)
}

// Map returns the managed-style map of the keys set in c: the inverse of
// ParseChangesConfig.
func (c ChangesConfig) Map() map[string]any {
	return changesSchema.encode(reflect.ValueOf(c))
}

// Validate reports every problem of c at once (see ParseReadConfig for the error form).
func (c ChangesConfig) Validate() error {
	var errs Errors
	checkCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	if strings.ContainsAny(c.Table, "{}") {
		errs.Add(Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	set := map[string]bool{KeyKeep: len(c.Keep) > 0, KeyDrop: len(c.Drop) > 0}
	checkExclusive(&errs, set, KeyKeep, KeyDrop)
	checkColumns(&errs, KeyKeep, c.Keep)
	checkColumns(&errs, KeyDrop, c.Drop)
	c.rangeKeys().check(&errs)
	return errs.Err()
}

func (c ChangesConfig) rangeKeys() rangeKeys {
	return rangeKeys{
		FromSnapshot: c.FromSnapshot, ToSnapshot: c.ToSnapshot,
		FromTimestamp: c.FromTimestamp, ToTimestamp: c.ToTimestamp,
		StartingStrategy: c.StartingStrategy, Streaming: c.Streaming,
		PollIntervalSeconds: c.PollIntervalSeconds,
	}
}

// PollInterval returns the poll interval of a continuous read: PollIntervalSeconds, or
// DefaultPollIntervalSeconds when it is not set.
func (c ChangesConfig) PollInterval() time.Duration { return pollInterval(c.PollIntervalSeconds) }

// Strategy returns StartingStrategy, or StartEarliest when it is not set.
func (c ChangesConfig) Strategy() StartingStrategy {
	if c.StartingStrategy == "" {
		return StartEarliest
	}
	return c.StartingStrategy
}
