package write

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	goruntime "runtime"
	"runtime/debug"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/late"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// changeParseFn validates change rows, finds each key's shard and packs the parsed
// changes by (window, shard) into packets, emitted keyed by shard, timestamped in
// their window, when full and at the end of the bundle. Its elements are row.Row,
// or structs of one type or pointers to it, which it turns into Rows itself (see
// structRows): a DoFn of their own cost every change a further pass through Beam's
// emit path. Rejects go to the dead letter output; tombstones (see
// cdc.ErrTombstone) are skipped and counted. It loads the table on its first row,
// creating it from the first row whose schema can be inferred (no null value) when
// missing.
type changeParseFn struct {
	Spec Spec

	rt      *runtime
	env     *cdc.Envelope
	tbl     *table.Table
	gate    *late.Gate
	parser  *cdc.Parser
	sharder *cdc.Sharder
	// expect collects the keys parsed by a batch pipeline's worker, which its
	// shards then resolve by one scan of the table (cdc.Expected); nil in a
	// streaming one, whose worker builds its key index instead. The keys are
	// added to it in batches (expected), at the latest when the bundle finishes.
	expect   *cdc.Expected
	expected cdc.KeyBatch
	// warm starts the warm-up of the worker's key index when the bundle finishes
	// (see FinishBundle): set by the bundle that loaded the table in a streaming
	// pipeline, and in a batch one when its expected keys go past their limit.
	warm    bool
	packets map[packetKey][]byte
	kb      []byte
	body    []byte
	// pending rows wait for the table to be created (see ProcessElement).
	pending    []pendingRow
	pendingErr error
	conv       structRows // for a PCollection of structs
}

type packetKey struct {
	win   int64 // window end, ms
	shard int
}

func (f *changeParseFn) Setup(ctx context.Context) error {
	var err error
	if f.rt, err = f.Spec.runtime(); err != nil {
		return err
	}
	f.conv.nanos = f.Spec.NanoTimes
	f.env, err = f.Spec.envelope(f.rt)
	return err
}

// StartBundle resets the packets (its emitters mirror ProcessElement's outputs).
func (f *changeParseFn) StartBundle(ctx context.Context, _ func(beam.EventTime, int, []byte), _ func(DeadLetter)) {
	f.packets = map[packetKey][]byte{}
	f.pending = nil
	f.expected.Reset()
}

// open makes the DoFn ready to parse the table's rows: it opens the table (or creates
// it from r, openTable), builds the parser and sharder of its schema (parseSchema)
// and plans how the shards resolve keys (planKeys). A non-nil reject is a reason to
// dead-letter r; err fails the bundle.
func (f *changeParseFn) open(ctx context.Context, r row.Row) (reject, err error) {
	tbl, reject, err := f.openTable(ctx, r)
	if reject != nil || err != nil {
		return reject, err
	}
	if f.parser, f.sharder, err = f.parseSchema(tbl); err != nil {
		return nil, err
	}
	f.tbl = tbl
	return nil, f.planKeys(tbl)
}

// openTable loads the table through the worker's table cache, or creates it from r
// when it is missing: its schema is inferred from r's row image, with the equality
// columns required. A non-nil reject says why r cannot create the table.
func (f *changeParseFn) openTable(ctx context.Context, r row.Row) (tbl *table.Table, reject, err error) {
	name := f.Spec.Table
	tbl, err = catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, name, f.rt.refresh)
	if errors.Is(err, config.ErrTableNotFound) {
		data, ierr := f.env.Data(r)
		var sc *ibg.Schema
		if ierr == nil {
			sc, ierr = row.InferSchema(data)
		}
		if ierr == nil {
			sc, ierr = cdc.CreateSchema(sc, f.Spec.EqualityColumns)
		}
		if ierr != nil {
			return nil, fmt.Errorf("cannot create table %s from this row: %w", name, ierr), nil
		}
		ident, perr := catalogs.ParseIdent(name)
		if perr != nil {
			return nil, nil, perr
		}
		tbl, err = createTable(ctx, &f.Spec, f.rt, name, ident, sc)
	}
	if err != nil {
		return nil, nil, config.WrapOp("write", name, err)
	}
	return tbl, nil, nil
}

// parseSchema returns the change parser and the sharder of tbl's current schema.
func (f *changeParseFn) parseSchema(tbl *table.Table) (*cdc.Parser, *cdc.Sharder, error) {
	parser, err := f.Spec.parser(f.rt, tbl.Schema())
	if err != nil {
		return nil, nil, config.WrapOp("write", f.Spec.Table, err)
	}
	sharder, err := cdc.NewSharder(tbl, f.Spec.EqualityColumns, f.Spec.NumShards, f.Spec.ShardsPerPartition)
	if err != nil {
		return nil, nil, config.WrapOp("write", f.Spec.Table, err)
	}
	return parser, sharder, nil
}

