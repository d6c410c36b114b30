// Package late sorts a streaming write's rows by their window against the sink's
// token: the [Gate] passes rows of windows not committed yet, dead-letters rows too
// late (allowed_lateness_seconds) and marks rows of windows an earlier run committed,
// whose replays the [ReplayIndex] recognises after a restart.
package late
