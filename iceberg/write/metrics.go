package write

import "github.com/apache/beam/sdks/v2/go/pkg/beam"

// MetricsNamespace is the namespace of the write's Beam metrics.
const MetricsNamespace = "icebeam"

// Counters of the write: rows and panes that arrive after their window was
// committed, replays after a restart, and ambiguous changes.
var (
	// LateDead counts rows that went to the dead letter output because their window
	// closed more than allowed_lateness_seconds before the sink's newest commit.
	LateDead = beam.NewCounter(MetricsNamespace, "late_rows_dead_lettered")
	// LatePassed counts rows committed in late panes (merge-on-read: late changes
	// applied).
	LatePassed = beam.NewCounter(MetricsNamespace, "late_rows_committed")
	// ReplayedSkipped counts rows of windows an earlier run committed that were
	// already in the table (a restart's replay), skipped.
	ReplayedSkipped = beam.NewCounter(MetricsNamespace, "replayed_rows_skipped")
	// ReplayedNew counts rows of windows an earlier run committed that it had not
	// committed: written in a late pane of their window.
	ReplayedNew = beam.NewCounter(MetricsNamespace, "replayed_rows_new")
	// LateUnordered counts merge-on-read shard results committed after changes newer
	// than some of theirs (a late pane that raced its window's commit).
	LateUnordered = beam.NewCounter(MetricsNamespace, "late_results_unordered")
	// AmbiguousChanges counts merge-on-read changes sent to the dead letter output
	// because their key had two different after-images at its last sequence number
	// in the window.
	AmbiguousChanges = beam.NewCounter(MetricsNamespace, "ambiguous_changes_dead_lettered")
	// LatePanes counts late panes committed.
	LatePanes = beam.NewCounter(MetricsNamespace, "late_panes_committed")
	// PanesSkipped counts panes found already committed (a retried bundle or a lost
	// commit response); SkippedWithData those of them that carried data files or
	// deletes although the pane's own commit was not found: a sink id reused for
	// new data.
	PanesSkipped    = beam.NewCounter(MetricsNamespace, "panes_skipped_committed")
	SkippedWithData = beam.NewCounter(MetricsNamespace, "panes_skipped_with_data")
)
