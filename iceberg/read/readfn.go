package read

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder" // Row's Beam coder
)

// readBase holds the read DoFn's state and the loop that claims row-group units and
// reads each through iceberg-go's ReadTasks, which applies deletion vectors, position
// and equality deletes and the residual filter.
type readBase struct {
	spec Spec
}

func (fn *readBase) setup(spec Spec) {
	fn.spec = spec
}

// CreateInitialRestriction covers every row-group unit of the task.
func (fn *readBase) CreateInitialRestriction(t Task) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: int64(len(t.Units))}
}

// SplitRestriction splits a task into one restriction per row-group unit, so a large
// file is read in parallel from the start; the runner may split further.
func (fn *readBase) SplitRestriction(_ Task, rest offsetrange.Restriction) []offsetrange.Restriction {
	return rest.EvenSplits(rest.End - rest.Start)
}

// RestrictionSize estimates the bytes of the units in rest.
func (fn *readBase) RestrictionSize(t Task, rest offsetrange.Restriction) float64 {
	if len(t.Units) == 0 {
		return 0
	}
	return float64(t.Size) * float64(rest.End-rest.Start) / float64(len(t.Units))
}

// CreateTracker returns a thread-safe offset range tracker (dynamic splitting works).
func (fn *readBase) CreateTracker(rest offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(rest))
}

// process reads the claimed units one at a time and passes each record batch on.
func (fn *readBase) process(ctx context.Context, rt *sdf.LockRTracker, t Task, each func(*ibg.Schema, arrow.RecordBatch) error) error {
	tbl, err := loadAt(ctx, fn.spec, t.MetadataLocation)
	if err != nil {
		return err
	}
	scan, err := fn.spec.NewScan(tbl)
	if err != nil {
		return err
	}
	defer scan.Close()

	rest := rt.GetRestriction().(offsetrange.Restriction)
	if rest.Start == 0 {
		filesRead.Inc(ctx, 1)
	}
	for i := rest.Start; rt.TryClaim(i); i++ {
		ft, err := t.decode(tbl.Metadata(), i, i+1)
		if err != nil {
			return config.WrapOp("read", fn.spec.Table, err)
		}
		unknown, _ := unknownColumns(tbl.Schema(), fn.spec.Filter, fn.spec.Columns)
		if err := fn.readUnit(ctx, scan, ft, func(rec arrow.RecordBatch) error {
			if out := withNullColumns(tbl.Schema(), unknown, rec); out != rec {
				defer out.Release()
				rec = out
			}
			return each(tbl.Schema(), rec)
		}); err != nil {
			return config.OpErrorf("read", fn.spec.Table, "data file %s: %w", t.Path, err)
		}
		rowGroupsRead.Inc(ctx, 1)
		bytesRead.Inc(ctx, unitBytes(t, ft))
	}
	return nil
}

func unitBytes(t Task, ft table.FileScanTask) int64 {
	if ft.Length > 0 {
		return ft.Length
	}
	return t.Size
}

func (fn *readBase) readUnit(ctx context.Context, scan *table.Scan, ft table.FileScanTask, each func(arrow.RecordBatch) error) error {
	_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{ft})
	if err != nil {
		return err
	}
	for rec, err := range records {
		if err != nil {
			return err
		}
		err = each(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// readFn reads tasks and emits their record batches as Batch elements, which the
// DoFns below, fused with it, turn into rows or user structs. The splittable DoFn
// methods (restriction, split, size, tracker) are readBase's.
type readFn struct {
	// Spec is the scan, resolved at construction.
	Spec Spec

	readBase
}

// Setup prepares the DoFn's state.
func (fn *readFn) Setup() {
	fn.setup(fn.Spec)
}

// ProcessElement reads the claimed row groups of one task.
func (fn *readFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, t Task, emit func(Batch)) error {
	return fn.process(ctx, rt, t, func(sc *ibg.Schema, rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		emit(newBatch(sc, rec))
		rowsEmitted.Inc(ctx, rec.NumRows())
		return nil
	})
}

// readRecordsFn is readFn for ReadBatches: it emits the record batches themselves.
type readRecordsFn struct {
	// Spec is the scan, resolved at construction.
	Spec Spec

	readBase
}

// Setup prepares the DoFn's state.
func (fn *readRecordsFn) Setup() {
	fn.setup(fn.Spec)
}

// ProcessElement reads the claimed row groups of one task.
func (fn *readRecordsFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, t Task, emit func(RecordBatch)) error {
	return fn.process(ctx, rt, t, func(_ *ibg.Schema, rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		rec.Retain() // the element's own reference, never released (see RecordBatch)
		emit(RecordBatch{rec})
		rowsEmitted.Inc(ctx, rec.NumRows())
		return nil
	})
}

// toRowsFn turns batches into row.Row values.
type toRowsFn struct {
	conv *row.ArrowReader
	key  *ibg.Schema // the schema conv was built for
	rows []row.Row
}

// ProcessElement emits the rows of one batch.
func (fn *toRowsFn) ProcessElement(b Batch, emit func(row.Row)) error {
	// The rows are views of rec (nothing is converted until a consumer reads a value);
	// rec's memory is freed by the garbage collector once no row refers to it.
	rec := b.Rec
	if fn.conv == nil || fn.key != b.Schema || !fn.conv.ArrowSchema().Equal(rec.Schema()) {
		conv, err := row.NewArrowReader(rec.Schema(), b.Schema)
		if err != nil {
			return err
		}
		fn.conv, fn.key = conv, b.Schema
	}
	var err error
	fn.rows, err = fn.conv.AppendViews(rec, fn.rows[:0])
	if err != nil {
		return err
	}
	for _, r := range fn.rows {
		emit(r)
	}
	return nil
}

// toStructsFn turns batches into values of a user struct type.
type toStructsFn struct {
	// Type is the user struct type emitted.
	Type beam.EncodedType

	conv *row.StructReader
	as   *arrow.Schema
	vals []any
}

// ProcessElement emits the structs of one batch.
func (fn *toStructsFn) ProcessElement(b Batch, emit func(beam.X)) error {
	rec := b.Rec
	if fn.conv == nil || !fn.as.Equal(rec.Schema()) {
		conv, err := row.NewStructReader(fn.Type.T, rec.Schema(), b.Schema)
		if err != nil {
			return config.WrapOp("read", "", err)
		}
		fn.conv, fn.as = conv, rec.Schema()
	}
	var err error
	fn.vals, err = fn.conv.AppendValues(rec, fn.vals[:0])
	if err != nil {
		return err
	}
	for _, v := range fn.vals {
		emit(v)
	}
	return nil
}
