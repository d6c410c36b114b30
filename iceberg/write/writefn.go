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
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/late"
)

// router takes rows to their tables: it projects a row (keep/drop/only), renders its
// destination and loads the table, creating it from the row's schema when missing.
type router struct {
	spec   *Spec
	rt     *runtime
	tables map[string]*destTable
	gate   *late.Gate
	replay *late.ReplayIndex
}

// destTable is one destination table as the writers see it.
type destTable struct {
	name string
	tbl  *table.Table
	keys *partitionKeyer // built by the hash distribution on first use
}

func newRouter(spec *Spec) (*router, error) {
	rt, err := spec.runtime()
	if err != nil {
		return nil, err
	}
	return &router{spec: spec, rt: rt, tables: map[string]*destTable{}, gate: late.NewGate(spec.SinkID, spec.RunID, spec.Windowed, spec.LatenessMs), replay: late.NewReplayIndex(spec.SinkID, spec.RunID)}, nil
}

// late sorts r (bound for dt, in window w) by its window (see late.Gate): skip is true
// for a row an earlier run of the sink committed (a replay after a restart), dead is
// the dead letter of a row too late for its window.
func (rr *router) late(ctx context.Context, dt *destTable, r row.Row, w beam.Window) (skip bool, dead *DeadLetter, err error) {
	if !rr.spec.Windowed {
		return false, nil, nil
	}
	cat, err := rr.spec.catalog(ctx, rr.rt)
	if err != nil {
		return false, nil, err
	}
	v, reason, tok, err := rr.gate.Check(ctx, cat, dt.name, dt.tbl.Identifier(), w)
	if err != nil {
		return false, nil, err
	}
	switch v {
	case late.TooLate:
		LateDead.Inc(ctx, 1)
		return false, &DeadLetter{Row: r.String(), Table: dt.name, Reason: reason}, nil
	case late.Replayed:
		seen, err := rr.replay.Seen(ctx, cat, dt.tbl.Identifier(), commit.WindowEnd(w), r)
		if err != nil || seen {
			if seen {
				ReplayedSkipped.Inc(ctx, 1)
			}
			return seen, nil, err
		}
		// Not committed by the earlier run: too late for it if that run had committed
		// more than the allowed lateness past the row's window (it dead-lettered the
		// row, or never received it), otherwise written in a late pane.
		if end, prior := commit.WindowEnd(w), tok.PriorThrough(rr.spec.SinkID, rr.spec.RunID); end+rr.gate.LatenessMs < prior {
			LateDead.Inc(ctx, 1)
			return false, &DeadLetter{Row: r.String(), Table: dt.name, Reason: fmt.Sprintf(
				"late: its window ending %s closed more than allowed_lateness_seconds=%d before the window ending %s that an earlier run of sink %s committed to %s, which did not commit the row",
				time.UnixMilli(end+1).UTC().Format(time.RFC3339Nano), rr.gate.LatenessMs/1000,
				time.UnixMilli(prior+1).UTC().Format(time.RFC3339Nano), rr.spec.SinkID, dt.name)}, nil
		}
		ReplayedNew.Inc(ctx, 1)
	}
	return false, nil, nil
}

// passes reports whether the rows of window w bound for dt pass the late-row checks
// whatever they hold (late.Gate's late.Pass), so that they need no Row to be written.
func (rr *router) passes(ctx context.Context, dt *destTable, w beam.Window) (bool, error) {
	if !rr.spec.Windowed {
		return true, nil
	}
	cat, err := rr.spec.catalog(ctx, rr.rt)
	if err != nil {
		return false, err
	}
	v, _, _, err := rr.gate.Check(ctx, cat, dt.name, dt.tbl.Identifier(), w)
	return v == late.Pass, err
}

// admit routes r (in window w) and sorts it by its window: it returns r projected
// and its table, or a nil table for a row that goes no further: one an earlier run
// committed (a replay), or one handed to dead because it cannot be written or is
// too late. err is a failure of the catalog (the bundle is retried).
func (rr *router) admit(ctx context.Context, r row.Row, w beam.Window, dead func(DeadLetter)) (row.Row, *destTable, error) {
	r, dt, dl, err := rr.route(ctx, r)
	var skip bool
	if err == nil && dl == nil {
		skip, dl, err = rr.late(ctx, dt, r, w)
	}
	if dl != nil {
		dead(*dl)
	}
	if skip || dl != nil || err != nil {
		return row.Row{}, nil, err
	}
	return r, dt, nil
}

