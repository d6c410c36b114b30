package write

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// Tuning of the per-bundle writers.
const (
	// batchRows is the number of rows per Arrow batch handed to the Parquet writer.
	batchRows = 64 * 1024
	// flushRows is the number of buffered rows of one destination after which the
	// writer writes files before the bundle ends.
	flushRows = 1 << 20
)

// Spec is the serialized configuration of the write's DoFns. Maps travel as JSON
// strings (DoFn fields are JSON-encoded by Beam and must not be map-typed).
type Spec struct {
	// Table is the table name or template.
	Table string
	// CatalogName names the catalog.
	CatalogName string
	// CatalogProps is the catalog properties as a JSON object. It may hold secrets:
	// it is never logged.
	CatalogProps string
	// SinkID is the exactly-once sink id.
	SinkID string
	// PartitionFields, SortFields: of tables the write creates.
	PartitionFields, SortFields []string
	// TableProps, WriteProps, SnapshotProps are JSON objects.
	TableProps, WriteProps, SnapshotProps string
	// TableCacheRefreshSeconds is the table metadata cache age (0: default 60 s).
	TableCacheRefreshSeconds int
}

// NewSpec builds the Spec of cfg (which must be valid) for sinkID.
func NewSpec(cfg config.WriteConfig, sinkID string) (Spec, error) {
	enc := func(m map[string]string) (string, error) {
		if len(m) == 0 {
			return "", nil
		}
		b, err := json.Marshal(m)
		return string(b), err
	}
	s := Spec{Table: cfg.Table, CatalogName: cfg.CatalogName, SinkID: sinkID,
		PartitionFields: slices.Clone(cfg.PartitionFields), SortFields: slices.Clone(cfg.SortFields)}
	var err error
	var errs [4]error
	s.CatalogProps, errs[0] = enc(cfg.CatalogProperties)
	s.TableProps, errs[1] = enc(cfg.TableProperties)
	s.WriteProps, errs[2] = enc(cfg.WriteProperties)
	s.SnapshotProps, errs[3] = enc(cfg.SnapshotProperties)
	if err = errors.Join(errs[:]...); err != nil {
		return Spec{}, err
	}
	if cfg.TableCacheRefreshIntervalSeconds != nil {
		s.TableCacheRefreshSeconds = *cfg.TableCacheRefreshIntervalSeconds
	}
	return s, nil
}

// runtime is what a DoFn builds from its Spec in Setup.
type runtime struct {
	tpl           Template
	catProps      map[string]string
	tableProps    map[string]string
	writeProps    map[string]string
	snapshotProps map[string]string
	create        CreateOptions
	refresh       time.Duration
}

func (s Spec) runtime() (*runtime, error) {
	rt := &runtime{refresh: 60 * time.Second}
	if s.TableCacheRefreshSeconds > 0 {
		rt.refresh = time.Duration(s.TableCacheRefreshSeconds) * time.Second
	}
	var err error
	if rt.tpl, err = ParseTemplate(s.Table); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		src string
		dst *map[string]string
	}{{s.CatalogProps, &rt.catProps}, {s.TableProps, &rt.tableProps}, {s.WriteProps, &rt.writeProps}, {s.SnapshotProps, &rt.snapshotProps}} {
		if p.src == "" {
			continue
		}
		if err := json.Unmarshal([]byte(p.src), p.dst); err != nil {
			return nil, fmt.Errorf("iceberg: write %s: bad serialized properties: %w", s.Table, err)
		}
	}
	if rt.create.PartitionFields, err = config.ParsePartitionFields(s.PartitionFields); err != nil {
		return nil, err
	}
	if rt.create.SortFields, err = config.ParseSortFields(s.SortFields); err != nil {
		return nil, err
	}
	rt.create.Properties = rt.tableProps
	return rt, nil
}

func (s Spec) catalog(ctx context.Context, rt *runtime) (catalog.Catalog, error) {
	return catalogs.Get(ctx, s.CatalogName, rt.catProps)
}

// writeFn routes rows to their destination tables, buffers them per destination and
// window as Arrow batches, writes Parquet data files without committing, and emits the
// encoded files keyed by table at the end of the bundle. Rows it cannot write go to the
// dead letter output.
type writeFn struct {
	Spec Spec

	rt      *runtime
	tables  map[string]*destTable
	buffers map[bufKey]*destBuffer
}

type destTable struct {
	tbl *table.Table
}

type bufKey struct {
	table string
	win   int64 // window end, ms
}

