package write

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/late"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

// The append write of Arrow record batches (iceberg.WriteBatches): batchWriteFn
// casts each batch to its table's schema (columns matched by name) and hands it to
// the bundle's datafile.Writer of its window, with no conversion to rows; the files go to
// the same commit step as Append's.

var recordBatchType = reflect.TypeFor[arrow.RecordBatch]()

// AppendBatches adds the append write of batches (a PCollection of a type that
// implements arrow.RecordBatch, such as iceberg.RecordBatch) to s. spec must name
// one table (no template) and no projection, distribution or merge-on-read; the
// caller checks that. Each bundle writes its batches to Parquet files per window,
// committed as Append's files are. It returns the PCollection of SnapshotInfo and the
// PCollection of DeadLetter (batches that cannot be written, one per batch).
func AppendBatches(s beam.Scope, spec Spec, batches beam.PCollection) (snapshots, dead beam.PCollection, err error) {
	s = s.Scope("iceberg.AppendBatches")
	if _, err := spec.runtime(); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if t := batches.Type().Type(); !t.Implements(recordBatchType) {
		return beam.PCollection{}, beam.PCollection{}, config.OpErrorf("write", spec.Table,
			"%w: batches must implement arrow.RecordBatch, got %s", config.ErrInvalidConfig, batches.Type())
	}
	if err := checkWindows(spec.Table, batches); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	outs, err := beam.TryParDo(s.Scope("WriteFiles"), &batchWriteFn{Spec: spec}, batches)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	snapshots, err = commitFiles(s, spec, rewindow(s, batches, outs[0]))
	return snapshots, outs[1], err
}

// batchWriteFn writes the record batches of a bundle to data files of spec's table,
// one datafile.Writer per window, and emits the encoded files keyed by table at the end of
// the bundle. A batch that cannot be written goes to the dead letter output whole.
type batchWriteFn struct {
	Spec Spec

	rt      *runtime
	gate    *late.Gate
	tbl     *table.Table
	casts   map[string]*batchCast // by the batch schema's fingerprint
	writers map[writerKey]*datafile.Writer
}

// writerKey is a datafile.Writer's window end and the fingerprint of its batches' schema
// (batches cast to one table schema have one Arrow schema, but a writer never gets
// batches of another).
type writerKey struct {
	win    int64
	schema string
}

// batchCast is how batches of one Arrow schema become batches of the table's schema:
// fileSchema, their columns under the table's field ids, or reject, why they cannot.
type batchCast struct {
	fileSchema *ibg.Schema
	reject     error
}

func (f *batchWriteFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	f.gate = late.NewGate(f.Spec.SinkID, f.Spec.RunID, f.Spec.Windowed, f.Spec.LatenessMs)
	return err
}

// StartBundle resets the writers. Its emitters only satisfy the SDK's rule that
// lifecycle methods declare the same outputs as ProcessElement.
func (f *batchWriteFn) StartBundle(ctx context.Context, _ func(beam.EventTime, string, Part), _ func(DeadLetter)) {
	f.abort()
	f.writers = map[writerKey]*datafile.Writer{}
	f.tbl = nil // loaded again (from the cache) once per bundle
	f.casts = map[string]*batchCast{}
}

// abort stops every writer of the bundle.
func (f *batchWriteFn) abort() {
	for _, w := range f.writers {
		w.Close()
	}
	f.writers = nil
}

func (f *batchWriteFn) ProcessElement(ctx context.Context, w beam.Window, v beam.T, _ func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	b, _ := v.(arrow.RecordBatch)
	if b == nil || b.NumRows() == 0 {
		return nil
	}
	err := f.process(ctx, w, b, dead)
	if err != nil {
		f.abort()
	}
	return err
}

