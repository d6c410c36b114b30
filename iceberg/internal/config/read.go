package config

import (
	"reflect"
	"strings"
	"time"
)

// ReadConfig configures a read of one Iceberg table, once or continuously (Streaming). Each managed field is tagged with its
// managed key; the zero value of a field means "not set".
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
}

// ParseReadConfig builds a ReadConfig from a managed-style map (as decoded from YAML or
// JSON, or built in Go) and validates it. Every problem is reported at once: the error
// is a *ConfigError or a list of them (use errors.As / errors.Is with ErrInvalidConfig).
func ParseReadConfig(m map[string]any) (ReadConfig, error) {
	var c ReadConfig
	errs := readSchema.decode(m, reflect.ValueOf(&c), writeSchema)
	if err := merge(errs, c.Validate()).Err(); err != nil {
		return ReadConfig{}, err
	}
	return c, nil
}

// Map returns the managed-style map of the keys set in c: the inverse of ParseReadConfig.
// OutputType is not included.
func (c ReadConfig) Map() map[string]any {
	return readSchema.encode(reflect.ValueOf(c))
}

// AsOf returns AsOfTimestamp as a time, or the zero time when it is not set.
func (c ReadConfig) AsOf() (time.Time, error) {
	if c.AsOfTimestamp == "" {
		return time.Time{}, nil
	}
	t, err := ParseTimestamp(c.AsOfTimestamp)
	if err != nil {
		return time.Time{}, &ConfigError{Key: KeyAsOfTimestamp, Err: err}
	}
	return t, nil
}

// Validate reports every problem of c at once (see ParseReadConfig for the error form).
func (c ReadConfig) Validate() error {
	var errs Errors
	checkCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	if strings.ContainsAny(c.Table, "{}") {
		errs.Add(Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	set := map[string]bool{
		KeyKeep: len(c.Keep) > 0, KeyDrop: len(c.Drop) > 0,
		KeySnapshotID: c.SnapshotID != nil, KeyAsOfTimestamp: c.AsOfTimestamp != "",
		KeyBranch: c.Branch != "",
	}
	checkExclusive(&errs, set, KeyKeep, KeyDrop)
	checkColumns(&errs, KeyKeep, c.Keep)
	checkColumns(&errs, KeyDrop, c.Drop)
	checkExclusive(&errs, set, KeySnapshotID, KeyAsOfTimestamp, KeyBranch)
	if c.SnapshotID != nil && *c.SnapshotID <= 0 {
		errs.Add(Errorf(KeySnapshotID, "must be positive, got %d", *c.SnapshotID))
	}
	if c.AsOfTimestamp != "" {
		if _, err := ParseTimestamp(c.AsOfTimestamp); err != nil {
			errs.Add(&ConfigError{Key: KeyAsOfTimestamp, Err: err})
		}
	}
	if c.Branch != "" && blank(c.Branch) {
		errs.Add(Errorf(KeyBranch, "blank branch name"))
	}
	c.rangeKeys().check(&errs)
	if c.Streaming {
		for _, k := range []string{KeySnapshotID, KeyAsOfTimestamp, KeyBranch} {
			if set[k] {
				errs.Add(Errorf(k, "not with streaming: a continuous read follows main from its start "+
					"(set with from_snapshot, from_timestamp or starting_strategy)"))
			}
		}
	} else {
		rs := map[string]bool{}
		c.rangeKeys().set(rs)
		for _, k := range []string{KeyFromSnapshot, KeyToSnapshot, KeyFromTimestamp, KeyToTimestamp, KeyStartingStrategy} {
			if rs[k] {
				errs.Add(Errorf(k, "only a continuous read takes a snapshot range: set streaming: true "+
					"(a batch read takes snapshot_id, as_of_timestamp or branch)"))
			}
		}
	}
	if c.OutputType != nil && c.OutputType.Kind() != reflect.Struct {
		errs.Add(Errorf("OutputType", "must be a struct type, got %s", c.OutputType))
	}
	return errs.Err()
}

func (c ReadConfig) rangeKeys() rangeKeys {
	return rangeKeys{
		FromSnapshot: c.FromSnapshot, ToSnapshot: c.ToSnapshot,
		FromTimestamp: c.FromTimestamp, ToTimestamp: c.ToTimestamp,
		StartingStrategy: c.StartingStrategy, Streaming: c.Streaming,
		PollIntervalSeconds: c.PollIntervalSeconds,
	}
}

// PollInterval returns the poll interval of a continuous read: PollIntervalSeconds, or
// DefaultPollIntervalSeconds when it is not set.
func (c ReadConfig) PollInterval() time.Duration { return pollInterval(c.PollIntervalSeconds) }

// Strategy returns StartingStrategy, or StartEarliest when it is not set.
func (c ReadConfig) Strategy() StartingStrategy {
	if c.StartingStrategy == "" {
		return StartEarliest
	}
	return c.StartingStrategy
}

// AsOfMillis returns AsOfTimestamp in milliseconds since the Unix epoch, or 0 when it is
// not set.
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
