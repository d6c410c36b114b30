package read

import (
	"fmt"

	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
)

// Task is one planned file scan task on its way from the planning step to the read
// DoFn. It names the metadata file it was planned against, so every reader sees the
// same snapshot, schema and partition specs however the table moves on meanwhile.
type Task struct {
	// MetadataLocation is the table metadata file the task was planned against.
	MetadataLocation string
	// SpecID is the partition spec of the task's files.
	SpecID int
	// Encoded is the task encoded by iceberg-go's codec.EncodeFileScanTask.
	Encoded []byte
	// Path and Size describe the data file, for logs and sizing.
	Path string
	Size int64
	// Records is the data file's record count.
	Records int64
	// Units are the byte ranges the task can be split at: unit i covers
	// [Units[i], Units[i+1]) and the last unit ends at Start+Length of the task.
	// A task that cannot be split has one unit.
	Units []int64
	// End is the end offset of the task's byte range.
	End int64
}

// newTask encodes a planned task.
func newTask(meta table.Metadata, metaLoc string, t table.FileScanTask) (Task, error) {
	specID := int(t.File.SpecID())
	spec := meta.PartitionSpecByID(specID)
	if spec == nil {
		return Task{}, fmt.Errorf("data file %s: unknown partition spec %d", t.File.FilePath(), specID)
	}
	enc, err := codec.EncodeFileScanTask(t, *spec, meta.CurrentSchema(), meta.Version())
	if err != nil {
		return Task{}, fmt.Errorf("data file %s: %w", t.File.FilePath(), err)
	}
	start, length := t.Start, t.Length
	if length == 0 {
		length = t.File.FileSizeBytes()
	}
	return Task{
		MetadataLocation: metaLoc,
		SpecID:           specID,
		Encoded:          enc,
		Path:             t.File.FilePath(),
		Size:             length,
		Records:          t.File.Count(),
		Units:            splitUnits(start, start+length, t.File.SplitOffsets()),
		End:              start + length,
	}, nil
}

// splitUnits returns the start offsets of the row-group units inside [start, end):
// start itself, then each split offset (a row group's first byte) after the range's
// first row group. Units tile the range, so reading every unit reads every row group
// exactly once (iceberg-go selects a row group by whether its offset falls in the task
// range), and no unit is empty.
func splitUnits(start, end int64, offsets []int64) []int64 {
	units := []int64{start}
	prev := start
	first := true
	for _, o := range offsets {
		if o < start || o >= end {
			continue
		}
		if first { // the range's first row group starts the first unit
			first = false
			continue
		}
		if o > prev {
			units = append(units, o)
			prev = o
		}
	}
	return units
}

// decode returns the iceberg-go task for units [from, to) of t.
func (t Task) decode(meta table.Metadata, from, to int64) (table.FileScanTask, error) {
	spec := meta.PartitionSpecByID(t.SpecID)
	if spec == nil {
		return table.FileScanTask{}, fmt.Errorf("data file %s: unknown partition spec %d", t.Path, t.SpecID)
	}
	ft, err := codec.DecodeFileScanTask(t.Encoded, *spec, meta.CurrentSchema(), meta.Version())
	if err != nil {
		return table.FileScanTask{}, fmt.Errorf("data file %s: decode scan task: %w", t.Path, err)
	}
	if from == 0 && to == int64(len(t.Units)) {
		return ft, nil // the whole planned task
	}
	ft.Start = t.Units[from]
	end := t.End
	if to < int64(len(t.Units)) {
		end = t.Units[to]
	}
	ft.Length = end - ft.Start
	return ft, nil
}
