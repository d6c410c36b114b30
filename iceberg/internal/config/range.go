package config

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
