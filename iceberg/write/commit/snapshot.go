package commit

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// SnapshotInfo describes one commit (or one skipped window) of the write.
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

func init() {
	beam.RegisterType(reflect.TypeFor[SnapshotInfo]())
}
