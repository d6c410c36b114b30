package write

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/late"
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
	// Join is set when the key join resolves the keys (see keyjoin): the worker
	// expects none, and warms its key index only when the keys it parses go past
	// the join's limit (the shards then resolve them as without the join).
	Join bool

	rt      *runtime
	env     *cdc.Envelope
	tbl     *table.Table
	gate    *late.Gate
	parser  *cdc.Parser
	sharder *cdc.Sharder
	// expect collects the keys parsed by a batch pipeline's worker without the
	// key join, which its shards then resolve by one scan of the table
	// (cdc.Expected); nil with the join and in a streaming pipeline, whose
	// worker builds its key index instead. The keys are added to it in batches
	// (expected), at the latest when the bundle finishes.
	expect   *cdc.Expected
	expected cdc.KeyBatch
	// joinLimit is the join's limit of keys (DV mode, with Join); parsed counts
	// the changes the DoFn instance has parsed.
	joinLimit, parsed int64
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
// (expectKeys). With the key join (Join), the worker expects no keys: the join
// resolves them all.
func (f *changeParseFn) planKeys(tbl *table.Table) error {
	format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(f.Spec.DeleteFormat), f.Spec.EqualityColumns)
	if err != nil || format != config.DeleteFormatDV {
		return nil
	}
	if f.Spec.Windowed {
		f.warm = true
	} else if f.Join {
		f.joinLimit, f.parsed = f.Spec.resolver().IndexBytes/cdc.ExpectedKeyBytes, 0
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
	if f.joinLimit > 0 {
		// Past the join's limit, the key index (warming) resolves them.
		if f.parsed++; f.parsed == f.joinLimit+1 {
			f.warm = true
		}
	} else if f.expect != nil {
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

func init() {
	register.DoFn5x1[context.Context, beam.Window, beam.T, func(beam.EventTime, int, []byte), func(DeadLetter), error](&changeParseFn{})
	register.Emitter3[beam.EventTime, int, []byte]()
	register.Emitter1[DeadLetter]()
}
