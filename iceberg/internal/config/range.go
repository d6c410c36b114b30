package config

import (
	"math"
	"time"
)

// DefaultPollIntervalSeconds is the poll_interval_seconds of a continuous read
// (streaming: true) that does not set it.
const DefaultPollIntervalSeconds = 60

// StartingStrategy is where a changelog or continuous read without from_snapshot or
// from_timestamp starts (the starting_strategy key).
type StartingStrategy string

// Starting strategies.
const (
	// StartEarliest reads every change of the end snapshot's history, from the oldest
	// snapshot still in the table (inclusive). The default.
	StartEarliest StartingStrategy = "earliest"
	// StartLatest reads only the changes the end snapshot itself committed.
	StartLatest StartingStrategy = "latest"
)

// Range holds the keys that place a read on a table's snapshot history: where a
// changelog read (ChangesConfig) or a continuous read (ReadConfig with Streaming)
// starts and ends, and how often it polls. ReadConfig and ChangesConfig embed it; the
// public types in package iceberg have its fields in line, at the same place.
type Range struct {
	// FromSnapshot starts the read after this snapshot (exclusive). Exclusive with
	// FromTimestamp and StartingStrategy.
	FromSnapshot *int64 `managed:"from_snapshot"`
	// ToSnapshot ends the read at this snapshot (inclusive). Exclusive with ToTimestamp.
	ToSnapshot *int64 `managed:"to_snapshot"`
	// FromTimestamp starts the read with the snapshots committed at or after this time
	// (epoch milliseconds). Exclusive with FromSnapshot and StartingStrategy.
	FromTimestamp *int64 `managed:"from_timestamp"`
	// ToTimestamp ends the read with the last snapshot committed at or before this time
	// (epoch milliseconds). Exclusive with ToSnapshot.
	ToTimestamp *int64 `managed:"to_timestamp"`
	// StartingStrategy is where the read starts when neither FromSnapshot nor
	// FromTimestamp is set: "earliest" (default) or "latest".
	StartingStrategy StartingStrategy `managed:"starting_strategy"`
	// Streaming makes the read continuous: after its start it follows main, snapshot by
	// snapshot, until ToSnapshot or ToTimestamp (if set).
	Streaming bool `managed:"streaming"`
	// PollIntervalSeconds is how often a continuous read looks for new snapshots (at
	// least 1; default DefaultPollIntervalSeconds). Only with Streaming.
	PollIntervalSeconds *int `managed:"poll_interval_seconds"`
}

// PollInterval returns the poll interval of a continuous read: PollIntervalSeconds, or
// DefaultPollIntervalSeconds when it is not set.
func (r Range) PollInterval() time.Duration {
	if r.PollIntervalSeconds == nil {
		return DefaultPollIntervalSeconds * time.Second
	}
	return time.Duration(*r.PollIntervalSeconds) * time.Second
}

// Strategy returns StartingStrategy, or StartEarliest when it is not set.
func (r Range) Strategy() StartingStrategy {
	if r.StartingStrategy == "" {
		return StartEarliest
	}
	return r.StartingStrategy
}

// set records which range keys are given, for checkExclusive.
func (r Range) set(set map[string]bool) {
	set[KeyFromSnapshot] = r.FromSnapshot != nil
	set[KeyToSnapshot] = r.ToSnapshot != nil
	set[KeyFromTimestamp] = r.FromTimestamp != nil
	set[KeyToTimestamp] = r.ToTimestamp != nil
	set[KeyStartingStrategy] = r.StartingStrategy != ""
	set[KeyPollIntervalSeconds] = r.PollIntervalSeconds != nil
}

// check reports contradictory or out-of-range range keys: one start (from_snapshot,
// from_timestamp or starting_strategy), one end (to_snapshot or to_timestamp),
// positive snapshot ids, non-negative epoch milliseconds, a start time not after the end
// time, a known strategy, and a poll interval of at least one second that only a
// continuous read may set.
func (r Range) check(errs *Errors) {
	set := map[string]bool{}
	r.set(set)
	checkExclusive(errs, set, KeyFromSnapshot, KeyFromTimestamp, KeyStartingStrategy)
	checkExclusive(errs, set, KeyToSnapshot, KeyToTimestamp)
	for _, p := range []struct {
		key string
		v   *int64
	}{{KeyFromSnapshot, r.FromSnapshot}, {KeyToSnapshot, r.ToSnapshot}} {
		if p.v != nil && *p.v <= 0 {
			errs.Add(Errorf(p.key, "must be a positive snapshot id, got %d", *p.v))
		}
	}
	for _, p := range []struct {
		key string
		v   *int64
	}{{KeyFromTimestamp, r.FromTimestamp}, {KeyToTimestamp, r.ToTimestamp}} {
		if p.v != nil && *p.v < 0 {
			errs.Add(Errorf(p.key, "epoch milliseconds must not be negative, got %d", *p.v))
		}
	}
	if r.FromTimestamp != nil && r.ToTimestamp != nil && *r.FromTimestamp > *r.ToTimestamp {
		errs.Add(Errorf(KeyFromTimestamp, "%d is after to_timestamp %d", *r.FromTimestamp, *r.ToTimestamp))
	}
	switch r.StartingStrategy {
	case "", StartEarliest, StartLatest:
	default:
		errs.Add(Errorf(KeyStartingStrategy, "want %q or %q, got %q", StartEarliest, StartLatest, string(r.StartingStrategy)))
	}
	if r.PollIntervalSeconds != nil {
		if !r.Streaming {
			errs.Add(Errorf(KeyPollIntervalSeconds, "only a continuous read polls: set streaming: true, or remove %s", KeyPollIntervalSeconds))
		}
		checkIntRange(errs, KeyPollIntervalSeconds, r.PollIntervalSeconds, 1, math.MaxInt32)
	}
}