// planKeys plans how the shards resolve the keys of tbl (deletion vectors only). A
// streaming pipeline's shards resolve keys with the worker's key index: build it
// while the first window's changes are shuffled, from the end of this bundle (warm,
// see FinishBundle). A batch pipeline's worker expects the keys it parses instead:
// its shards resolve them by one read of the candidate files' key columns
// (cdc.Expected), and a warm-up would read them again, on the processors the
// parsing needs, for an index no shard uses. The index is built only when a shard
// needs it: its keys were parsed by another worker, or were too many to expect
// (expectKeys).
func (f *changeParseFn) planKeys(tbl *table.Table) error {
	format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(f.Spec.DeleteFormat), f.Spec.EqualityColumns)
	if err != nil || format != config.DeleteFormatDV {
		return nil
	}
	if f.Spec.Windowed {
		f.warm = true
	} else if f.expect, err = f.Spec.resolver().Expect(tbl); err != nil {
		return config.WrapOp("write", f.Spec.Table, err)
	}
	return nil
}

// tooLate passes r's window w through the late gate of a windowed write: a non-empty
// reason sends r to the dead letter output. Rows of windows already committed pass
// on to the shards, which apply a change only when it is newer than every change
// committed (see changeShardFn).
func (f *changeParseFn) tooLate(ctx context.Context, w beam.Window) (reason string, err error) {
	if !f.Spec.Windowed {
		return "", nil
	}
	cat, err := catalogs.Get(ctx, f.Spec.CatalogName, f.rt.catProps)
	if err != nil {
		return "", err
	}
	if f.gate == nil {
		f.gate = &late.Gate{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, LatenessMs: f.Spec.LatenessMs}
	}
	v, reason, _, err := f.gate.Check(ctx, cat, f.Spec.Table, f.tbl.Identifier(), w)
	if err != nil || v != late.TooLate {
		return "", err
	}
	return reason, nil
}

// ProcessElement parses v, a row.Row or a struct (see changeParseFn).
func (f *changeParseFn) ProcessElement(ctx context.Context, w beam.Window, v beam.T, emit func(beam.EventTime, int, []byte), dead func(DeadLetter)) error {
	r, ok := v.(row.Row)
	if !ok {
		var err error
		if r, ok, err = f.conv.row(v, f.Spec.Table, dead); !ok {
			return err
		}
	}
	if f.env.IsTombstone(r) {
		TombstonesSkipped.Inc(ctx, 1)
		return nil
	}
	win := commit.WindowEnd(w)
	if f.parser == nil {
		rej, err := f.open(ctx, r)
		if err != nil {
			return err
		}
		if rej != nil {
			// The table is missing and r cannot create it (a null value has no type,
			// say): hold r until a row of the bundle creates the table.
			f.pending = append(f.pending, pendingRow{r: r, win: win})
			f.pendingErr = rej
			return nil
		}
		for _, p := range f.pending {
			if err := f.add(ctx, p.r, p.win, emit, dead); err != nil {
				return err
			}
		}
		f.pending = nil
	}
	if reason, err := f.tooLate(ctx, w); err != nil || reason != "" {
		if reason != "" {
			LateDead.Inc(ctx, 1)
			dead(DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: reason})
		}
		return err
	}
	return f.add(ctx, r, win, emit, dead)
}

// pendingRow is a row that arrived before the table could be created.
type pendingRow struct {
	r   row.Row
	win int64
}

// add parses r and adds it to its packet, or dead-letters it; with evolve_schema a
// row the table's schema cannot take evolves it first (see evolve).
func (f *changeParseFn) add(ctx context.Context, r row.Row, win int64, emit func(beam.EventTime, int, []byte), dead func(DeadLetter)) error {
	// c is encoded into the packet before the next row is parsed.
	c, err := f.parser.ParseReusing(r)
	if err != nil && f.Spec.EvolveSchema {
		changed, reason, eerr := f.evolve(ctx, r, err, emit)
		if eerr != nil {
			return eerr
		}
		if err = reason; changed {
			c, err = f.parser.ParseReusing(r)
		}
	}
	if err == nil {
		f.kb, err = f.parser.AppendKey(f.kb[:0], c.Key)
	}
	if err == nil {
		f.body, err = row.AppendBody(f.body[:0], c.Row)
	}
	if err != nil {
		dead(DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: err.Error()})
		return nil
	}
	if f.expect != nil {
		// Past its limit, the key index (warming) resolves them.
		if f.expected.Append(f.kb); f.expected.Len() >= expectBatch {
			f.expectKeys()
		}
	}
	key := packetKey{win: win, shard: f.sharder.Shard(f.kb, c.Key)}
	p, ok := f.packets[key]
	if !ok {
		p = cdc.NewPacket(f.tbl.Schema().ID)
	}
	p = cdc.AppendChange(p, f.kb, c.Seq, c.Kind, f.body)
	if len(p) >= packetBytes {
		emit(mtime.FromMilliseconds(key.win), key.shard, p)
		delete(f.packets, key)
		return nil
	}
	f.packets[key] = p
	return nil
}