// route returns r projected and its table. A non-nil dead is the dead letter of a row
// that cannot be written; err is a failure of the catalog (the bundle is retried).
func (rr *router) route(ctx context.Context, r row.Row) (row.Row, *destTable, *DeadLetter, error) {
	pr, err := rr.rt.proj.Apply(r)
	if err != nil {
		return row.Row{}, nil, &DeadLetter{Row: r.String(), Reason: err.Error()}, nil
	}
	r = pr
	dest, err := rr.rt.tpl.Render(rowGetter(r))
	if err != nil {
		return row.Row{}, nil, &DeadLetter{Row: r.String(), Reason: err.Error()}, nil
	}
	dt, reject, err := rr.table(ctx, dest, r)
	if err != nil || reject != nil {
		if reject != nil {
			return row.Row{}, nil, &DeadLetter{Row: r.String(), Table: dest, Reason: reject.Error()}, nil
		}
		return row.Row{}, nil, nil, err
	}
	return r, dt, nil, nil
}

// table returns the destination table, creating it from r's schema when missing. A
// non-nil reject is a reason to dead-letter the row (no destination, or a value whose
// type no column can have); err fails the bundle: a failure of the catalog, or a
// table the configuration cannot create (see createTable).
func (rr *router) table(ctx context.Context, dest string, r row.Row) (dt *destTable, reject, err error) {
	if dt := rr.tables[dest]; dt != nil {
		return dt, nil, nil
	}
	ident, perr := parseIdent(dest)
	if perr != nil {
		return nil, fmt.Errorf("%w: %w", errNoDestination, perr), nil
	}
	tbl, err := catalogs.LoadTable(ctx, rr.spec.CatalogName, rr.rt.catProps, dest, rr.rt.refresh)
	if err != nil {
		if !errors.Is(err, config.ErrTableNotFound) {
			return nil, nil, config.WrapOp("write", dest, err)
		}
		sc, ierr := row.InferSchema(r)
		if ierr != nil {
			return nil, fmt.Errorf("cannot create table %s: %w", dest, ierr), nil
		}
		if tbl, err = createTable(ctx, rr.spec, rr.rt, dest, ident, sc); err != nil {
			return nil, nil, err
		}
	}
	dt = &destTable{name: dest, tbl: tbl}
	rr.tables[dest] = dt
	return dt, nil, nil
}

// evolve evolves dt's table (evolve_schema) so that it takes r, which failed to fit
// it with rowErr. changed reports that dt.tbl is now the table with its new schema
// (the caller writes what it buffered with the old one); otherwise rowErr, or the
// reason evolution cannot mend r, is why r goes to the dead letter output.
func (rr *router) evolve(ctx context.Context, dt *destTable, r row.Row, rowErr error) (changed bool, reason, err error) {
	tbl, reason, err := evolveFor(ctx, rr.spec, rr.rt, dt.name, dt.tbl, r, rowErr)
	if tbl == nil {
		return false, reason, err
	}
	dt.tbl, dt.keys = tbl, nil
	return true, nil, nil
}

// fileBuffer turns rows of one table into Arrow batches and streams them to a
// datafile.Writer, opened with the first batch; flushed, it keeps the encodings of the files
// written. Memory stays bounded by the batch being built and the writer's queue.
type fileBuffer struct {
	tbl     *table.Table
	opts    datafile.Options
	target  int64 // target file size: batches are cut at it, so files can roll there
	builder *row.BatchBuilder
	lineage bool // the builder's schema has _row_id (see withLineage)
	writer  *datafile.Writer
	files   []datafile.Encoded
}

func newFileBuffer(tbl *table.Table, opts datafile.Options) (*fileBuffer, error) {
	bb, err := row.NewBatchBuilder(tbl.Schema(), memory.DefaultAllocator)
	if err != nil {
		return nil, config.WrapOp("write", strings.Join(tbl.Identifier(), "."), err)
	}
	return &fileBuffer{tbl: tbl, opts: opts, target: rollSize(tbl, opts), builder: bb}, nil
}