type destBuffer struct {
	tbl     *table.Table
	builder *row.BatchBuilder
	batches []arrow.RecordBatch
	rows    int
	files   []EncodedDataFile
}

func (f *writeFn) Setup(ctx context.Context) error {
	rt, err := f.Spec.runtime()
	if err != nil {
		return err
	}
	f.rt = rt
	f.tables = map[string]*destTable{}
	return nil
}

// StartBundle resets the buffers. Its emitters only satisfy the SDK's rule that
// lifecycle methods declare the same outputs as ProcessElement.
func (f *writeFn) StartBundle(ctx context.Context, _ func(beam.EventTime, string, []byte), _ func(DeadLetter)) {
	f.buffers = map[bufKey]*destBuffer{}
}

func (f *writeFn) ProcessElement(ctx context.Context, w beam.Window, r row.Row, _ func(beam.EventTime, string, []byte), dead func(DeadLetter)) error {
	dest, err := f.rt.tpl.Render(RowGetter(r))
	if err != nil {
		dead(DeadLetter{Row: r.String(), Reason: err.Error()})
		return nil
	}
	dt, reject, err := f.table(ctx, dest, r)
	if err != nil {
		return err
	}
	if reject != nil {
		dead(DeadLetter{Row: r.String(), Table: dest, Reason: reject.Error()})
		return nil
	}
	key := bufKey{table: dest, win: w.MaxTimestamp().Milliseconds()}
	buf := f.buffers[key]
	if buf == nil {
		bb, err := row.NewBatchBuilder(dt.tbl.Schema(), memory.DefaultAllocator)
		if err != nil {
			return fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
		buf = &destBuffer{tbl: dt.tbl, builder: bb}
		f.buffers[key] = buf
	}
	if err := buf.builder.AppendRow(r); err != nil {
		dead(DeadLetter{Row: r.String(), Table: dest, Reason: err.Error()})
		return nil
	}
	buf.rows++
	if buf.builder.Len() >= batchRows {
		buf.batches = append(buf.batches, buf.builder.NewBatch())
	}
	if buf.rows >= flushRows {
		return f.flush(ctx, buf)
	}
	return nil
}

// table returns the destination table, creating it from r's schema when missing. A
// non-nil reject is a reason to dead-letter the row (its schema cannot create the table);
// err is a failure of the catalog (the bundle is retried).
func (f *writeFn) table(ctx context.Context, dest string, r row.Row) (dt *destTable, reject, err error) {
	if dt := f.tables[dest]; dt != nil {
		return dt, nil, nil
	}
	ident, perr := parseIdent(dest)
	if perr != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDestination, perr), nil
	}
	tbl, err := catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, dest, f.rt.refresh)
	if err != nil {
		if !errors.Is(err, config.ErrTableNotFound) {
			return nil, nil, fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
		sc, ierr := row.InferSchema(r)
		if ierr != nil {
			return nil, fmt.Errorf("cannot create table %s: %w", dest, ierr), nil
		}
		cat, err := f.Spec.catalog(ctx, f.rt)
		if err != nil {
			return nil, nil, fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
		_, created, err := EnsureTable(ctx, cat, ident, sc, f.rt.create)
		if err != nil {
			if errors.Is(err, config.ErrInvalidConfig) {
				return nil, err, nil
			}
			return nil, nil, err
		}
		if created {
			log.Infof(ctx, "iceberg: write %s: created table", dest)
		}
		catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
		if tbl, err = catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, dest, f.rt.refresh); err != nil {
			return nil, nil, fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
	}
	dt = &destTable{tbl: tbl}
	f.tables[dest] = dt
	return dt, nil, nil
}

// flush writes buf's batches to data files and keeps the encoded files.
func (f *writeFn) flush(ctx context.Context, buf *destBuffer) error {
	if buf.builder.Len() > 0 {
		buf.batches = append(buf.batches, buf.builder.NewBatch())
	}
	if len(buf.batches) == 0 {
		return nil
	}
	batches := buf.batches
	buf.batches, buf.rows = nil, 0
	files, err := WriteDataFiles(ctx, buf.tbl, buf.builder.ArrowSchema(), batches, FileOptions{WriteProperties: f.rt.writeProps})
	if err != nil {
		return err
	}
	enc, err := EncodeDataFiles(buf.tbl.Metadata(), files)
	if err != nil {
		return fmt.Errorf("iceberg: write %s: %w", buf.tbl.Identifier(), err)
	}
	buf.files = append(buf.files, enc...)
	return nil
}

// FinishBundle writes what is buffered and emits the encoded files of each table and
// window, timestamped at the window's end so that a re-windowing downstream puts them
// back into their window.
func (f *writeFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, []byte), _ func(DeadLetter)) error {
	keys := slices.SortedFunc(maps.Keys(f.buffers), func(a, b bufKey) int {
		if a.table != b.table {
			if a.table < b.table {
				return -1
			}
			return 1
		}
		return int(a.win - b.win)
	})
	for _, k := range keys {
		buf := f.buffers[k]
		err := f.flush(ctx, buf)
		buf.builder.Release()
		if err != nil {
			return err
		}
		if len(buf.files) == 0 {
			continue
		}
		b, err := json.Marshal(buf.files)
		if err != nil {
			return err
		}
		emit(mtime.FromMilliseconds(k.win), k.table, b)
	}
	f.buffers = nil
	return nil
}