// evolve evolves the table so that it takes the row image of r, which failed to
// parse with parseErr. changed reports that the parser is now the new schema's (the
// packets of the old one are emitted first: they carry its id, see
// changeShardFn); otherwise reason is why r goes to the dead letter output.
func (f *changeParseFn) evolve(ctx context.Context, r row.Row, parseErr error, emit func(beam.EventTime, int, []byte)) (changed bool, reason, err error) {
	img, ierr := f.env.Data(r)
	if ierr != nil {
		return false, parseErr, nil
	}
	tbl, reason, err := evolveFor(ctx, &f.Spec, f.rt, f.Spec.Table, f.tbl, img, parseErr)
	if tbl == nil {
		return false, reason, err
	}
	parser, sharder, err := f.parseSchema(tbl)
	if err != nil {
		return false, nil, err
	}
	f.emitPackets(emit)
	f.tbl, f.parser, f.sharder = tbl, parser, sharder
	return true, nil, nil
}

// emitPackets emits the packets held, by window and shard.
func (f *changeParseFn) emitPackets(emit func(beam.EventTime, int, []byte)) {
	keys := slices.SortedFunc(maps.Keys(f.packets), func(a, b packetKey) int {
		if a.win != b.win {
			return cmp.Compare(a.win, b.win)
		}
		return a.shard - b.shard
	})
	for _, k := range keys {
		emit(mtime.FromMilliseconds(k.win), k.shard, f.packets[k])
	}
	f.packets = map[packetKey][]byte{}
}

// FinishBundle emits the remaining packets. Rows held because no row of the bundle
// could create the missing table go to the dead letter output. It starts the
// warm-up of the worker's key index when warm is set: started at the bundle's
// first row, the build took the processors the parsing needs (1M rows, 100k
// changes on 2 cores: 10% slower).
func (f *changeParseFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, int, []byte), dead func(DeadLetter)) error {
	for _, p := range f.pending {
		dead(DeadLetter{Row: p.r.String(), Table: f.Spec.Table, Reason: f.pendingErr.Error()})
	}
	f.pending = nil
	f.expectKeys()
	if f.warm {
		f.Spec.resolver().Warm(f.tbl)
		f.warm = false
	}
	f.emitPackets(emit)
	f.packets = nil
	return nil
}

// expectBatch is the number of parsed keys a batch pipeline's parse stage adds
// to the worker's expected keys at once.
const expectBatch = 4096

// expectKeys adds the keys parsed since the last call to the expected keys. When
// they go past their limit, the worker's key index resolves them: its warm-up
// starts when the bundle finishes.
func (f *changeParseFn) expectKeys() {
	if f.expect != nil && f.expected.Len() > 0 && f.expect.Add(&f.expected) {
		f.warm = true
	}
	f.expected.Reset()
}

// shardResult is what a merge-on-read shard hands to the committer for one window,
// besides the data files of its new rows (Part.Files).
type shardResult struct {
	// MaxSeq and MinSeq are the highest and lowest sequence numbers of the shard's
	// changes; BaseSeq is the highest the sink had committed when the shard ran
	// (noSeq when none or when its window was not committed yet).
	MaxSeq, MinSeq, BaseSeq int64
	// Resolution holds the keys to delete resolved to positions (DV mode).
	Resolution *cdc.EncodedResolution
	// DeleteKeys are the keys to delete (equality mode), see cdc.EncodeKeys.
	DeleteKeys [][]byte
}

// changeShardFn handles one shard's changes of one window: the Beam wrapper of
// cdc.ShardWindow, which sorts them (spilling past sorter_memory_mb), collapses each
// key to its net effect and, in DV mode, resolves the keys to delete to row
// positions. The new rows go to the table's writer (shardRows); the result and the
// new rows are emitted, keyed by table, as shardOut. It finds what the sink has
// committed of the window (its token, see committed): a window the sink has
// already committed is not written again.
//
// In a batch pipeline the shards of a bundle run side by side (shardJobs): each
// shard's changes are sorted on the bundle's goroutine, as its packets are read,
// then the rest of its window (collapse, resolve, new rows) runs on a goroutine of
// its own, up to GOMAXPROCS at once, and its outputs are emitted by the bundle's
// goroutine in a later call of the bundle (FinishBundle at the latest). A runner
// that runs a bundle's shards one after the other (prism does) would otherwise use
// one core. In a windowed pipeline (or rows in windows of their own) each shard
// runs inline, so its outputs keep the window and pane of its input.
type changeShardFn struct {
	Spec Spec

	rt   *runtime
	jobs *shardJobs
}