// rollSize is the size at which files of tbl written with opts roll.
func rollSize(tbl *table.Table, opts datafile.Options) int64 {
	if opts.TargetFileSizeBytes > 0 {
		return opts.TargetFileSizeBytes
	}
	return int64(tbl.Properties().GetInt(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault))
}

// add appends r and, once a batch is full, hands it to the writer. A returned row
// error is about r (it was not appended: dead-letter it); err fails the bundle.
func (b *fileBuffer) add(ctx context.Context, r row.Row) (rowErr, err error) {
	if err := b.builder.AppendRow(r); err != nil {
		return err, nil
	}
	return nil, b.roll(ctx)
}

// addStruct is add for a struct value (or pointer to one) mapped to the table's
// columns, appended without a Row (see row.BatchBuilder.AppendStruct).
func (b *fileBuffer) addStruct(ctx context.Context, v any) (rowErr, err error) {
	if err := b.builder.AppendStruct(v); err != nil {
		return err, nil
	}
	return nil, b.roll(ctx)
}

// roll hands the batch to the writer once it is full: table.WriteRecords rolls to a
// new file between batches only.
func (b *fileBuffer) roll(ctx context.Context) error {
	if b.builder.Len() >= batchRows || int64(b.builder.Bytes()) >= b.target {
		return b.cut(ctx)
	}
	return nil
}

// cut hands the rows built so far to the writer as a batch.
func (b *fileBuffer) cut(ctx context.Context) error {
	if b.builder.Len() == 0 {
		return nil
	}
	if b.writer == nil {
		w, err := datafile.NewWriter(ctx, b.tbl, b.builder.ArrowSchema(), b.opts)
		if err != nil {
			return err
		}
		b.writer = w
	}
	return b.writer.Write(b.builder.NewBatch())
}

// flush writes what is buffered, closes the writer and keeps the files' encodings.
func (b *fileBuffer) flush(ctx context.Context) error {
	err := b.cut(ctx)
	if b.writer == nil {
		return err
	}
	files, cerr := b.writer.Close()
	b.writer = nil
	if err = errors.Join(err, cerr); err != nil {
		return err
	}
	enc, err := datafile.Encode(b.tbl.Metadata(), files)
	if err != nil {
		return config.WrapOp("write", strings.Join(b.tbl.Identifier(), "."), err)
	}
	b.files = append(b.files, enc...)
	return nil
}

// retarget writes the rows buffered so far with the schema they were checked against
// and builds the next batches for tbl, the same table with an evolved schema.
func (b *fileBuffer) retarget(ctx context.Context, tbl *table.Table) error {
	if err := b.flush(ctx); err != nil {
		return err
	}
	sc := tbl.Schema()
	if b.lineage {
		sc = datafile.LineageSchema(sc)
	}
	bb, err := row.NewBatchBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		return config.WrapOp("write", strings.Join(tbl.Identifier(), "."), err)
	}
	b.builder.Release()
	b.tbl, b.builder = tbl, bb
	return nil
}

// withLineage makes the next files store _row_id (null for rows without one), for
// merge-on-read updates that keep the _row_id of the row they replace.
func (b *fileBuffer) withLineage(ctx context.Context) error {
	if b.lineage {
		return nil
	}
	b.lineage = true
	return b.retarget(ctx, b.tbl)
}

// abort stops the writer, waiting for it, and releases the builder; files already
// written stay in storage, unreferenced.
func (b *fileBuffer) abort() {
	if b.writer != nil {
		b.writer.Close()
		b.writer = nil
	}
	b.builder.Release()
}

// close flushes, releases the builder and returns every file written.
func (b *fileBuffer) close(ctx context.Context) ([]datafile.Encoded, error) {
	err := b.flush(ctx)
	b.builder.Release()
	if err != nil {
		return nil, err
	}
	return b.files, nil
}

