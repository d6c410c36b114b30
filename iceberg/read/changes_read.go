package read

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// rowIDColumn is iceberg-go's row-lineage metadata column: first_row_id plus the row's
// position in its data file for rows without a stored id. Changelog reads use it to
// tell which rows of a data file a snapshot's deletes removed.
const rowIDColumn = "_row_id"

// ChangeBatch is one Arrow record batch of changed rows on its way from the read DoFn
// to the conversion to rows: every row of it has the same change type and commit.
type ChangeBatch struct {
	Batch      Batch
	ChangeType string
	SnapshotID int64
	Sequence   int64
}

// changesReadFn reads change tasks: the live rows of an added data file (INSERT), of
// a removed one (DELETE), or the rows of a data file live before and not after a
// snapshot's new deletes (DELETE), each with the filter and projection applied.
type changesReadFn struct {
	// Spec is the changelog read, resolved at construction.
	Spec ChangesSpec
}

func (fn *changesReadFn) ProcessElement(ctx context.Context, ct ChangeTask, emit func(ChangeBatch)) error {
	if err := fn.process(ctx, ct, emit); err != nil {
		return config.OpErrorf("read changes", fn.Spec.Table, "snapshot %d: %w", ct.SnapshotID, err)
	}
	filesRead.Inc(ctx, 1)
	return nil
}

func (fn *changesReadFn) process(ctx context.Context, ct ChangeTask, emit func(ChangeBatch)) error {
	send := func(sc *ibg.Schema, kind string, rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		emit(ChangeBatch{Batch: newBatch(sc, rec), ChangeType: kind, SnapshotID: ct.SnapshotID, Sequence: ct.Sequence})
		rowsEmitted.Inc(ctx, rec.NumRows())
		return nil
	}
	switch ct.Kind {
	case changeAdded:
		return fn.readAll(ctx, ct.After, func(sc *ibg.Schema, rec arrow.RecordBatch) error { return send(sc, changeInsert, rec) })
	case changeRemoved:
		return fn.readAll(ctx, ct.Before, func(sc *ibg.Schema, rec arrow.RecordBatch) error { return send(sc, changeDelete, rec) })
	case changeRowsDeleted:
		return fn.readDeleted(ctx, ct, func(sc *ibg.Schema, rec arrow.RecordBatch) error { return send(sc, changeDelete, rec) })
	}
	return fmt.Errorf("unknown change task kind %q", ct.Kind)
}

// scanFor returns a scan of tbl reading cols (nil: every column) with the spec's
// filter, and the task of t.
func (fn *changesReadFn) scanFor(ctx context.Context, t Task, cols []string) (*table.Table, *table.Scan, table.FileScanTask, error) {
	tbl, err := loadAt(ctx, fn.Spec.Spec, t.MetadataLocation)
	if err != nil {
		return nil, nil, table.FileScanTask{}, err
	}
	filter, err := fn.Spec.FilterExpr(tbl.Schema())
	if err != nil {
		return nil, nil, table.FileScanTask{}, err
	}
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithCaseSensitive(true)}
	if len(cols) > 0 {
		opts = append(opts, table.WithSelectedFields(cols...))
	}
	ft, err := t.decode(tbl.Metadata(), 0, int64(len(t.Units)))
	if err != nil {
		return nil, nil, table.FileScanTask{}, err
	}
	return tbl, tbl.Scan(opts...), ft, nil
}

// readAll reads the live rows of one whole task.
func (fn *changesReadFn) readAll(ctx context.Context, t Task, each func(*ibg.Schema, arrow.RecordBatch) error) error {
	tbl, scan, ft, err := fn.scanFor(ctx, t, fn.Spec.ReadColumns)
	if err != nil {
		return err
	}
	defer scan.Close()
	return readTask(ctx, scan, ft, func(rec arrow.RecordBatch) error { return each(tbl.Schema(), rec) })
}