func (f *changeShardFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *changeShardFn) StartBundle(ctx context.Context, _ func(string, shardOut), _ func(DeadLetter)) {
	if f.jobs != nil {
		f.jobs.abandon() // a failed bundle's jobs
	}
	f.jobs = newShardJobs()
}

func (f *changeShardFn) ProcessElement(ctx context.Context, w beam.Window, shard int, packets func(*[]byte) bool, emit func(string, shardOut), dead func(DeadLetter)) error {
	win := commit.WindowEnd(w)
	// Outputs emitted in FinishBundle are in the global window: only shards of the
	// global window in a batch pipeline run on goroutines.
	_, global := w.(window.GlobalWindow)
	f.jobs.async = global && !f.Spec.Windowed
	handle := f.handler(ctx, emit, dead)
	if err := f.jobs.ready(handle); err != nil {
		return err
	}
	wrap := func(err error) error {
		return config.OpErrorf("write", f.Spec.Table, "shard %d of the window ending %d: %w", shard, win, err)
	}
	fail := func(err error) error {
		f.jobs.wait(handle) // the bundle fails: the other shards' jobs end first
		return wrap(err)
	}
	refresh := f.rt.refresh
	if f.Spec.EvolveSchema {
		refresh = 0 // the shard's packets may carry a schema newer than the cached one
	}
	tbl, err := catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, f.Spec.Table, refresh)
	if err != nil {
		return fail(err)
	}
	out := &shardResult{MinSeq: math.MaxInt64, BaseSeq: noSeq}
	committed, skip, err := f.committed(ctx, tbl, win, &out.BaseSeq)
	if err != nil {
		return fail(err)
	}
	if skip {
		emit(f.Spec.Table, shardOut{Result: Part{Changes: out}})
		return nil
	}
	sw, parser, err := f.sort(tbl, committed, packets, dead)
	if err != nil {
		return fail(err)
	}
	return f.jobs.run(func(send func(shardEvent)) error {
		part, err := f.finish(ctx, tbl, sw, parser, out, send)
		if err != nil {
			return wrap(err)
		}
		send(shardEvent{out: &shardOut{Result: part}})
		return nil
	}, handle)
}

// FinishBundle emits the outputs of the bundle's shards still running.
func (f *changeShardFn) FinishBundle(ctx context.Context, emit func(string, shardOut), dead func(DeadLetter)) error {
	return f.jobs.wait(f.handler(ctx, emit, dead))
}

// handler returns the function that emits a shard's outputs through emit and dead.
func (f *changeShardFn) handler(ctx context.Context, emit func(string, shardOut), dead func(DeadLetter)) func(shardEvent) {
	return func(e shardEvent) {
		switch {
		case e.out != nil:
			emit(f.Spec.Table, *e.out)
		case e.dead != nil:
			dead(*e.dead)
		case e.stats != nil:
			countShard(ctx, *e.stats)
		}
	}
}

// committed returns what the sink has committed of the window ending win, for
// cdc.ShardConfig (nil when the window is not committed), and sets *base to the
// highest sequence number the sink has committed. skip reports a window whose
// changes are not applied: a batch rerun of the sink (the committer reports the
// window skipped), or a window committed by a run whose snapshots have expired.
func (f *changeShardFn) committed(ctx context.Context, tbl *table.Table, win int64, base *int64) (c *cdc.Committed, skip bool, err error) {
	chk, err := commit.CheckWindow(tbl.Metadata(), table.MainBranch, commit.WindowRef{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID})
	if err != nil {
		return nil, false, err
	}
	tok, found := chk.Newest, chk.Found
	// Changes of a window the sink has committed (whatever the pane's timing says: a
	// runner may call the first pane of a shard on time although its window was
	// committed) are applied after later windows' changes: see cdc.Committed.
	if found && tok.CommittedThroughMs >= win {
		if !f.Spec.Windowed {
			return nil, true, nil
		}
		if tok.FromProperty {
			log.Warnf(ctx, "iceberg: write %s: sink %s committed through %d by a run whose snapshots have expired; the changes of the window ending %d are skipped",
				f.Spec.Table, f.Spec.SinkID, tok.CommittedThroughMs, win)
			commit.SkippedWithData.Inc(ctx, 1)
			return nil, true, nil
		}
		c = &cdc.Committed{}
		c.MaxSeq, c.PriorMax = committedSeqs(tok, found, f.Spec.SinkID, f.Spec.RunID)
		if win > tok.PriorThrough(f.Spec.SinkID, f.Spec.RunID) {
			c.PriorMax = noSeq // a window of this run: its changes are late, not replayed
		}
	}
	*base, _ = committedSeqs(tok, found, f.Spec.SinkID, f.Spec.RunID)
	return c, false, nil
}