// writeFn routes rows to their destination tables, buffers them per destination and
// window as Arrow batches, writes Parquet data files without committing, and emits the
// encoded files keyed by table at the end of the bundle. Rows it cannot write go to the
// dead letter output. Rows of the global window are appended on the bundle's appender
// goroutine (see append.go).
type writeFn struct {
	Spec Spec

	router  *router
	writers bundleWriters
	// chunk and ap: the elements queued for the appender and the appender, once
	// started.
	chunk []appendItem
	ap    *appender
}

type bufKey struct {
	table string
	win   int64 // window end, ms
}

// sortedKeys returns m's keys by table, then window: bundles emit in a deterministic
// order.
func sortedKeys[V any](m map[bufKey]V) []bufKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b bufKey) int {
		if c := strings.Compare(a.table, b.table); c != 0 {
			return c
		}
		return cmp.Compare(a.win, b.win)
	})
}

func (f *writeFn) Setup(ctx context.Context) error {
	var err error
	f.router, err = newRouter(&f.Spec)
	f.writers = bundleWriters{router: f.router}
	return err
}

// StartBundle resets the buffers. Its emitters only satisfy the SDK's rule that
// lifecycle methods declare the same outputs as ProcessElement.
func (f *writeFn) StartBundle(ctx context.Context, _ func(beam.EventTime, string, Part), _ func(DeadLetter)) {
	f.stopAppender()  // a failed bundle's
	f.writers.abort() // a failed bundle's writers
	f.router.replay.Begin()
}

func (f *writeFn) ProcessElement(ctx context.Context, w beam.Window, r row.Row, _ func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	err := f.process(ctx, w, r, dead)
	if err != nil {
		f.stop() // the bundle fails
	}
	return err
}

// stop stops the appender and the writers of a failing bundle.
func (f *writeFn) stop() {
	f.stopAppender()
	f.writers.abort()
}

func (f *writeFn) process(ctx context.Context, w beam.Window, r row.Row, dead func(DeadLetter)) error {
	r, dt, err := f.router.admit(ctx, r, w, dead)
	if dt == nil {
		return err
	}
	if _, global := w.(window.GlobalWindow); global && !f.Spec.EvolveSchema {
		buf, err := f.writers.buffer(dt, w)
		if err != nil {
			return err
		}
		return f.queue(ctx, appendItem{r: r, buf: buf, table: dt.name}, dead)
	}
	// A window of a streaming write (its dead letters are emitted with their own
	// element) or a row that may evolve its table: appended here, after those queued.
	if err := f.sync(ctx, dead); err != nil {
		return err
	}
	return f.writers.add(ctx, dt, w, r, dead)
}

// FinishBundle writes what is buffered and emits the encoded files of each table and
// window (see bundleWriters.finish).
func (f *writeFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	err := f.sync(ctx, dead)
	f.stopAppender()
	if err != nil {
		f.writers.abort()
		return err
	}
	if err := f.writers.finish(ctx, emit); err != nil {
		return err
	}
	f.router.replay.Done()
	return nil
}

// bundleWriters is a bundle's file buffers, one per destination table and window:
// rows are appended as they come (each buffer's datafile.Writer encodes on its own
// goroutine) and finish writes the rest. It serves distribution_mode=none (writeFn)
// and the unpartitioned tables of distribution_mode=hash (hashRouteFn).
type bundleWriters struct {
	router  *router
	buffers map[bufKey]*fileBuffer
	// last is the buffer buffer returned last: consecutive rows mostly share one.
	last struct {
		dt  *destTable
		win int64
		buf *fileBuffer
	}
}

// add appends routed row r of window w to dt's buffer. A row the table cannot take
// goes to dead (with evolve_schema, it first evolves the table when it can).
func (b *bundleWriters) add(ctx context.Context, dt *destTable, w beam.Window, r row.Row, dead func(DeadLetter)) error {
	buf, err := b.buffer(dt, w)
	if err != nil {
		return err
	}
	rowErr, err := buf.add(ctx, r)
	if rowErr != nil && err == nil && b.router.spec.EvolveSchema {
		var changed bool
		if changed, rowErr, err = b.router.evolve(ctx, dt, r, rowErr); changed {
			// Rows buffered so far are written with the schema they were checked against.
			for _, k := range sortedKeys(b.buffers) {
				if k.table == dt.name {
					if err := b.buffers[k].retarget(ctx, dt.tbl); err != nil {
						return err
					}
				}
			}
			rowErr, err = buf.add(ctx, r)
		}
	}
	if rowErr != nil {
		dead(DeadLetter{Row: r.String(), Table: dt.name, Reason: rowErr.Error()})
	}
	return err
}

