package commit

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// SnapshotInfo describes one commit (or one skipped window) of the write. The
// facade hands it to users as iceberg.SnapshotInfo, which has the same fields (a
// Go conversion) and documents them.
type SnapshotInfo struct {
	Table                string
	SnapshotID           int64
	SequenceNumber       int64
	Operation            string
	FilesAdded           int64
	RowsAdded            int64
	SinkID               string
	Skipped              bool
	WindowEndMs          int64
	Late                 bool
	DeleteFilesAdded     int64
	DVsRemoved           int64
	PositionsDeleted     int64
	EqualityDeletesAdded int64
}

func init() {
	beam.RegisterType(reflect.TypeFor[SnapshotInfo]())
}