// sort starts the shard's window (cdc.ShardWindow) and sorts the changes of
// packets into it; late changes go to dead.
func (f *changeShardFn) sort(tbl *table.Table, committed *cdc.Committed, packets func(*[]byte) bool, dead func(DeadLetter)) (*cdc.ShardWindow, *cdc.Parser, error) {
	parser, err := cdc.NewParser(f.Spec.Table, tbl.Schema(), f.rt.changes)
	if err != nil {
		return nil, nil, err
	}
	sw := cdc.NewShardWindow(cdc.ShardConfig{Table: tbl, Parser: parser, Upsert: f.Spec.Upsert,
		DeleteFormat: config.DeleteFormat(f.Spec.DeleteFormat), Resolver: f.Spec.resolver(),
		SorterMemory: int64(f.Spec.SorterMemoryMB) << 20, Committed: committed, SinkID: f.Spec.SinkID})
	out := cdc.ShardOutput{Dead: func(r row.Row, reason string) {
		dead(DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: reason})
	}}
	var p []byte
	for packets(&p) {
		if err := sw.Add(p, out); err != nil {
			sw.Close()
			if errors.Is(err, cdc.ErrUnknownSchema) {
				// The bundle fails; its retry loads the table afresh, not from the
				// cache (which would hold the older metadata up to its refresh).
				catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, f.Spec.Table)
			}
			return nil, nil, err
		}
	}
	return sw, parser, nil
}

// finish finishes the shard's window sw: its new rows go to the table's writer or
// the shard's own files (shardRows), they and its dead letters and counts to send.
// It fills out and returns the Part of the shard's result.
func (f *changeShardFn) finish(ctx context.Context, tbl *table.Table, sw *cdc.ShardWindow, parser *cdc.Parser, out *shardResult, send func(shardEvent)) (Part, error) {
	sc := tbl.Schema()
	rows := &shardRows{ctx: ctx, spec: f.Spec, rt: f.rt, tbl: tbl, rs: parser.Schema(), lineage: sw.Lineage(),
		emit: func(p []byte) { send(shardEvent{out: &shardOut{Rows: p}}) }}
	defer rows.release()
	res, err := sw.Finish(ctx, cdc.ShardOutput{Write: rows.add, Update: rows.addUpdate,
		Dead: func(r row.Row, reason string) {
			send(shardEvent{dead: &DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: reason}})
		}})
	send(shardEvent{stats: &res.Stats})
	if err != nil {
		return Part{}, err
	}
	out.MinSeq, out.MaxSeq = res.MinSeq, res.MaxSeq
	if res.Resolution != nil {
		enc, err := res.Resolution.Encode(sc, f.Spec.EqualityColumns)
		if err != nil {
			return Part{}, err
		}
		out.Resolution = &enc
	} else if len(res.DeleteKeys) > 0 {
		if out.DeleteKeys, err = cdc.EncodeKeys(sc, f.Spec.EqualityColumns, res.DeleteKeys); err != nil {
			return Part{}, err
		}
	}
	written, err := rows.close()
	if err != nil {
		return Part{}, err
	}
	files, err := datafile.Encode(tbl.Metadata(), written)
	return Part{Files: files, Changes: out}, err
}

// shardEvent is one output of a shard's window for the bundle's goroutine to
// emit (out, dead, or stats to count), or the end of its job (done, with its
// error).
type shardEvent struct {
	out   *shardOut
	dead  *DeadLetter
	stats *cdc.ShardStats
	done  bool
	err   error
}

// shardJobs runs the shard windows of one bundle of changeShardFn: on goroutines,
// up to GOMAXPROCS at once, when async (set for each element), else inline.
// Outputs of the goroutines reach the bundle's goroutine as shardEvents (Beam's
// emitters are not safe for concurrent use), which hands them to the handler of
// its current call.
type shardJobs struct {
	async   bool
	limit   int
	running int
	events  chan shardEvent
	err     error // the first job's error
}

func newShardJobs() *shardJobs {
	return &shardJobs{limit: goruntime.GOMAXPROCS(0), events: make(chan shardEvent, 64)}
}

// ready waits until a job can start: until fewer than limit run, handling the
// outputs sent meanwhile. It returns the error of a job that failed (after waiting
// for the others): then no job may start.
func (j *shardJobs) ready(handle func(shardEvent)) error {
	if !j.async {
		return nil
	}
	for j.running >= j.limit && j.err == nil {
		j.handle(<-j.events, handle)
	}
	for drained := false; !drained && j.err == nil; {
		select {
		case e := <-j.events:
			j.handle(e, handle)
		default:
			drained = true
		}
	}
	if j.err != nil {
		return j.wait(handle)
	}
	return nil
}

