package iceberg

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/write"
)

// DeadLetter is a row Write could not write, with where it was going and why.
type DeadLetter struct {
	// Row is the row in its String form.
	Row string
	// Table is the destination table, empty when none could be rendered.
	Table string
	// Reason says why the row was rejected; it names the column when one is at fault.
	Reason string
}

// SnapshotInfo describes one commit of Write (or one window skipped because the sink
// id had already committed it).
type SnapshotInfo struct {
	// Table is the destination table ("db.table").
	Table string
	// SnapshotID is the snapshot made, or the one already holding the window when
	// Skipped.
	SnapshotID int64
	// SequenceNumber is that snapshot's sequence number.
	SequenceNumber int64
	// Operation is that snapshot's operation (append for append commits).
	Operation string
	// FilesAdded is the number of data files added.
	FilesAdded int64
	// RowsAdded is the number of rows added.
	RowsAdded int64
	// SinkID is the write's sink id.
	SinkID string
	// Skipped is true when this commit was found already made: a retried bundle or a
	// lost commit response, or a batch rerun with the same sink id. (A streaming
	// restart drops the rows it replays before writing them and commits only rows
	// the earlier run did not.)
	Skipped bool
	// WindowEndMs is the committed window's token value: its max timestamp in epoch
	// milliseconds (the global window's for batch writes without windows).
	WindowEndMs int64
	// Late is true for the commit of a late pane: rows that arrived after their
	// window had been committed, within allowed_lateness_seconds, or rows of a window
	// an earlier run committed that it had not.
	Late bool
	// DeleteFilesAdded is the number of delete files added by a merge-on-read
	// commit: deletion vectors or equality delete files. 0 for append commits.
	DeleteFilesAdded int64
	// DVsRemoved is the number of deletion vectors a merge-on-read commit removed
	// because the DVs it added replace them. 0 for append commits.
	DVsRemoved int64
	// PositionsDeleted is the number of row positions newly deleted by the
	// deletion vectors added; 0 in equality delete mode and for append commits.
	PositionsDeleted int64
	// EqualityDeletesAdded is the number of equality delete rows written; 0 in
	// deletion vector mode and for append commits.
	EqualityDeletesAdded int64
}

// The write DoFns emit package write's types (which cannot import this package);
// Write hands users these, field for field the same (the conversions do not compile
// otherwise), so that go doc shows them.

func toDeadLetter(d write.DeadLetter) DeadLetter       { return DeadLetter(d) }
func toSnapshotInfo(i write.SnapshotInfo) SnapshotInfo { return SnapshotInfo(i) }

// publicResults converts the write's outputs to the public types.
func publicResults(s beam.Scope, snaps, dead beam.PCollection) WriteResult {
	return WriteResult{
		Snapshots:  beam.ParDo(s.Scope("SnapshotInfo"), toSnapshotInfo, snaps),
		DeadLetter: beam.ParDo(s.Scope("DeadLetter"), toDeadLetter, dead),
	}
}

func init() {
	beam.RegisterType(reflect.TypeFor[DeadLetter]())
	beam.RegisterType(reflect.TypeFor[SnapshotInfo]())
	register.Function1x1(toDeadLetter)
	register.Function1x1(toSnapshotInfo)
}
