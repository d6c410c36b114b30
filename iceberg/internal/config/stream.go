package config

import (
	"math"
	"time"
)

// DefaultPollIntervalSeconds is the poll_interval_seconds of a continuous read
// (streaming: true) that does not set it.
const DefaultPollIntervalSeconds = 60

// rangeKeys are the settings that place a read on a table's snapshot history: where a
// changelog or continuous read starts and where it ends.
type rangeKeys struct {
	FromSnapshot, ToSnapshot   *int64
	FromTimestamp, ToTimestamp *int64
	StartingStrategy           StartingStrategy
	Streaming                  bool
	PollIntervalSeconds        *int
}

// set records which range keys are given, for checkExclusive.
func (r rangeKeys) set(set map[string]bool) {
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
func (r rangeKeys) check(errs *Errors) {
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

// pollInterval returns the poll interval of a continuous read: *secs, or the default.
func pollInterval(secs *int) time.Duration {
	if secs == nil {
		return DefaultPollIntervalSeconds * time.Second
	}
	return time.Duration(*secs) * time.Second
}