// run runs job, which sends its outputs with send: on a goroutine when async
// (call ready first), else inline, straight to handle.
func (j *shardJobs) run(job func(send func(shardEvent)) error, handle func(shardEvent)) error {
	if !j.async {
		return job(handle)
	}
	j.running++
	go func() {
		var err error
		defer func() {
			// A panic fails the bundle, as on the bundle's goroutine, rather than
			// the worker process.
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in a shard window: %v\n%s", p, debug.Stack())
			}
			j.events <- shardEvent{done: true, err: err}
		}()
		err = job(func(e shardEvent) { j.events <- e })
	}()
	return nil
}

// wait handles the outputs of the running jobs until they are all done, and
// returns the first error of a job.
func (j *shardJobs) wait(handle func(shardEvent)) error {
	for j.running > 0 {
		j.handle(<-j.events, handle)
	}
	err := j.err
	j.err = nil
	return err
}

func (j *shardJobs) handle(e shardEvent, handle func(shardEvent)) {
	if !e.done {
		handle(e)
		return
	}
	j.running--
	if e.err != nil && j.err == nil {
		j.err = e.err
	}
}

// abandon lets the jobs of a bundle that failed end: their outputs are dropped.
func (j *shardJobs) abandon() {
	if j.running == 0 {
		return
	}
	go func() {
		for j.running > 0 {
			if e := <-j.events; e.done {
				j.running--
			}
		}
	}()
}

// countShard adds a shard window's counts to the write's metrics. A count of 0
// is not reported: prism (v2.78.0) keeps one payload per metric it does not know
// yet, so the 0 of a bundle that finished while it asked the worker about the
// metric replaced the count of the bundle before (the key counters of a batch
// run, whose one scan is counted by one shard, read 0 in about half the runs).
func countShard(ctx context.Context, s cdc.ShardStats) {
	for _, c := range []struct {
		c beam.Counter
		n int64
	}{
		{ReplayedSkipped, s.Replayed}, {LateDead, s.LateDead}, {LatePassed, s.LatePassed},
		{AmbiguousChanges, s.Ambiguous}, {SorterSpills, int64(s.Spills)}, {SpilledBytes, s.SpilledBytes},
		{KeyFilesRead, int64(s.KeyFilesRead)}, {KeyBytesRead, s.KeyBytesRead},
		{KeyIndexSpillRead, s.KeySpillRead}, {KeyIndexBuildMs, s.KeyIndexTime.Milliseconds()},
	} {
		if c.n != 0 {
			c.c.Inc(ctx, c.n)
		}
	}
}

// shardRowsToWriters is how many bytes of new rows one shard hands, per window, to
// its table's writer (morWriteFn), which writes the rows of a window from all shards
// into as few files as their size needs. Past it the shard writes the rest itself:
// its files are big enough to stand alone.
var shardRowsToWriters int64 = 32 << 20

// shardRows takes a shard's new rows of one window (packed bodies in the parser's
// schema, which is the table schema's top-level columns): packets go to the table's
// writer through emit, up to shardRowsToWriters bytes, and the rest to the shard's
// own data files. With row lineage, updated rows carry the _row_id of the row they
// replace (addUpdate): they travel in lineage packets, whose rows are in the
// schema of the table's columns and _row_id (see lineageSchema).
type shardRows struct {
	ctx     context.Context
	spec    Spec
	rt      *runtime
	tbl     *table.Table
	rs      *row.Schema
	lineage bool // rows may carry _row_id: the shard's own files store it
	emit    func([]byte)
	sent    int64
	packet  []byte            // rows in rs
	lpacket []byte            // rows in lineageSchema
	lrs     *row.Schema       // lineageSchema's
	bb      *row.BatchBuilder // direct writes, once past shardRowsToWriters
	fw      *datafile.Writer
}

// rowLineage reports whether merge-on-read updates of tbl keep the _row_id of the
// row they replace (see cdc.RowLineage).
func rowLineage(tbl *table.Table, spec Spec) bool {
	return cdc.RowLineage(tbl, config.DeleteFormat(spec.DeleteFormat), spec.EqualityColumns)
}

// packetHeader starts a packet of new rows: the table schema id, and whether the
// rows carry _row_id.
func packetHeader(schemaID int, lineage bool) []byte {
	h := uint64(schemaID) << 1
	if lineage {
		h |= 1
	}
	return binary.AppendUvarint(nil, h)
}

// readPacketHeader returns what packetHeader wrote and its length.
func readPacketHeader(p []byte) (schemaID int, lineage bool, n int) {
	h, n := binary.Uvarint(p)
	return int(h >> 1), h&1 == 1, n
}

// add takes one packed row.
func (s *shardRows) add(body []byte) error {
	if s.bb != nil {
		r, _, err := row.DecodeBody(s.rs, body)
		if err != nil {
			return err
		}
		return s.write(r)
	}
	if s.packet == nil {
		s.packet = packetHeader(s.tbl.Schema().ID, false)
	}
	s.packet = append(s.packet, body...)
	return s.sendFull(&s.packet)
}

