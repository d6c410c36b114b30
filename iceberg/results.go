package iceberg

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// The outputs users receive are defined here, so that go doc shows their fields and
// Beam registers them under names of this package. The write and maintenance DoFns
// emit their own types with the same fields (write.DeadLetter, commit.SnapshotInfo,
// maintain.Report), which a step fused with the producer converts: a Go conversion,
// which stops compiling when the two stop having the same fields.

// DeadLetter is a row Write could not write, with where it was going and why.
type DeadLetter struct {
	// Row is the row in its String form.
	Row string
	// Table is the destination table, empty when none could be rendered.
	Table string
	// Reason says why the row was rejected; it names the column when one is at fault.
	Reason string
}

// SnapshotInfo describes one commit of Write, or one window skipped because the sink
// id had already committed it.
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

// MaintenanceReport is what one Maintain run did to its table.
type MaintenanceReport struct {
	// Table is the table ("db.table").
	Table string
	// Live files before and after the run (a deletion vector counts one delete file).
	DataFilesBefore, DeleteFilesBefore, DataFilesAfter, DeleteFilesAfter int64
	// Compaction: groups planned, committed, and given up because concurrent writers
	// kept changing their files' deletes (left for the next run).
	GroupsPlanned, GroupsCommitted, GroupsStale int
	// Compaction: data files replaced and written, and delete files dropped with them.
	FilesRewritten, FilesAdded, DeleteFilesRemoved int
	// Compaction: the size of the data files replaced and written, in bytes.
	BytesBefore, BytesAfter int64
	// Expiry: snapshots removed, and kept only for the sinks' newest tokens.
	SnapshotsExpired, SnapshotsPinned int
	// OrphanFiles are the orphan files found: removed unless DryRun.
	OrphanFiles []string
	// OrphanBytes is the size of the orphan files found, in bytes.
	OrphanBytes int64
	// OrphansRemoved is the number of orphan files removed.
	OrphansRemoved int
	// DryRun is true when the orphan files were only listed (MaintainConfig.DryRun).
	DryRun bool
}

// writeResult is the WriteResult of a write's outputs: snaps (commit.SnapshotInfo)
// and dead (write.DeadLetter, counted here by reason) become SnapshotInfo and
// DeadLetter.
func writeResult(s beam.Scope, snaps, dead beam.PCollection) WriteResult {
	return WriteResult{
		Snapshots:  beam.ParDo(s.Scope("Snapshots"), &snapshotInfoFn{}, snaps),
		DeadLetter: beam.ParDo(s.Scope("CountDeadLetters"), &deadLetterFn{}, dead),
	}
}

// snapshotInfoFn hands a write's commits on as SnapshotInfo.
type snapshotInfoFn struct{}

func (*snapshotInfoFn) ProcessElement(si commit.SnapshotInfo) SnapshotInfo {
	return SnapshotInfo(si)
}

// deadLetterFn counts a write's dead letters by reason (write.CountDeadLetter) and
// hands them on as DeadLetter.
type deadLetterFn struct{}

func (*deadLetterFn) ProcessElement(ctx context.Context, d write.DeadLetter) DeadLetter {
	write.CountDeadLetter(ctx, d.Reason)
	return DeadLetter(d)
}

// maintenanceReportFn hands Maintain's report on as MaintenanceReport.
type maintenanceReportFn struct{}

func (*maintenanceReportFn) ProcessElement(r maintain.Report) MaintenanceReport {
	return MaintenanceReport(r)
}

func init() {
	for _, t := range []reflect.Type{
		reflect.TypeFor[DeadLetter](), reflect.TypeFor[SnapshotInfo](), reflect.TypeFor[MaintenanceReport](),
		reflect.TypeFor[snapshotInfoFn](), reflect.TypeFor[deadLetterFn](), reflect.TypeFor[maintenanceReportFn](),
	} {
		beam.RegisterType(t)
	}
}
