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
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// changeParseFn validates change rows (rejects go to the dead letter output; tombstones,
// see cdc.ErrTombstone, are skipped and counted), finds each
// key's shard and packs the parsed changes by (window, shard) into packets, emitted
// keyed by shard, timestamped in their window, when full and at the end of the bundle. It loads
// the table on its first row, creating it from the first row whose schema can be
// inferred (no null value) when missing.
type changeParseFn struct {
	Spec Spec

	rt      *runtime
	env     *cdc.Envelope
	tbl     *table.Table
	gate    *LateGate
	parser  *cdc.Parser
	sharder *cdc.Sharder
	packets map[packetKey][]byte
	kb      []byte
	body    []byte
	// pending rows wait for the table to be created (see ProcessElement).
	pending    []pendingRow
	pendingErr error
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
	f.env, err = f.Spec.envelope(f.rt)
	return err
}

// StartBundle resets the packets (its emitters mirror ProcessElement's outputs).
func (f *changeParseFn) StartBundle(ctx context.Context, _ func(beam.EventTime, int, []byte), _ func(DeadLetter)) {
	f.packets = map[packetKey][]byte{}
	f.pending = nil
}

// open loads the table, or creates it from r. A non-nil reject is a reason to
// dead-letter r; err fails the bundle.
func (f *changeParseFn) open(ctx context.Context, r row.Row) (reject, err error) {
	name := f.Spec.Table
	tbl, err := catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, name, f.rt.refresh)
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
			return fmt.Errorf("cannot create table %s from this row: %w", name, ierr), nil
		}
		ident, perr := catalogs.ParseIdent(name)
		if perr != nil {
			return nil, perr
		}
		var rej error
		if tbl, rej, err = createTable(ctx, &f.Spec, f.rt, name, ident, sc); rej != nil {
			return rej, nil
		}
	}
	if err != nil {
		return nil, config.WrapOp("write", name, err)
	}
	if f.parser, err = f.Spec.parser(f.rt, tbl.Schema()); err != nil {
		return nil, config.WrapOp("write", name, err)
	}
	if f.sharder, err = cdc.NewSharder(tbl, f.Spec.EqualityColumns, f.Spec.NumShards, f.Spec.ShardsPerPartition); err != nil {
		f.parser = nil
		return nil, config.WrapOp("write", name, err)
	}
	f.tbl = tbl
	if format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(f.Spec.DeleteFormat), f.Spec.EqualityColumns); err == nil && format == config.DeleteFormatDV {
		// The shards resolve keys with the worker's key index: build it while the
		// window's changes are parsed and shuffled (a cold worker's first window).
		f.Spec.resolver().Warm(tbl)
	}
	return nil, nil
}

