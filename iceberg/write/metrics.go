package write

import (
	"context"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/keyjoin"
)

// MetricsNamespace is the namespace of the write's Beam metrics.
const MetricsNamespace = commit.MetricsNamespace

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
	// TombstonesSkipped counts merge-on-read change envelopes that carry no change
	// (a null change type and null row images, such as Debezium's tombstone after a
	// delete), skipped.
	TombstonesSkipped = beam.NewCounter(MetricsNamespace, "tombstones_skipped")
	// LatePanes counts late panes committed.
	LatePanes = beam.NewCounter(MetricsNamespace, "late_panes_committed")
)

// Counters and distributions of commits and files (both modes; the delete counters
// of merge-on-read commits).
var (
	Commits          = beam.NewCounter(MetricsNamespace, "commits")
	CommitAttempts   = beam.NewCounter(MetricsNamespace, "commit_attempts")
	CommitConflicts  = beam.NewCounter(MetricsNamespace, "commit_conflicts")
	LostResponses    = beam.NewCounter(MetricsNamespace, "lost_responses_recovered")
	RowsWritten      = beam.NewCounter(MetricsNamespace, "rows_written")
	DataFilesWritten = beam.NewCounter(MetricsNamespace, "data_files_written")
	DataBytesWritten = beam.NewCounter(MetricsNamespace, "data_bytes_written")
	DVsWritten       = beam.NewCounter(MetricsNamespace, "dvs_written")
	DVsReplaced      = beam.NewCounter(MetricsNamespace, "dvs_replaced")
	PositionsDeleted = beam.NewCounter(MetricsNamespace, "positions_deleted")
	EqualityDeletes  = beam.NewCounter(MetricsNamespace, "equality_delete_files_written")
	Reresolutions    = beam.NewCounter(MetricsNamespace, "reresolutions")
	ManifestMerges   = beam.NewCounter(MetricsNamespace, "manifest_merges")
	SorterSpills     = beam.NewCounter(MetricsNamespace, "sorter_spills")
	SpilledBytes     = beam.NewCounter(MetricsNamespace, "sorter_spilled_bytes")
	KeyFilesRead     = keyjoin.FilesRead
	// KeyBytesRead counts the stored bytes of key columns the merge-on-read shards
	// and the key join read to resolve keys (building or updating the key index,
	// or reading candidate files without one); KeyIndexSpillRead the bytes of key
	// index blocks they read from local disk (partitions past key_index_memory_mb).
	KeyBytesRead      = keyjoin.BytesRead
	KeyIndexSpillRead = beam.NewCounter(MetricsNamespace, "key_index_spill_bytes_read")
	// KeyIndexBuildMs counts the milliseconds the shards spent bringing the worker's
	// key index up to the table: on a cold worker, building it (the cold start).
	KeyIndexBuildMs = keyjoin.ReadMs
	// CommitLatency is, for windowed writes, the time from a window's end to its
	// commit, in milliseconds.
	CommitLatency = beam.NewDistribution(MetricsNamespace, "commit_latency_ms")
)

// recordCommit counts one commit step's result res of the window ending
// windowEndMs (windowed: a window of triggering_frequency_seconds or of the input).
// A skipped commit counts only its attempts: res then describes the snapshot an
// earlier attempt or run made, not work of this one.
func recordCommit(ctx context.Context, res commit.CommitResult, windowEndMs int64, windowed bool) {
	CommitAttempts.Inc(ctx, int64(res.Attempts))
	CommitConflicts.Inc(ctx, int64(res.Conflicts))
	if res.Recovered {
		LostResponses.Inc(ctx, 1)
	}
	if res.Skipped || res.SnapshotID == 0 {
		return // no work written: a skipped (already committed) or empty commit
	}
	Commits.Inc(ctx, 1)
	RowsWritten.Inc(ctx, res.RowsAdded)
	DataFilesWritten.Inc(ctx, res.FilesAdded)
	DataBytesWritten.Inc(ctx, res.BytesAdded)
	DVsWritten.Inc(ctx, int64(res.DVsAdded))
	DVsReplaced.Inc(ctx, int64(res.DVsRemoved))
	PositionsDeleted.Inc(ctx, res.PositionsDeleted)
	EqualityDeletes.Inc(ctx, int64(res.EqualityDeleteFiles))
	if res.LateID != "" {
		LatePanes.Inc(ctx, 1)
	}
	if windowed && res.LateID == "" {
		CommitLatency.Update(ctx, time.Now().UnixMilli()-(windowEndMs+1))
	}
}

// CountDeadLetter counts one dead letter of the write by its reason: dead_letters,
// and one of dead_letters_late (too late for its window, or a stale change),
// dead_letters_ambiguous (changes in an unknown order) and dead_letters_invalid_row
// (everything else: a value the table cannot take, no destination, a bad change
// row). The facade calls it as it hands the dead letters to users.
func CountDeadLetter(ctx context.Context, reason string) {
	deadLetters.Inc(ctx, 1)
	switch {
	case strings.HasPrefix(reason, "late:"):
		deadLate.Inc(ctx, 1)
	case strings.Contains(reason, "ambiguous"):
		deadAmbiguous.Inc(ctx, 1)
	default:
		deadRow.Inc(ctx, 1)
	}
}

var (
	deadLetters   = beam.NewCounter(MetricsNamespace, "dead_letters")
	deadLate      = beam.NewCounter(MetricsNamespace, "dead_letters_late")
	deadAmbiguous = beam.NewCounter(MetricsNamespace, "dead_letters_ambiguous")
	deadRow       = beam.NewCounter(MetricsNamespace, "dead_letters_invalid_row")
)