// buffer returns the file buffer of dt and window w, made on first use.
func (b *bundleWriters) buffer(dt *destTable, w beam.Window) (*fileBuffer, error) {
	win := w.MaxTimestamp().Milliseconds()
	if l := &b.last; l.buf != nil && l.dt == dt && l.win == win {
		return l.buf, nil
	}
	key := bufKey{table: dt.name, win: win}
	buf := b.buffers[key]
	if buf == nil {
		var err error
		if buf, err = newFileBuffer(dt.tbl, b.router.spec.fileOptions(b.router.rt)); err != nil {
			return nil, err
		}
		if b.buffers == nil {
			b.buffers = map[bufKey]*fileBuffer{}
		}
		b.buffers[key] = buf
	}
	b.last.dt, b.last.win, b.last.buf = dt, win, buf
	return buf, nil
}

// finish writes what is buffered and emits the encoded files of each table and
// window, timestamped at the window's end so that a re-windowing downstream puts them
// back into their window. After a failure, it stops the other writers.
func (b *bundleWriters) finish(ctx context.Context, emit func(beam.EventTime, string, Part)) error {
	for _, k := range sortedKeys(b.buffers) {
		files, err := b.buffers[k].close(ctx)
		delete(b.buffers, k)
		if err != nil {
			b.abort()
			return err
		}
		if len(files) > 0 {
			emit(mtime.FromMilliseconds(k.win), k.table, Part{Files: files})
		}
	}
	b.buffers, b.last.buf = nil, nil
	return nil
}

// abort stops every writer of the bundle: after a failure, none outlives it.
func (b *bundleWriters) abort() {
	for _, buf := range b.buffers {
		buf.abort()
	}
	b.buffers, b.last.buf = nil, nil
}

