package iceberg

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// The write's outputs are package write's types, which its DoFns emit; the names
// below are the same types, so Write hands them to users with no conversion step.

// DeadLetter is a row Write could not write: Row (the row in its String form), Table
// (the destination table, empty when none could be rendered) and Reason (why it was
// rejected; it names the column when one is at fault). See write.DeadLetter.
type DeadLetter = write.DeadLetter

// SnapshotInfo describes one commit of Write (or one window skipped because the sink
// id had already committed it): the table, the snapshot made (or found holding the
// window when Skipped), its sequence number and operation, the files, rows and
// deletes added, the sink id, the window's token value and whether the pane was late.
// See commit.SnapshotInfo for each field.
type SnapshotInfo = commit.SnapshotInfo

// writeResult is the WriteResult of a write's outputs.
func writeResult(snaps, dead beam.PCollection) WriteResult {
	return WriteResult{Snapshots: snaps, DeadLetter: dead}
}