// sendFull sends *p once full, and switches to direct writes once enough rows went
// to the writer.
func (s *shardRows) sendFull(p *[]byte) error {
	if len(*p) >= packetBytes {
		s.send(p)
	}
	if s.sent < shardRowsToWriters {
		return nil
	}
	// Enough for the writer: the shard writes the rest of its rows itself.
	s.send(&s.packet)
	s.send(&s.lpacket)
	sc := s.tbl.Schema()
	if s.lineage {
		sc = datafile.LineageSchema(sc)
	}
	var err error
	s.bb, err = row.NewBatchBuilder(sc, memory.DefaultAllocator)
	return err
}

func (s *shardRows) send(p *[]byte) {
	if *p == nil {
		return
	}
	s.emit(*p)
	s.sent += int64(len(*p))
	*p = nil
}

// addUpdate takes a new row that replaces a committed row (packed in rs), with
// the _row_id of that row when hasID: see cdc.ShardOutput.Update.
func (s *shardRows) addUpdate(body []byte, rowID int64, hasID bool) error {
	if !s.lineage {
		return errors.New("row lineage: an update without lineage")
	}
	if s.lrs == nil {
		s.lrs = row.SchemaOf(datafile.LineageSchema(s.tbl.Schema()))
	}
	var id any
	if hasID {
		id = rowID
	}
	if s.bb != nil {
		r, _, err := row.DecodeBody(s.rs, body)
		if err != nil {
			return err
		}
		return s.write(row.Of(s.lrs, append(slices.Clip(r.Values()), id)))
	}
	if s.lpacket == nil {
		s.lpacket = packetHeader(s.tbl.Schema().ID, true)
	}
	// The packed row with its _row_id appended, as lineageSchema's last column.
	var err error
	if s.lpacket, err = row.AppendBodyWith(s.lpacket, body, s.lrs, id); err != nil {
		return err
	}
	return s.sendFull(&s.lpacket)
}

// write adds r to the shard's own data files.
func (s *shardRows) write(r row.Row) error {
	if err := s.bb.AppendRow(r); err != nil {
		return fmt.Errorf("row %s: %w", r, err)
	}
	if s.bb.Len() >= batchRows {
		return s.flush()
	}
	return nil
}

func (s *shardRows) flush() error {
	if s.bb == nil || s.bb.Len() == 0 {
		return nil
	}
	if s.fw == nil {
		var err error
		if s.fw, err = datafile.NewWriter(s.ctx, s.tbl, s.bb.ArrowSchema(), s.spec.fileOptions(s.rt)); err != nil {
			return err
		}
	}
	return s.fw.Write(s.bb.NewBatch())
}

// close sends the remaining packets and returns the shard's own data files.
func (s *shardRows) close() ([]ibg.DataFile, error) {
	s.send(&s.packet)
	s.send(&s.lpacket)
	if err := s.flush(); err != nil {
		return nil, err
	}
	if s.bb != nil {
		s.bb.Release()
		s.bb = nil
	}
	if s.fw == nil {
		return nil, nil
	}
	fw := s.fw
	s.fw = nil
	return fw.Close()
}

// release stops the shard's writer (after an error) and frees its batch.
func (s *shardRows) release() {
	if s.fw != nil {
		s.fw.Close()
		s.fw = nil
	}
	if s.bb != nil {
		s.bb.Release()
		s.bb = nil
	}
}

// shardOut is one element a merge-on-read shard hands to its table's writer for a
// window: a packet of new rows (Rows: the table schema id, then packed rows), or its
// result (Result). A shard emits both from one call, so the writer gets a shard's
// result and its rows in the same pane (a bundle's outputs are committed together),
// and commits them together: a late pane's deletes never land without its inserts.
type shardOut struct {
	Rows   []byte
	Result Part
}

// morWriteFn writes the new rows of one table's shards of one pane to data files
// and emits the shards' results and a Part with those files, from one call, so that
// the commit step receives them in one pane.
type morWriteFn struct {
	Spec Spec

	rt *runtime
}

func (f *morWriteFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *morWriteFn) ProcessElement(ctx context.Context, dest string, outs func(*shardOut) bool, emit func(string, Part), dead func(DeadLetter)) error {
	var results []Part
	files, err := writePackets(ctx, f.Spec, f.rt, dest, func(yield func([]byte) bool) {
		var o shardOut
		for outs(&o) {
			if o.Rows == nil {
				results = append(results, o.Result)
			} else if !yield(o.Rows) {
				return
			}
			o = shardOut{}
		}
	}, dead)
	if err != nil {
		return err
	}
	for _, r := range results {
		emit(dest, r)
	}
	if len(files) > 0 {
		emit(dest, Part{Files: files})
	}
	return nil
}

