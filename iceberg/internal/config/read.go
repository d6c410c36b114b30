package config

import (
	"reflect"
	"time"
)

// ReadConfig configures a read of one Iceberg table, once or continuously (Streaming). Each managed field is tagged with its
// managed key; the zero value of a field means "not set".
type ReadConfig struct {
	// Source is the table, its catalog, and the filter and columns of the read.
	Source
	// SnapshotID reads the table as of this snapshot; nil reads the current snapshot.
	// Exclusive with AsOfTimestamp and Branch.
	SnapshotID *int64 `managed:"snapshot_id"`
	// AsOfTimestamp reads the snapshot current at this time: RFC 3339 or epoch
	// milliseconds. Exclusive with SnapshotID and Branch.
	AsOfTimestamp string `managed:"as_of_timestamp"`
	// Branch reads the head of this branch or tag instead of main. Exclusive with
	// SnapshotID and AsOfTimestamp.
	Branch string `managed:"branch"`
	// Range places a continuous read (Streaming) on the table's history: its start
	// (FromSnapshot, FromTimestamp or StartingStrategy; default: the current snapshot's
	// rows first), its end (ToSnapshot or ToTimestamp; default: none) and its poll
	// interval. Only with Streaming, which is exclusive with SnapshotID, AsOfTimestamp
	// and Branch.
	Range
	// OutputType is the struct type the read emits instead of Row. Not a managed key: it is
	// set by a typed option only and never appears in Map.
	OutputType reflect.Type `managed:"-"`
}

// ParseReadConfig builds a ReadConfig from a managed-style map (as decoded from YAML or
// JSON, or built in Go) and validates it. Every problem is reported at once: the error
// is a *ConfigError or a list of them (use errors.As / errors.Is with ErrInvalidConfig).
func ParseReadConfig(m map[string]any) (ReadConfig, error) {
	return parse[ReadConfig](readSchema, m, writeSchema)
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
	c.Source.check(&errs)
	set := map[string]bool{
		KeySnapshotID: c.SnapshotID != nil, KeyAsOfTimestamp: c.AsOfTimestamp != "", KeyBranch: c.Branch != "",
	}
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
	c.Range.check(&errs)
	if c.Streaming {
		for _, k := range []string{KeySnapshotID, KeyAsOfTimestamp, KeyBranch} {
			if set[k] {
				errs.Add(Errorf(k, "not with streaming: a continuous read follows main from its start "+
					"(set with from_snapshot, from_timestamp or starting_strategy)"))
			}
		}
	} else {
		rs := map[string]bool{}
		c.Range.set(rs)
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