func (f *batchWriteFn) process(ctx context.Context, w beam.Window, b arrow.RecordBatch, dead func(DeadLetter)) error {
	reject := func(reason string) {
		dead(DeadLetter{Row: describeBatch(b), Table: f.Spec.Table, Reason: reason})
	}
	if f.tbl == nil {
		tbl, rejected, err := f.table(ctx, b.Schema())
		if err != nil || rejected != nil {
			if rejected != nil {
				reject(rejected.Error())
			}
			return err
		}
		f.tbl = tbl
	}
	if f.Spec.Windowed {
		cat, err := f.Spec.catalog(ctx, f.rt)
		if err != nil {
			return config.WrapOp("write", f.Spec.Table, err)
		}
		v, reason, _, err := f.gate.Check(ctx, cat, f.Spec.Table, f.tbl.Identifier(), w)
		if err != nil {
			return err
		}
		switch v {
		case late.TooLate:
			LateDead.Inc(ctx, b.NumRows())
			reject(reason)
			return nil
		case late.Replayed:
			reject(fmt.Sprintf("replayed: an earlier run of sink %s committed this batch's window to %s, and a batch's rows cannot be told apart from those it committed", f.Spec.SinkID, f.Spec.Table))
			return nil
		}
	}
	fp := b.Schema().Fingerprint()
	c := f.casts[fp]
	if c == nil {
		c = newBatchCast(f.tbl.Schema(), b.Schema())
		f.casts[fp] = c
	}
	if c.reject != nil {
		reject(c.reject.Error())
		return nil
	}
	if err := checkRequired(f.tbl.Schema(), b); err != nil {
		reject(err.Error())
		return nil
	}
	out, err := table.ToRequestedSchema(ctx, f.tbl.Schema(), c.fileSchema, b, table.SchemaOptions{
		IncludeFieldIDs: true, FormatVersion: f.tbl.Metadata().Version(), TableProperties: f.tbl.Properties()})
	if err != nil {
		reject(fmt.Sprintf("%v: %v", schema.ErrSchemaMismatch, err))
		return nil
	}
	wk := writerKey{win: w.MaxTimestamp().Milliseconds(), schema: out.Schema().Fingerprint()}
	fw := f.writers[wk]
	if fw == nil {
		if fw, err = datafile.NewWriter(ctx, f.tbl, out.Schema(), f.Spec.fileOptions(f.rt)); err != nil {
			out.Release()
			return err
		}
		f.writers[wk] = fw
	}
	return fw.Write(out)
}

// table returns the destination table, creating it from the batch schema sc when
// missing. A non-nil reject is a reason to dead-letter the batch (a schema with no
// Iceberg equivalent); err fails the bundle (see createTable).
func (f *batchWriteFn) table(ctx context.Context, sc *arrow.Schema) (tbl *table.Table, reject, err error) {
	dest := f.Spec.Table
	tbl, err = catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, dest, f.rt.refresh)
	if err == nil || !errors.Is(err, config.ErrTableNotFound) {
		return tbl, nil, config.WrapOp("write", dest, err)
	}
	ident, err := parseIdent(dest)
	if err != nil {
		return nil, nil, config.WrapOp("write", dest, err)
	}
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(withoutFieldIDs(sc), false)
	if err != nil {
		return nil, fmt.Errorf("cannot create table %s: %w", dest, err), nil
	}
	tbl, err = createTable(ctx, &f.Spec, f.rt, dest, ident, isc)
	return tbl, nil, err
}

// FinishBundle closes the writers and emits the encoded files of each window,
// timestamped at the window's end.
func (f *batchWriteFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, Part), _ func(DeadLetter)) error {
	keys := slices.SortedFunc(maps.Keys(f.writers), func(a, b writerKey) int {
		return cmp.Or(cmp.Compare(a.win, b.win), strings.Compare(a.schema, b.schema))
	})
	for _, k := range keys {
		files, err := f.writers[k].Close()
		delete(f.writers, k)
		if err != nil {
			f.abort()
			return err
		}
		enc, err := datafile.Encode(f.tbl.Metadata(), files)
		if err != nil {
			f.abort()
			return config.WrapOp("write", f.Spec.Table, err)
		}
		if len(enc) > 0 {
			emit(mtime.FromMilliseconds(k.win), f.Spec.Table, Part{Files: enc})
		}
	}
	return nil
}

