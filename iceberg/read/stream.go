package read

import (
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Stream holds what a continuous read (streaming: true) needs besides its spec: where
// it starts, how often it polls and when it ends. A continuous read first reads its
// base (the snapshot range or table state resolved at construction, ending at
// BaseSnapshotID), then follows main: each later snapshot on main, one at a time, in
// commit order.
type Stream struct {
	// PollSeconds is the time between two looks at the table (at least 1).
	PollSeconds int `json:"poll_seconds"`
	// BaseSnapshotID is the last snapshot of the base (0: the table had no snapshot).
	BaseSnapshotID int64 `json:"base_snapshot_id,omitempty"`
	// BaseSequence is its sequence number: the first position of the watch's
	// restriction. Later snapshots are claimed by their own sequence numbers.
	BaseSequence int64 `json:"base_sequence,omitempty"`
	// Bounded ends the read after the base (to_snapshot).
	Bounded bool `json:"bounded,omitempty"`
	// UntilMs ends the read with the last snapshot committed at or before this time
	// (to_timestamp, epoch millis; nil: no end).
	UntilMs *int64 `json:"until_ms,omitempty"`
	// SinceMs skips later snapshots committed before this time (from_timestamp in the
	// future at construction; epoch millis; 0: none).
	SinceMs int64 `json:"since_ms,omitempty"`
}

// rangeOptions are the range settings of a changelog or continuous read.
type rangeOptions struct {
	fromSnapshot, toSnapshot   *int64
	fromTimestamp, toTimestamp *int64
	latest, streaming          bool
}

// newStream returns the Stream of a continuous read whose base ends at snapshot to
// (0: none) of meta, after checking that the table can be followed.
func newStream(meta table.Metadata, ident string, pollSeconds int, to int64, opts rangeOptions) (Stream, error) {
	if meta.Version() < 2 {
		return Stream{}, &config.ConfigError{Key: config.KeyStreaming, Err: fmt.Errorf(
			"%w: a continuous read follows snapshots by sequence number, which format version 1 does not have; table %s has version %d",
			config.ErrUnsupported, ident, meta.Version())}
	}
	if pollSeconds < 1 {
		return Stream{}, config.Errorf(config.KeyPollIntervalSeconds, "must be at least 1, got %d", pollSeconds)
	}
	st := Stream{PollSeconds: pollSeconds, BaseSnapshotID: to, Bounded: opts.toSnapshot != nil}
	if to != 0 {
		st.BaseSequence = meta.SnapshotByID(to).SequenceNumber
	}
	if opts.toTimestamp != nil {
		ms := *opts.toTimestamp
		st.UntilMs = &ms
	}
	if opts.fromTimestamp != nil {
		st.SinceMs = *opts.fromTimestamp
	}
	return st, nil
}
