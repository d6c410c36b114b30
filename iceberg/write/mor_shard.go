package write

import (
	"context"
	"errors"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

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
// A shard's window is three steps: committed, sort (on the bundle's goroutine,
// as its packets are read) and finish (collapse, resolve, new rows), which the
// bundle's shardScheduler runs on a goroutine of its own in a batch pipeline.
type changeShardFn struct {
	Spec Spec

	rt    *runtime
	sched *shardScheduler
}

func (f *changeShardFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *changeShardFn) StartBundle(ctx context.Context, _ func(string, shardOut), _ func(DeadLetter)) {
	if f.sched != nil {
		f.sched.abandon() // a failed bundle's jobs
	}
	f.sched = newShardScheduler()
}

func (f *changeShardFn) ProcessElement(ctx context.Context, w beam.Window, shard int, packets func(*[]byte) bool, emit func(string, shardOut), dead func(DeadLetter)) error {
	win := commit.WindowEnd(w)
	// Outputs emitted in FinishBundle are in the global window: only shards of the
	// global window in a batch pipeline run on goroutines.
	_, global := w.(window.GlobalWindow)
	f.sched.async = global && !f.Spec.Windowed
	handle := f.handler(ctx, emit, dead)
	if err := f.sched.ready(handle); err != nil {
		return err
	}
	wrap := func(err error) error {
		return config.OpErrorf("write", f.Spec.Table, "shard %d of the window ending %d: %w", shard, win, err)
	}
	fail := func(err error) error {
		f.sched.wait(handle) // the bundle fails: the other shards' jobs end first
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
	return f.sched.run(func(send func(shardEvent)) error {
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
	return f.sched.wait(f.handler(ctx, emit, dead))
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

// shardOut is one element a merge-on-read shard hands to its table's writer for a
// window: a packet of new rows (Rows: the table schema id, then packed rows), or its
// result (Result). A shard emits both from one call, so the writer gets a shard's
// result and its rows in the same pane (a bundle's outputs are committed together),
// and commits them together: a late pane's deletes never land without its inserts.
type shardOut struct {
	Rows   []byte
	Result Part
}

func init() {
	beam.RegisterType(reflect.TypeFor[changeShardFn]())
	beam.RegisterType(reflect.TypeFor[shardOut]())
	register.Emitter2[string, shardOut]()
	register.Iter1[[]byte]()
}