// newBatchCast matches the columns of batch schema sc to the table schema tsc by
// name (any field ids sc carries are ignored: they may be another table's) and
// checks that each column can be written to its table column.
func newBatchCast(tsc *ibg.Schema, sc *arrow.Schema) *batchCast {
	for _, f := range sc.Fields() {
		if _, ok := tsc.FindFieldByName(f.Name); !ok {
			return &batchCast{reject: fmt.Errorf("%w: column %q is not in the table", schema.ErrSchemaMismatch, f.Name)}
		}
	}
	fileSchema, err := table.ArrowSchemaToIcebergWithOptions(withoutFieldIDs(sc), table.ArrowToIcebergOptions{
		NameMapping: tsc.NameMapping(), TableSchema: tsc})
	if err == nil {
		err = schema.CheckSchema(tsc, fileSchema)
	}
	if err == nil {
		err = checkOptional(tsc.Fields(), sc.Fields())
	}
	if err != nil {
		if !errors.Is(err, schema.ErrSchemaMismatch) {
			err = fmt.Errorf("%w: %w", schema.ErrSchemaMismatch, err)
		}
		return &batchCast{reject: err}
	}
	return &batchCast{fileSchema: fileSchema}
}

// checkOptional rejects a column of batch fields whose type differs from its table
// column's only in being a timestamp with or without zone: CheckSchema lets rows
// through there (a Go time value has no zone), a batch column says which it is.
func checkOptional(tbl []ibg.NestedField, fields []arrow.Field) error {
	for _, f := range fields {
		for _, t := range tbl {
			if t.Name != f.Name {
				continue
			}
			ts, ok := f.Type.(*arrow.TimestampType)
			if !ok {
				continue
			}
			zoned := ts.TimeZone != ""
			switch t.Type.(type) {
			case ibg.TimestampTzType, ibg.TimestampTzNsType:
				if !zoned {
					return fmt.Errorf("%w: column %q is %s in the table, timestamp without zone in the batch", schema.ErrSchemaMismatch, f.Name, t.Type)
				}
			case ibg.TimestampType, ibg.TimestampNsType:
				if zoned {
					return fmt.Errorf("%w: column %q is %s in the table, timestamp with zone in the batch", schema.ErrSchemaMismatch, f.Name, t.Type)
				}
			}
		}
	}
	return nil
}

// checkRequired returns an error naming the first required top-level column of tsc
// that holds a null in b.
func checkRequired(tsc *ibg.Schema, b arrow.RecordBatch) error {
	for _, t := range tsc.Fields() {
		if !t.Required {
			continue
		}
		for i, f := range b.Schema().Fields() {
			if f.Name == t.Name && b.Column(i).NullN() > 0 {
				return fmt.Errorf("%w: column %q is required and %d rows of the batch are null", schema.ErrSchemaMismatch, t.Name, b.Column(i).NullN())
			}
		}
	}
	return nil
}

// withoutFieldIDs returns sc without field-id metadata at any depth.
func withoutFieldIDs(sc *arrow.Schema) *arrow.Schema {
	fs := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		fs[i] = stripField(f)
	}
	md := sc.Metadata()
	return arrow.NewSchema(fs, &md)
}

func stripField(f arrow.Field) arrow.Field {
	f.Metadata = arrow.Metadata{}
	switch t := f.Type.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, c := range t.Fields() {
			fs[i] = stripField(c)
		}
		f.Type = arrow.StructOf(fs...)
	case *arrow.MapType:
		m := arrow.MapOfWithMetadata(stripField(t.KeyField()).Type, arrow.Metadata{}, stripField(t.ItemField()).Type, arrow.Metadata{})
		m.SetItemNullable(t.ItemField().Nullable)
		f.Type = m
	case *arrow.ListType:
		f.Type = arrow.ListOfField(stripField(t.ElemField()))
	case *arrow.LargeListType:
		f.Type = arrow.LargeListOfField(stripField(t.ElemField()))
	}
	return f
}

// describeBatch is a dead letter's Row for a whole batch: its size and schema.
func describeBatch(b arrow.RecordBatch) string {
	names := make([]string, 0, b.NumCols())
	for _, f := range b.Schema().Fields() {
		names = append(names, f.Name+" "+f.Type.String())
	}
	return fmt.Sprintf("record batch of %d rows (%s)", b.NumRows(), strings.Join(names, ", "))
}

func init() {
	beam.RegisterType(reflect.TypeFor[batchWriteFn]())
}