func (f *changeParseFn) ProcessElement(ctx context.Context, w beam.Window, r row.Row, emit func(beam.EventTime, int, []byte), dead func(DeadLetter)) error {
	if f.env.IsTombstone(r) {
		TombstonesSkipped.Inc(ctx, 1)
		return nil
	}
	win := WindowEnd(w)
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
	if f.Spec.Windowed {
		cat, err := catalogs.Get(ctx, f.Spec.CatalogName, f.rt.catProps)
		if err != nil {
			return err
		}
		if f.gate == nil {
			f.gate = &LateGate{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, LatenessMs: f.Spec.LatenessMs}
		}
		// Rows of windows already committed pass on to the shards, which apply a change
		// only when it is newer than every change committed (see changeShardFn).
		v, reason, _, err := f.gate.Check(ctx, cat, f.Spec.Table, f.tbl.Identifier(), w)
		if err != nil {
			return err
		}
		if v == TooLate {
			LateDead.Inc(ctx, 1)
			dead(DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: reason})
			return nil
		}
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
	c, err := f.parser.Parse(r)
	if err != nil && f.Spec.EvolveSchema {
		changed, reason, eerr := f.evolve(ctx, r, err, emit)
		if eerr != nil {
			return eerr
		}
		if err = reason; changed {
			c, err = f.parser.Parse(r)
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
	tbl, reject, err := evolveFor(ctx, &f.Spec, f.rt, f.Spec.Table, f.tbl, img)
	switch {
	case err != nil:
		return false, nil, err
	case reject != nil:
		return false, reject, nil
	case tbl == nil:
		return false, parseErr, nil
	}
	parser, err := f.Spec.parser(f.rt, tbl.Schema())
	if err != nil {
		return false, nil, config.WrapOp("write", f.Spec.Table, err)
	}
	sharder, err := cdc.NewSharder(tbl, f.Spec.EqualityColumns, f.Spec.NumShards, f.Spec.ShardsPerPartition)
	if err != nil {
		return false, nil, config.WrapOp("write", f.Spec.Table, err)
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
// could create the missing table go to the dead letter output.
func (f *changeParseFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, int, []byte), dead func(DeadLetter)) error {
	for _, p := range f.pending {
		dead(DeadLetter{Row: p.r.String(), Table: f.Spec.Table, Reason: f.pendingErr.Error()})
	}
	f.pending = nil
	f.emitPackets(emit)
	f.packets = nil
	return nil
}

// ShardResult is what a merge-on-read shard hands to the committer for one window,
// besides the data files of its new rows (Part.Files).
type ShardResult struct {
	// MaxSeq and MinSeq are the highest and lowest sequence numbers of the shard's
	// changes; BaseSeq is the highest the sink had committed when the shard ran
	// (noSeq when none or when its window was not committed yet).
	MaxSeq, MinSeq, BaseSeq int64
	// Resolution holds the keys to delete resolved to positions (DV mode).
	Resolution *cdc.EncodedResolution
	// DeleteKeys are the keys to delete (equality mode), see cdc.EncodeKeys.
	DeleteKeys [][]byte
}

// changeShardFn handles one shard's changes of one window: it sorts them (spilling past
// sorter_memory_mb), collapses each key to its net effect, hands the new rows to its
// table's writer (shardRows) and, in DV mode, resolves the keys to delete to row
// positions. It emits its result and its new rows, keyed by table, as shardOut. A
// window the sink has already committed is not written again.
type changeShardFn struct {
	Spec Spec

	rt *runtime
}

func (f *changeShardFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *changeShardFn) ProcessElement(ctx context.Context, w beam.Window, shard int, packets func(*[]byte) bool, emit func(string, shardOut), dead func(DeadLetter)) error {
	name := f.Spec.Table
	win := WindowEnd(w)
	fail := func(err error) error {
		return config.OpErrorf("write", name, "shard %d of the window ending %d: %w", shard, win, err)
	}
	out := ShardResult{MinSeq: math.MaxInt64, BaseSeq: noSeq}
	var files []EncodedDataFile
	refresh := f.rt.refresh
	if f.Spec.EvolveSchema {
		refresh = 0 // the shard's packets may carry a schema newer than the cached one
	}
	tbl, err := catalogs.LoadTable(ctx, f.Spec.CatalogName, f.rt.catProps, name, refresh)
	if err != nil {
		return fail(err)
	}
	_, _, tok, found, _, err := CheckWindow(tbl.Metadata(), table.MainBranch, WindowRef{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID})
	if err != nil {
		return fail(err)
	}
	// Changes of a window the sink has committed (whatever the pane's timing says: a
	// runner may call the first pane of a shard on time although its window was
	// committed) are applied after later windows' changes: only those newer than
	// every change the sink has committed keep their order. Of the others, those an
	// earlier run committed (a restart's replay) are skipped, and the rest cannot be
	// applied correctly and go to the dead letter output.
	maxCommitted, priorMax := noSeq, noSeq
	if found && tok.CommittedThroughMs >= win && !f.Spec.Windowed {
		// A batch rerun of this sink: the committer reports the window skipped.
		emit(f.Spec.Table, shardOut{Result: Part{Files: files, Changes: &out}})
		return nil
	}
	if found && tok.CommittedThroughMs >= win {
		maxCommitted, priorMax = committedSeqs(tok, found, f.Spec.SinkID, f.Spec.RunID)
		if win > tok.PriorThrough(f.Spec.SinkID, f.Spec.RunID) {
			priorMax = noSeq // a window of this run: its changes are late, not replayed
		}
		if tok.FromProperty {
			log.Warnf(ctx, "iceberg: write %s: sink %s committed through %d by a run whose snapshots have expired; the changes of the window ending %d are skipped",
				name, f.Spec.SinkID, tok.CommittedThroughMs, win)
			SkippedWithData.Inc(ctx, 1)
			emit(f.Spec.Table, shardOut{Result: Part{Files: files, Changes: &out}})
			return nil
		}
	}
	out.BaseSeq, _ = committedSeqs(tok, found, f.Spec.SinkID, f.Spec.RunID)
	sc := tbl.Schema()
	parser, err := cdc.NewParser(name, sc, f.rt.changes)
	if err != nil {
		return fail(err)
	}
	sorter := cdc.NewSorterMB(f.Spec.SorterMemoryMB)
	defer sorter.Close()
	schemas := map[int]*row.Schema{}
	var p, conv []byte
	for packets(&p) {
		// Rows parsed with an older table schema (the table evolved during the run)
		// are re-encoded in the current one.
		var from *row.Schema
		if id, err := cdc.PacketSchema(p); err != nil {
			return fail(err)
		} else if id != sc.ID {
			if from = schemas[id]; from == nil {
				old, ok := tbl.Schemas()[id]
				if !ok {
					return fail(fmt.Errorf("table has no schema %d", id))
				}
				from = row.SchemaOf(old)
				schemas[id] = from
			}
		}
		_, err := cdc.ReadPacket(p, func(key []byte, seq int64, kind cdc.Kind, body []byte) error {
			if seq <= priorMax {
				ReplayedSkipped.Inc(ctx, 1)
				return nil
			}
			if seq <= maxCommitted {
				LateDead.Inc(ctx, 1)
				return f.deadLate(dead, from, parser, body, seq, maxCommitted)
			}
			if maxCommitted != noSeq {
				LatePassed.Inc(ctx, 1) // a late change applied
			}
			out.MinSeq = min(out.MinSeq, seq)
			if from != nil {
				r, _, err := row.DecodeBody(from, body)
				if err != nil {
					return err
				}
				vals, err := row.RowValues(r, sc)
				if err != nil {
					return err
				}
				if conv, err = row.AppendBody(conv[:0], row.Of(parser.Schema(), vals)); err != nil {
					return err
				}
				body = conv
			}
			return sorter.Add(key, seq, kind, body)
		})
		if err != nil {
			return fail(err)
		}
	}
	rows := &shardRows{ctx: ctx, spec: f.Spec, rt: f.rt, tbl: tbl, rs: parser.Schema(),
		emit: func(p []byte) { emit(f.Spec.Table, shardOut{Rows: p}) }}
	defer rows.release()
	// With row lineage (format version 3, deletion vectors) an updated key's new row
	// keeps the _row_id of the row it replaces: those rows wait in updates until the
	// keys are resolved.
	var updates *heldUpdates
	if rowLineage(tbl, f.Spec) {
		updates = &heldUpdates{rows: cdc.NewSorterMB(f.Spec.SorterMemoryMB)}
		defer updates.rows.Close()
		rows.lineage = true
	}
	deleteKeys, maxSeq, err := f.collapse(ctx, parser, sorter, rows, updates, dead)
	if err != nil {
		return fail(err)
	}
	SorterSpills.Inc(ctx, int64(sorter.Spills()))
	SpilledBytes.Inc(ctx, sorter.SpilledBytes())
	out.MaxSeq = maxSeq
	if len(deleteKeys) > 0 {
		format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(f.Spec.DeleteFormat), f.Spec.EqualityColumns)
		if err != nil {
			return fail(err)
		}
		if format == config.DeleteFormatDV {
			res, err := f.Spec.resolver().Resolve(ctx, tbl, deleteKeys)
			if err != nil {
				return fail(err)
			}
			KeyFilesRead.Inc(ctx, int64(len(res.Scanned)))
			KeyBytesRead.Inc(ctx, res.KeyBytes)
			KeyIndexSpillRead.Inc(ctx, res.SpillBytes)
			if updates != nil && len(updates.keys) > 0 {
				if err := rows.addUpdates(res, len(deleteKeys), updates); err != nil {
					return fail(err)
				}
			}
			enc, err := res.Encode(sc, f.Spec.EqualityColumns)
			if err != nil {
				return fail(err)
			}
			out.Resolution = &enc
		} else if out.DeleteKeys, err = cdc.EncodeKeys(sc, f.Spec.EqualityColumns, deleteKeys); err != nil {
			return fail(err)
		}
	}
	written, err := rows.close()
	if err != nil {
		return fail(err)
	}
	if files, err = EncodeDataFiles(tbl.Metadata(), written); err != nil {
		return fail(err)
	}
	emit(f.Spec.Table, shardOut{Result: Part{Files: files, Changes: &out}})
	return nil
}

// deadLate dead-letters a late change (body, in schema from, or the parser's when
// nil) whose sequence number seq is not above maxCommitted.
func (f *changeShardFn) deadLate(dead func(DeadLetter), from *row.Schema, parser *cdc.Parser, body []byte, seq, maxCommitted int64) error {
	sc := from
	if sc == nil {
		sc = parser.Schema()
	}
	r, _, err := row.DecodeBody(sc, body)
	if err != nil {
		return err
	}
	dead(DeadLetter{Row: r.String(), Table: f.Spec.Table, Reason: fmt.Sprintf(
		"late: the change arrived after its window was committed and its sequence number %d is not above %d, the highest sink %s has committed; applying it now could undo a newer change",
		seq, maxCommitted, f.Spec.SinkID)})
	return nil
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
// replace (addUpdates): they travel in lineage packets, whose rows are in the
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
	bb      *row.BatchBuilder // direct writes, once past shardRowsToWriters
	fw      *FileWriter
}

// rowLineage reports whether merge-on-read updates of tbl keep the _row_id of the
// row they replace: on format version 3 with deletion vectors, which resolve the
// replaced row (equality deletes do not).
func rowLineage(tbl *table.Table, spec Spec) bool {
	if tbl.Metadata().Version() < 3 {
		return false
	}
	format, err := cdc.ResolveFormat(tbl, config.DeleteFormat(spec.DeleteFormat), spec.EqualityColumns)
	return err == nil && format == config.DeleteFormatDV
}

// lineageSchema returns sc with the _row_id column (iceberg-go's row lineage
// schema without _last_updated_sequence_number: rows written without it take the
// data file's sequence number, which is what an updated row needs).
func lineageSchema(sc *ibg.Schema) *ibg.Schema {
	return ibg.SchemaWithRowLineageColumns(sc, true, false)
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
		sc = lineageSchema(sc)
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

// heldUpdates are the new rows that replace a committed row, held by
// changeShardFn.collapse until their keys are resolved.
type heldUpdates struct {
	rows *cdc.Sorter // under the index of their key in deleteKeys (as sequence number)
	keys []int32     // those indexes, ascending
}

// add holds the packed row body of the key at index k of deleteKeys.
func (u *heldUpdates) add(key []byte, k int, body []byte) error {
	u.keys = append(u.keys, int32(k))
	return u.rows.Add(key, int64(k), cdc.UpdateAfter, body)
}

// addUpdates adds the rows held in updates (see changeShardFn.collapse), each with
// the _row_id of the row its key resolved to in res (null when it has none); nkeys
// is the number of keys resolved.
func (s *shardRows) addUpdates(res *cdc.Resolution, nkeys int, updates *heldUpdates) error {
	if !s.lineage {
		return errors.New("row lineage: updates held without lineage")
	}
	if len(res.Keys) != nkeys {
		return fmt.Errorf("row lineage: %d keys resolved, want %d", len(res.Keys), nkeys)
	}
	fs, err := s.tbl.FS(s.ctx)
	if err != nil {
		return err
	}
	// Only the files holding an updated key are read for _row_id, not those whose
	// keys are all deleted.
	ids, err := res.RowIDs(s.ctx, fs, func(k int32) bool {
		_, found := slices.BinarySearch(updates.keys, k)
		return found
	})
	if err != nil {
		return err
	}
	lrs := row.SchemaOf(lineageSchema(s.tbl.Schema()))
	var body []byte
	for rec, err := range updates.rows.Sorted() {
		if err != nil {
			return err
		}
		r, _, err := row.DecodeBody(s.rs, rec.Row)
		if err != nil {
			return err
		}
		var id any
		if v, ok := ids[int32(rec.Seq)]; ok {
			id = v
		}
		lr := row.Of(lrs, append(slices.Clip(r.Values()), id))
		if s.bb != nil {
			if err := s.write(lr); err != nil {
				return err
			}
			continue
		}
		if body, err = row.AppendBody(body[:0], lr); err != nil {
			return err
		}
		if s.lpacket == nil {
			s.lpacket = packetHeader(s.tbl.Schema().ID, true)
		}
		s.lpacket = append(s.lpacket, body...)
		if err := s.sendFull(&s.lpacket); err != nil {
			return err
		}
	}
	return nil
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
		if s.fw, err = NewFileWriter(s.ctx, s.tbl, s.bb.ArrowSchema(), s.spec.fileOptions(s.rt)); err != nil {
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

// collapse collapses the sorted changes: rows to write go to out, keys whose
// committed row must go are returned. When updates is not nil, the rows that replace
// a committed row are held there instead, to be written with the replaced row's
// _row_id.
func (f *changeShardFn) collapse(ctx context.Context, parser *cdc.Parser, sorter *cdc.Sorter, out *shardRows, updates *heldUpdates, dead func(DeadLetter)) (deleteKeys [][]any, maxSeq int64, err error) {
	sc := parser.Schema()
	err = cdc.CollapseChecked(sorter.Sorted(), f.Spec.Upsert, func(n *cdc.Net) error {
		maxSeq = max(maxSeq, n.MaxSeq)
		if n.DeletePrior {
			r, _, err := row.DecodeBody(sc, n.Row)
			if err != nil {
				return err
			}
			deleteKeys = append(deleteKeys, parser.KeyOf(r))
		}
		if !n.Write {
			return nil
		}
		if n.DeletePrior && updates != nil {
			return updates.add(n.Key, len(deleteKeys)-1, n.Row)
		}
		return out.add(n.Row)
	}, func(a *cdc.Ambiguous) error {
		// Held back: two different after-images at the key's last sequence number.
		maxSeq = max(maxSeq, a.Seq)
		rejected, err := a.Rejected(parser)
		if err != nil {
			return err
		}
		AmbiguousChanges.Inc(ctx, int64(len(rejected)))
		for _, r := range rejected {
			dead(DeadLetter{Row: r.Row.String(), Table: f.Spec.Table, Reason: r.Err.Error()})
		}
		return nil
	})
	return deleteKeys, maxSeq, err
}

// commit commits one pane: the shard results of one window (or one late pane).
func (f *commitFn) commitChanges(ctx context.Context, dest string, p Pane, emit func(SnapshotInfo)) error {
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
	w := ChangeWindow{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, WindowEndMs: p.WindowEndMs, LateID: p.LateID, ContentID: p.ContentIDFor(f.Spec.Windowed),
		SnapshotProps: f.rt.snapshotProps,
		Deletes:       cdc.Deletes{KeyColumns: f.Spec.EqualityColumns, Format: config.DeleteFormat(f.Spec.DeleteFormat), Resolver: f.Spec.resolver()}}
	_, _, tok, found, _, err := CheckWindow(tbl.Metadata(), table.MainBranch, WindowRef{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID})
	if err != nil {
		return fail(err)
	}
	committedMax, _ := committedSeqs(tok, found, f.Spec.SinkID, f.Spec.RunID)
	unordered := 0
	for _, part := range p.Parts {
		files, err := DecodeDataFiles(tbl.Metadata(), part.Files)
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
	res, err := Committer{}.CommitChanges(ctx, cat, ident, w)
	if err != nil {
		return err
	}
	if !res.Skipped {
		if merged, err := MergeManifests(ctx, cat, ident); err != nil {
			log.Warnf(ctx, "iceberg: commit %s: merge data manifests: %v (tried again after the next commit)", dest, err)
		} else if merged {
			ManifestMerges.Inc(ctx, 1)
		}
	}
	catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
	RecordCommit(ctx, res, p.WindowEndMs, !p.Global)
	DVsWritten.Inc(ctx, int64(res.DVsAdded))
	DVsReplaced.Inc(ctx, int64(res.DVsRemoved))
	PositionsDeleted.Inc(ctx, res.PositionsDeleted)
	EqualityDeletes.Inc(ctx, int64(res.EqualityDeleteFiles))
	Reresolutions.Inc(ctx, int64(res.Reresolved))
	emit(SnapshotInfo{Table: dest, SnapshotID: res.SnapshotID, SequenceNumber: res.SequenceNumber,
		Operation: res.Operation, FilesAdded: res.FilesAdded, RowsAdded: res.RowsAdded,
		SinkID: f.Spec.SinkID, Skipped: res.Skipped, WindowEndMs: p.WindowEndMs, Late: p.LateID != "" || res.LateID != "",
		DeleteFilesAdded: res.DeleteFilesAdded, DVsRemoved: int64(res.DVsRemoved),
		PositionsDeleted: res.PositionsDeleted, EqualityDeletesAdded: res.EqualityDeletesAdded})
	return nil
}

func init() {
	register.DoFn5x1[context.Context, beam.Window, row.Row, func(beam.EventTime, int, []byte), func(DeadLetter), error](&changeParseFn{})
	beam.RegisterType(reflect.TypeFor[changeShardFn]())
	beam.RegisterType(reflect.TypeFor[morWriteFn]())
	beam.RegisterType(reflect.TypeFor[shardOut]())
	register.Emitter2[string, shardOut]()
	register.Iter1[shardOut]()
	register.Emitter1[DeadLetter]()
	register.Emitter1[SnapshotInfo]()
	register.Emitter3[beam.EventTime, int, []byte]()
	register.Iter1[[]byte]()
}