// commitFn commits each table's files of one window through the Committer.
type commitFn struct {
	Spec Spec

	rt *runtime
}

func (f *commitFn) Setup(ctx context.Context) error {
	rt, err := f.Spec.runtime()
	if err != nil {
		return err
	}
	f.rt = rt
	return nil
}

func (f *commitFn) ProcessElement(ctx context.Context, w beam.Window, dest string, groups func(*[]byte) bool, emit func(SnapshotInfo)) error {
	var enc []EncodedDataFile
	var b []byte
	for groups(&b) {
		var part []EncodedDataFile
		if err := json.Unmarshal(b, &part); err != nil {
			return fmt.Errorf("iceberg: commit %s: bad encoded files: %w", dest, err)
		}
		enc = append(enc, part...)
	}
	ident, err := parseIdent(dest)
	if err != nil {
		return err
	}
	cat, err := f.Spec.catalog(ctx, f.rt)
	if err != nil {
		return fmt.Errorf("iceberg: commit %s: %w", dest, err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("iceberg: commit %s: %w", dest, err)
	}
	files, err := DecodeDataFiles(tbl.Metadata(), enc)
	if err != nil {
		return fmt.Errorf("iceberg: commit %s: %w", dest, err)
	}
	res, err := Commit(ctx, cat, ident, CommitRequest{
		SinkID: f.Spec.SinkID, WindowEndMs: windowEnd(w), DataFiles: files, SnapshotProps: f.rt.snapshotProps,
	})
	if err != nil {
		return err
	}
	catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
	emit(SnapshotInfo{Table: dest, SnapshotID: res.SnapshotID, SequenceNumber: res.SequenceNumber,
		Operation: res.Operation, FilesAdded: res.FilesAdded, RowsAdded: res.RowsAdded,
		SinkID: f.Spec.SinkID, Skipped: res.Skipped})
	return nil
}

// windowEnd is the token value of window w: its max timestamp in milliseconds.
func windowEnd(w beam.Window) int64 {
	if _, ok := w.(window.GlobalWindow); ok {
		return mtime.EndOfGlobalWindowTime.Milliseconds()
	}
	return w.MaxTimestamp().Milliseconds()
}

// structToRowFn converts structs of one type to Rows of the type's inferred schema
// (row.InferStructSchema). The converter is built from the first element's type (the
// DoFn carries no reflect.Type: Beam cannot serialize types with array fields such as
// uuid.UUID).
type structToRowFn struct {
	typ  reflect.Type
	conv *row.StructValues
}

func (f *structToRowFn) ProcessElement(v beam.T, emit func(row.Row), dead func(DeadLetter)) error {
	if t := reflect.TypeOf(v); f.conv == nil || t != f.typ {
		sc, err := row.InferStructSchema(t)
		if err != nil {
			return err
		}
		if f.conv, err = row.NewStructValues(t, sc); err != nil {
			return err
		}
		f.typ = t
	}
	r, err := f.conv.Row(v)
	if err != nil {
		dead(DeadLetter{Row: fmt.Sprintf("%+v", v), Reason: err.Error()})
		return nil
	}
	emit(r)
	return nil
}

func init() {
	register.DoFn5x1[context.Context, beam.Window, row.Row, func(beam.EventTime, string, []byte), func(DeadLetter), error](&writeFn{})
	register.DoFn5x1[context.Context, beam.Window, string, func(*[]byte) bool, func(SnapshotInfo), error](&commitFn{})
	register.DoFn3x1[beam.T, func(row.Row), func(DeadLetter), error](&structToRowFn{})
	register.Emitter1[DeadLetter]()
	register.Emitter1[SnapshotInfo]()
	register.Emitter1[row.Row]()
	register.Emitter3[beam.EventTime, string, []byte]()
	register.Iter1[[]byte]()
}