// readDeleted reads the rows of a data file live before the snapshot (ct.Before) and
// not after it (ct.After). Rows are matched by _row_id, which is stable for a row of
// a data file whatever deletes apply: the stored id of a row rewritten with its
// lineage, else first_row_id plus the row's position. Files without a first_row_id
// (written before the table was upgraded to format version 3) get 0, so the id is the
// position.
func (fn *changesReadFn) readDeleted(ctx context.Context, ct ChangeTask, each func(*ibg.Schema, arrow.RecordBatch) error) error {
	tbl, err := loadAt(ctx, fn.Spec.Spec, ct.Before.MetadataLocation)
	if err != nil {
		return err
	}
	cols := fn.Spec.ReadColumns
	if len(cols) == 0 {
		for _, f := range tbl.Schema().Fields() {
			cols = append(cols, f.Name)
		}
	}
	// iceberg-go cannot read _row_id alone: read one narrow column along.
	_, afterScan, after, err := fn.scanFor(ctx, ct.After, []string{cols[0], rowIDColumn})
	if err != nil {
		return err
	}
	defer afterScan.Close()
	withRowID(&after)
	live := dv.NewRoaringPositionBitmap()
	err = readTask(ctx, afterScan, after, func(rec arrow.RecordBatch) error {
		ids, err := rowIDs(rec)
		if err != nil {
			return err
		}
		for i := range ids.Len() {
			live.Set(uint64(ids.Value(i)))
		}
		return nil
	})
	if err != nil {
		return err
	}

	_, beforeScan, before, err := fn.scanFor(ctx, ct.Before, append(append([]string(nil), cols...), rowIDColumn))
	if err != nil {
		return err
	}
	defer beforeScan.Close()
	withRowID(&before)
	return readTask(ctx, beforeScan, before, func(rec arrow.RecordBatch) error {
		gone, err := deletedRows(ctx, rec, live)
		if err != nil || gone == nil {
			return err
		}
		defer gone.Release()
		return each(tbl.Schema(), gone)
	})
}

// withRowID gives a task without a first_row_id the base 0, so _row_id is produced.
func withRowID(t *table.FileScanTask) {
	if t.FirstRowID == nil {
		zero := int64(0)
		t.FirstRowID = &zero
	}
}

// rowIDs returns the _row_id column of rec.
func rowIDs(rec arrow.RecordBatch) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices(rowIDColumn)
	if len(idx) != 1 {
		return nil, fmt.Errorf("the scan returned no %s column", rowIDColumn)
	}
	ids, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("column %s is %s, want int64", rowIDColumn, rec.Column(idx[0]).DataType())
	}
	if ids.NullN() > 0 {
		return nil, fmt.Errorf("column %s has nulls", rowIDColumn)
	}
	return ids, nil
}

// deletedRows returns the rows of rec whose _row_id is not in live, without the
// _row_id column, or nil when there are none.
func deletedRows(ctx context.Context, rec arrow.RecordBatch, live *dv.RoaringPositionBitmap) (arrow.RecordBatch, error) {
	ids, err := rowIDs(rec)
	if err != nil {
		return nil, err
	}
	mb := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer mb.Release()
	n := 0
	for i := range ids.Len() {
		gone := !live.Contains(uint64(ids.Value(i)))
		if gone {
			n++
		}
		mb.Append(gone)
	}
	if n == 0 {
		return nil, nil
	}
	mask := mb.NewArray()
	defer mask.Release()
	kept, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select deleted rows: %w", err)
	}
	defer kept.Release()
	idx := kept.Schema().FieldIndices(rowIDColumn)[0]
	fields := append([]arrow.Field(nil), kept.Schema().Fields()...)
	cols := append([]arrow.Array(nil), kept.Columns()...)
	fields = append(fields[:idx], fields[idx+1:]...)
	cols = append(cols[:idx], cols[idx+1:]...)
	md := kept.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, kept.NumRows()), nil
}

// readTask reads one task with scan and passes each record batch on (released after).
func readTask(ctx context.Context, scan *table.Scan, ft table.FileScanTask, each func(arrow.RecordBatch) error) error {
	_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{ft})
	if err != nil {
		return err
	}
	for rec, err := range records {
		if err != nil {
			return fmt.Errorf("data file %s: %w", ft.File.FilePath(), err)
		}
		err = each(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("data file %s: %w", ft.File.FilePath(), err)
		}
	}
	return nil
}