// commit commits one pane: the shard results of one window (or one late pane).
func (f *commitFn) commitChanges(ctx context.Context, dest string, p Pane, emit func(commit.SnapshotInfo)) error {
	fail := func(err error) error { return config.WrapOp("commit", dest, err) }
	ident, err := catalogs.ParseIdent(dest)
	if err != nil {
		return fail(err)
	}
	cat, err := catalogs.Get(ctx, f.Spec.CatalogName, f.rt.catProps)
	if err != nil {
		return fail(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fail(err)
	}
	w := changeWindow{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, WindowEndMs: p.WindowEndMs, LateID: p.LateID, ContentID: p.ContentIDFor(f.Spec.Windowed),
		SnapshotProps: f.rt.snapshotProps,
		Deletes:       cdc.Deletes{KeyColumns: f.Spec.EqualityColumns, Format: config.DeleteFormat(f.Spec.DeleteFormat), Resolver: f.Spec.resolver()}}
	chk, err := commit.CheckWindow(tbl.Metadata(), table.MainBranch, commit.WindowRef{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID})
	if err != nil {
		return fail(err)
	}
	committedMax, _ := committedSeqs(chk.Newest, chk.Found, f.Spec.SinkID, f.Spec.RunID)
	unordered := 0
	for _, part := range p.Parts {
		files, err := datafile.Decode(tbl.Metadata(), part.Files)
		if err != nil {
			return fail(err)
		}
		w.DataFiles = append(w.DataFiles, files...)
		r := part.Changes
		if r == nil {
			continue // the files of morWriteFn
		}
		w.MaxSeq = max(w.MaxSeq, r.MaxSeq)
		if committedMax > r.BaseSeq && r.MinSeq <= committedMax {
			// The shard ran before a commit of changes newer than some of its own (a late
			// pane that raced its window's commit): its changes are applied after them.
			unordered++
		}
		if r.Resolution != nil {
			res, err := r.Resolution.Decode()
			if err != nil {
				return fail(err)
			}
			w.Deletes.Resolved = append(w.Deletes.Resolved, res)
		}
		keys, err := cdc.DecodeKeys(r.DeleteKeys)
		if err != nil {
			return fail(err)
		}
		w.Deletes.Keys = append(w.Deletes.Keys, keys...)
	}
	w.Deletes.Resolved = cdc.MergeResolutions(w.Deletes.Resolved)
	if unordered > 0 {
		LateUnordered.Inc(ctx, int64(unordered))
		log.Warnf(ctx, "iceberg: commit %s: %d shard results of the window ending %d were made before the sink committed changes newer than some of theirs (late changes that raced their window's commit); they are applied after those changes",
			dest, unordered, p.WindowEndMs)
	}
	res, err := commitWindowChanges(ctx, commit.Committer{}, cat, ident, w)
	if err != nil {
		return err
	}
	if !res.Skipped {
		if merged, err := maintain.MergeManifests(ctx, cat, ident); err != nil {
			log.Warnf(ctx, "iceberg: commit %s: merge data manifests: %v (tried again after the next commit)", dest, err)
		} else if merged {
			ManifestMerges.Inc(ctx, 1)
		}
	}
	catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
	recordCommit(ctx, res, p.WindowEndMs, !p.Global)
	Reresolutions.Inc(ctx, int64(res.Reresolved))
	emit(commit.SnapshotInfo{Table: dest, SnapshotID: res.SnapshotID, SequenceNumber: res.SequenceNumber,
		Operation: res.Operation, FilesAdded: res.FilesAdded, RowsAdded: res.RowsAdded,
		SinkID: f.Spec.SinkID, Skipped: res.Skipped, WindowEndMs: p.WindowEndMs, Late: p.LateID != "" || res.LateID != "",
		DeleteFilesAdded: res.DeleteFilesAdded, DVsRemoved: int64(res.DVsRemoved),
		PositionsDeleted: res.PositionsDeleted, EqualityDeletesAdded: res.EqualityDeletesAdded})
	return nil
}

func init() {
	register.DoFn5x1[context.Context, beam.Window, beam.T, func(beam.EventTime, int, []byte), func(DeadLetter), error](&changeParseFn{})
	beam.RegisterType(reflect.TypeFor[changeShardFn]())
	beam.RegisterType(reflect.TypeFor[morWriteFn]())
	beam.RegisterType(reflect.TypeFor[shardOut]())
	register.Emitter2[string, shardOut]()
	register.Iter1[shardOut]()
	register.Emitter1[DeadLetter]()
	register.Emitter1[commit.SnapshotInfo]()
	register.Emitter3[beam.EventTime, int, []byte]()
	register.Iter1[[]byte]()
}