// commitFn commits each table's files (and, merge-on-read, its shards' deletes), one
// commit per window and table, oldest window first (see orderPanes), through the
// Committer. It holds each table's
// on-time panes in state until the watermark passes their window's end.
type commitFn struct {
	Spec Spec

	Pending state.Bag[Pane]
	Handled state.Value[int64]
	Turn    timers.EventTime

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

func (f *commitFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, dest string, p Pane, emit func(commit.SnapshotInfo)) error {
	return arrivePane(sp, tp, f.Pending, f.Handled, f.Turn, p, func(p Pane) error { return f.commit(ctx, dest, p, emit) })
}

func (f *commitFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, dest string, _ timers.Context, emit func(commit.SnapshotInfo)) error {
	return config.WrapOp("commit", dest, firePanes(sp, f.Pending, f.Handled, ts, func(p Pane) error { return f.commit(ctx, dest, p, emit) },
		func(end int64) (bool, error) {
			ident, err := parseIdent(dest)
			if err != nil {
				return false, err
			}
			cat, err := f.Spec.catalog(ctx, f.rt)
			if err != nil {
				return false, err
			}
			return commit.Committed(ctx, cat, ident, f.Spec.SinkID, f.Spec.RunID, end)
		}))
}

func (f *commitFn) commit(ctx context.Context, dest string, p Pane, emit func(commit.SnapshotInfo)) error {
	if f.Spec.MergeOnRead {
		return f.commitChanges(ctx, dest, p, emit)
	}
	var enc []datafile.Encoded
	for _, part := range p.Parts {
		enc = append(enc, part.Files...)
	}
	ident, err := parseIdent(dest)
	if err != nil {
		return err
	}
	cat, err := f.Spec.catalog(ctx, f.rt)
	if err != nil {
		return config.WrapOp("commit", dest, err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return config.WrapOp("commit", dest, err)
	}
	files, err := datafile.Decode(tbl.Metadata(), enc)
	if err != nil {
		return config.WrapOp("commit", dest, err)
	}
	res, err := commit.Commit(ctx, cat, ident, commit.CommitRequest{
		SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, WindowEndMs: p.WindowEndMs, LateID: p.LateID, ContentID: p.ContentIDFor(f.Spec.Windowed),
		DataFiles: files, SnapshotProps: f.rt.snapshotProps,
	})
	if err != nil {
		return err
	}
	catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
	recordCommit(ctx, res, p.WindowEndMs, !p.Global)
	if res.LateID != "" && !res.Skipped {
		LatePassed.Inc(ctx, res.RowsAdded)
	}
	emit(commit.SnapshotInfo{Table: dest, SnapshotID: res.SnapshotID, SequenceNumber: res.SequenceNumber,
		Operation: res.Operation, FilesAdded: res.FilesAdded, RowsAdded: res.RowsAdded,
		SinkID: f.Spec.SinkID, Skipped: res.Skipped, WindowEndMs: p.WindowEndMs, Late: p.LateID != "" || res.LateID != ""})
	return nil
}

// structRows converts structs of one type to Rows of the type's inferred schema
// (row.InferStructSchema, with nanos: row.WithNanoTimes). The converter is built from
// the first element's type (the DoFns carry no reflect.Type: Beam cannot serialize
// types with array fields such as uuid.UUID).
type structRows struct {
	nanos []string // Spec.NanoTimes
	typ   reflect.Type
	conv  *row.StructValues
}

// row returns v as a Row; ok is false when v cannot be converted, after sending it to
// dead with the reason (table names the destination or template).
func (c *structRows) row(v any, table string, dead func(DeadLetter)) (r row.Row, ok bool, err error) {
	if t := reflect.TypeOf(v); c.conv == nil || t != c.typ {
		sc, err := row.InferStructSchema(t)
		if err != nil {
			return row.Row{}, false, err
		}
		if c.conv, err = row.NewStructValues(t, row.WithNanoTimes(sc, c.nanos)); err != nil {
			return row.Row{}, false, err
		}
		c.typ = t
	}
	r, err = c.conv.Row(v)
	if err != nil {
		dead(structDead(v, table, err))
		return row.Row{}, false, nil
	}
	return r, true, nil
}

// structDead is the dead letter of struct v bound for table, refused for reason.
func structDead(v any, table string, reason error) DeadLetter {
	return DeadLetter{Row: strings.ToValidUTF8(fmt.Sprintf("%+v", v), "\uFFFD"), Table: table, Reason: reason.Error()}
}

// structToRowFn converts structs of one type to Rows (see structRows).
type structToRowFn struct {
	// Table is the destination (or template), for the dead letters.
	Table string
	// NanoTimes is the write's Spec.NanoTimes.
	NanoTimes []string

	conv structRows
}

func (f *structToRowFn) Setup() { f.conv.nanos = f.NanoTimes }

func (f *structToRowFn) ProcessElement(v beam.T, emit func(row.Row), dead func(DeadLetter)) error {
	r, ok, err := f.conv.row(v, f.Table, dead)
	if ok {
		emit(r)
	}
	return err
}

// structWriteFn is writeFn for a PCollection of one struct type (or pointers to it):
// it converts each element to a Row itself (structRows) instead of leaving that to a
// DoFn of its own, which cost every element a further pass through Beam's emit path.
type structWriteFn struct {
	Spec Spec

	w    writeFn // its appender also takes the structs of the global window
	conv structRows
	// exact is exactColumns of exactType and exactTable's schema (see direct).
	exactType  reflect.Type
	exactTable *table.Table
	exact      bool
	static     *destTable // the write's one table, once loaded (see direct)
}

func (f *structWriteFn) Setup(ctx context.Context) error {
	f.w = writeFn{Spec: f.Spec}
	f.conv.nanos = f.Spec.NanoTimes
	return f.w.Setup(ctx)
}

func (f *structWriteFn) StartBundle(ctx context.Context, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) {
	f.w.StartBundle(ctx, emit, dead)
}

func (f *structWriteFn) ProcessElement(ctx context.Context, w beam.Window, v beam.T, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	err := f.process(ctx, w, v, emit, dead)
	if err != nil {
		f.w.stop() // the bundle fails
	}
	return err
}

func (f *structWriteFn) process(ctx context.Context, w beam.Window, v any, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	dt := f.direct(v)
	if dt == nil {
		return f.rowPath(ctx, w, v, emit, dead)
	}
	pass, err := f.w.router.passes(ctx, dt, w)
	if err != nil {
		return err
	}
	if !pass {
		return f.rowPath(ctx, w, v, emit, dead)
	}
	buf, err := f.w.writers.buffer(dt, w)
	if err != nil {
		return err
	}
	if _, global := w.(window.GlobalWindow); global {
		return f.w.queue(ctx, appendItem{v: v, buf: buf, table: dt.name}, dead)
	}
	// A window of a streaming write: dead letters are emitted with their own element.
	if err := f.w.sync(ctx, dead); err != nil {
		return err
	}
	rowErr, err := buf.addStruct(ctx, v)
	if rowErr != nil {
		dead(structDead(v, dt.name, rowErr))
	}
	return err
}

// rowPath converts v to a Row and writes it as writeFn does (queued after the
// structs queued for the appender, or appended after them).
func (f *structWriteFn) rowPath(ctx context.Context, w beam.Window, v any, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	r, ok, err := f.conv.row(v, f.Spec.Table, dead)
	if !ok {
		return err
	}
	return f.w.process(ctx, w, r, dead)
}

// direct returns the table structs are appended to without a Row (fileBuffer.addStruct)
// when the write needs none: one table already loaded (the first element, through the
// Row path, loads or creates it), no projection, no schema evolution, and every field
// of v's type named exactly as its column (the Row path matches names exactly;
// AppendStruct would also match an untagged field case-insensitively). Otherwise nil.
// A windowed write also needs the element's window to pass the late-row checks
// (router.passes): late and replayed rows take the Row path.
func (f *structWriteFn) direct(v any) *destTable {
	dt := f.static
	if dt == nil {
		rr := f.w.router
		if f.Spec.EvolveSchema || !rr.rt.proj.IsZero() || !rr.rt.tpl.IsStatic() {
			return nil
		}
		if dt = rr.tables[rr.rt.tpl.String()]; dt == nil {
			return nil
		}
		f.static = dt // a static table's destTable stays (evolve_schema is off)
	}
	if t := reflect.TypeOf(v); t != f.exactType || dt.tbl != f.exactTable {
		f.exactType, f.exactTable, f.exact = t, dt.tbl, exactColumns(t, dt.tbl.Schema())
	}
	if !f.exact {
		return nil
	}
	return dt
}

// exactColumns reports whether every mapped field of struct type t names a column of
// sc exactly.
func exactColumns(t reflect.Type, sc *ibg.Schema) bool {
	m, err := row.MapStruct(t)
	if err != nil {
		return false
	}
	names := map[string]bool{}
	for _, f := range sc.Fields() {
		names[f.Name] = true
	}
	for _, f := range m.Fields {
		if !names[f.Column] {
			return false
		}
	}
	return true
}

func (f *structWriteFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, Part), dead func(DeadLetter)) error {
	return f.w.FinishBundle(ctx, emit, dead)
}

func init() {
	register.DoFn5x1[context.Context, beam.Window, row.Row, func(beam.EventTime, string, Part), func(DeadLetter), error](&writeFn{})
	beam.RegisterType(reflect.TypeFor[commitFn]())
	register.DoFn3x1[beam.T, func(row.Row), func(DeadLetter), error](&structToRowFn{})
	register.DoFn5x1[context.Context, beam.Window, beam.T, func(beam.EventTime, string, Part), func(DeadLetter), error](&structWriteFn{})
	register.Emitter1[DeadLetter]()
	register.Emitter1[commit.SnapshotInfo]()
	register.Emitter1[row.Row]()
	register.Emitter3[beam.EventTime, string, []byte]()
	register.Emitter3[beam.EventTime, string, Part]()
	register.Iter1[[]byte]()
}

func newCommitFn(spec Spec) *commitFn {
	return &commitFn{Spec: spec, Pending: state.MakeBagState[Pane]("pending"), Handled: state.MakeValueState[int64]("handled"), Turn: timers.InEventTime("turn")}
}
