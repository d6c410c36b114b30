package write

import (
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

// The hash distribution (distribution_mode=hash): hashRouteFn checks each row against
// its table and builds the rows of one (table, partition) into Arrow record batches,
// shipped as packets (the id of the table schema the rows were normalized to, then
// the batch in Arrow IPC stream format); a GroupByKey brings each partition's packets
// to one hashWriteFn, which hands the decoded batches to the Parquet writer. Each
// partition thus gets files from one writer instead of one per bundle, and a row is
// converted once, as with distribution_mode none.

// partitionKeySep separates the table name from the partition key in a shuffle key.
const partitionKeySep = "\x00"

// partitionKeyer computes the partition of a row of a table (whose values are
// normalized to the table's types) as a string: the table's partition transforms
// applied to the source columns.
type partitionKeyer struct {
	fields []keyField
	// unpartitioned is true for a spec without fields or with only void ones.
	unpartitioned bool
}

type keyField struct {
	path []string
	tr   ibg.Transform
}

func newPartitionKeyer(tbl *table.Table) (*partitionKeyer, error) {
	spec, sc := tbl.Spec(), tbl.Schema()
	k := &partitionKeyer{unpartitioned: spec.IsUnpartitioned()}
	for _, f := range spec.Fields() {
		name, ok := sc.FindColumnName(f.SourceID())
		if !ok {
			return nil, config.OpErrorf("write", strings.Join(tbl.Identifier(), "."),
				"partition field %s has no source column %d", f.Name, f.SourceID())
		}
		k.fields = append(k.fields, keyField{path: strings.Split(name, "."), tr: f.Transform})
	}
	return k, nil
}

// keyer returns dt's partition keyer, built on first use after each table load.
func (dt *destTable) keyer() (*partitionKeyer, error) {
	if dt.keys == nil {
		k, err := newPartitionKeyer(dt.tbl)
		if err != nil {
			return nil, err
		}
		dt.keys = k
	}
	return dt.keys, nil
}

// key returns r's partition key; rows of one partition have the same key.
func (k *partitionKeyer) key(r row.Row) string {
	if len(k.fields) == 0 {
		return "" // unpartitioned
	}
	var b strings.Builder
	get := rowGetter(r)
	for i, f := range k.fields {
		if i > 0 {
			b.WriteByte('/')
		}
		v, _ := get(f.path)
		lit := literalOf(v)
		out := f.tr.Apply(ibg.Optional[ibg.Literal]{Valid: lit != nil, Val: lit})
		if !out.Valid {
			b.WriteString("\x01null")
			continue
		}
		b.WriteString(out.Val.String())
	}
	return b.String()
}

// literalOf returns the Iceberg literal of a normalized row value, nil for null and
// for values no partition transform takes (lists, maps, structs).
func literalOf(v any) ibg.Literal {
	switch x := v.(type) {
	case bool:
		return ibg.NewLiteral(x)
	case int32:
		return ibg.NewLiteral(x)
	case int64:
		return ibg.NewLiteral(x)
	case float32:
		return ibg.NewLiteral(x)
	case float64:
		return ibg.NewLiteral(x)
	case ibg.Date:
		return ibg.NewLiteral(x)
	case ibg.Time:
		return ibg.NewLiteral(x)
	case ibg.Timestamp:
		return ibg.NewLiteral(x)
	case ibg.TimestampNano:
		return ibg.NewLiteral(x)
	case string:
		return ibg.NewLiteral(x)
	case []byte:
		return ibg.NewLiteral(x)
	case uuid.UUID:
		return ibg.NewLiteral(x)
	case ibg.Decimal:
		return ibg.NewLiteral(x)
	}
	return nil
}

// hashRouteFn routes and checks rows like writeFn, then builds the rows of each
// (table, partition) into Arrow record batches of the table's schema and emits each
// full batch as a packet (the id of the table schema the rows were normalized to,
// then the batch in Arrow IPC stream format) keyed by table and partition (see
// partitionKeySep). The writer after the shuffle hands the decoded batches to the
// Parquet writer as they are: no row is decoded or converted again. Rows it cannot
// write go to the dead letter output.
//
// The rows of an unpartitioned table are not shuffled: as Iceberg's Spark and Flink
// writers do for distribution mode hash, they are written where they are, by the
// bundle's writers as with distribution_mode none (files), and their files emitted on
// the direct output. One writer for a whole table would write all of its rows on one
// worker.
//
// With Spec.AutoShard, a partition's packets of one bundle go to successive shards
// (the shuffle key gets the packet's index in the bundle), so a partition receiving
// more data is written by more writers. With Spec.DirectLimit (bundle lifting), a
// bundle whose batches stay within DirectLimit bytes is written to files directly, at
// the end of the bundle, and emitted on the direct output; a larger bundle goes
// through the shuffle.
type hashRouteFn struct {
	Spec Spec

	router  *router
	schemas map[*table.Table]*tableSchema // each table's current schema
	packets map[bufKey]*pending           // bufKey.table is the shuffle key without shard
	shards  map[bufKey]int                // packets emitted per key in this bundle
	bytes   int64                         // batch bytes of the bundle
	shuffle bool                          // the bundle goes through the shuffle
	vals    []any                         // the values of the row being packed
	last    lastKey                       // the key of the last row
	chunk   []windowedRow                 // rows not yet handed to the packer
	pk      *packer                       // the bundle's packer, once started
	files   bundleWriters                 // the writers of unpartitioned tables' rows
}

// pending is what a bundle holds for one shuffle key: the batch being built and, in
// a bundle not (yet) sent through the shuffle, the full batches.
type pending struct {
	ts      *tableSchema
	bb      *row.BatchBuilder
	batches []arrow.RecordBatch
}

// cut moves the rows built so far to p.batches.
func (p *pending) cut() {
	if p.bb.Len() > 0 {
		p.batches = append(p.batches, p.bb.NewBatch())
	}
}

// release releases p's builder and batches.
func (p *pending) release() {
	for _, b := range p.batches {
		b.Release()
	}
	p.batches = nil
	p.bb.Release()
}

// lastKey is the packet key of the last row routed, by table, partition key and
// window: consecutive rows of one partition reuse it instead of concatenating the
// shuffle key again.
type lastKey struct {
	dt  *destTable
	pk  string
	win int64
	key bufKey
}

func (f *hashRouteFn) Setup(ctx context.Context) error {
	var err error
	f.router, err = newRouter(&f.Spec)
	f.schemas = map[*table.Table]*tableSchema{}
	f.files = bundleWriters{router: f.router}
	return err
}

// StartBundle resets the packets (its emitters mirror ProcessElement's outputs).
func (f *hashRouteFn) StartBundle(ctx context.Context, _ func(beam.EventTime, string, []byte), _ func(beam.EventTime, string, Part), _ func(beam.EventTime, DeadLetter)) {
	f.stopPacker() // a failed bundle's
	f.releasePackets()
	f.files.abort()
	f.chunk = f.chunk[:0]
	f.packets = map[bufKey]*pending{}
	f.last = lastKey{}
	f.shards = map[bufKey]int{}
	f.bytes = 0
	f.shuffle = f.Spec.DirectLimit <= 0
	f.router.replay.Begin()
}

// releasePackets releases what the bundle holds.
func (f *hashRouteFn) releasePackets() {
	for _, p := range f.packets {
		p.release()
	}
	f.packets = nil
}

// ProcessElement collects r into the chunk of rows that is handed to the packer
// when full (see packer).
func (f *hashRouteFn) ProcessElement(ctx context.Context, w beam.Window, r row.Row, emit func(beam.EventTime, string, []byte), _ func(beam.EventTime, string, Part), dead func(beam.EventTime, DeadLetter)) error {
	f.chunk = append(f.chunk, windowedRow{w: w, r: r})
	if len(f.chunk) < packChunkRows {
		return nil
	}
	err := f.hand(ctx, emit, dead)
	if err != nil {
		f.files.abort() // the packer has stopped
	}
	return err
}

// pack routes, checks and appends row r of window w to its key's batch (on the
// packer's goroutine), adding the packets to emit and the dead letters to out.
func (f *hashRouteFn) pack(ctx context.Context, w beam.Window, r row.Row, out *packed) error {
	dead := func(d DeadLetter) { out.dead = append(out.dead, timedDead{w.MaxTimestamp(), d}) }
	r, dt, err := f.router.admit(ctx, r, w, dead)
	if dt == nil {
		return err
	}
	keys, err := dt.keyer()
	if err != nil {
		return err
	}
	if keys.unpartitioned {
		return f.files.add(ctx, dt, w, r, dead)
	}
	// Table.Schema returns a new schema value per call, whose name index would be
	// built again for every row, and Schema.Fields copies the fields on every call:
	// keep one schema and its fields per table.
	ts, ok := f.schemas[dt.tbl]
	if !ok {
		sc := dt.tbl.Schema()
		ts = &tableSchema{sc: sc, rs: row.SchemaOf(sc), vals: row.NewSchemaValues(sc), target: rollSize(dt.tbl, f.Spec.fileOptions(f.router.rt))}
		f.schemas[dt.tbl] = ts
	}
	vals, err := ts.vals.AppendRow(f.vals[:0], r)
	if err != nil && f.Spec.EvolveSchema {
		changed, reason, eerr := f.router.evolve(ctx, dt, r, err)
		if eerr != nil {
			return eerr
		}
		if err = reason; changed {
			// A new tableSchema: the rows of the old schema still buffered are shipped
			// as they are before the first batch of the new one (see below).
			sc := dt.tbl.Schema()
			ts = &tableSchema{sc: sc, rs: row.SchemaOf(sc), vals: row.NewSchemaValues(sc), target: rollSize(dt.tbl, f.Spec.fileOptions(f.router.rt))}
			f.schemas[dt.tbl] = ts
			vals, err = ts.vals.AppendRow(f.vals[:0], r)
		}
	}
	f.vals = vals
	if err != nil {
		dead(DeadLetter{Row: r.String(), Table: dt.name, Reason: err.Error()})
		return nil
	}
	if keys, err = dt.keyer(); err != nil { // the table may have been reloaded
		return err
	}
	pk, win := keys.key(row.Of(ts.rs, vals)), w.MaxTimestamp().Milliseconds()
	if l := &f.last; l.dt != dt || l.pk != pk || l.win != win {
		*l = lastKey{dt: dt, pk: pk, win: win, key: bufKey{table: dt.name + partitionKeySep + pk, win: win}}
	}
	key := f.last.key
	p := f.packets[key]
	if p != nil && p.ts != ts {
		// The table's schema changed within the bundle (its table was reloaded): ship
		// what the bundle holds, then start batches of the new schema.
		f.shuffle = true
		for _, k := range sortedKeys(f.packets) {
			if err := f.takePacket(k, out); err != nil {
				return err
			}
		}
		p.release()
		p = nil
	}
	if p == nil {
		bb, err := row.NewBatchBuilder(ts.sc, nil)
		if err != nil {
			return config.WrapOp("write", dt.name, err)
		}
		p = &pending{ts: ts, bb: bb}
		f.packets[key] = p
	}
	n := p.bb.Bytes()
	if err := p.bb.AppendValues(vals); err != nil {
		dead(DeadLetter{Row: r.String(), Table: dt.name, Reason: err.Error()})
		return nil
	}
	f.bytes += int64(p.bb.Bytes() - n)
	if !f.shuffle && f.bytes > f.Spec.DirectLimit {
		// Too big to lift: everything of this bundle goes through the shuffle.
		f.shuffle = true
		for _, k := range sortedKeys(f.packets) {
			if err := f.takePacket(k, out); err != nil {
				return err
			}
		}
		return nil
	}
	// table.WriteRecords rolls to a new file between batches only: cut at the target
	// file size too.
	if p.bb.Len() >= batchRows || int64(p.bb.Bytes()) >= min(int64(packetBytes), ts.target) {
		p.cut()
		if f.shuffle {
			return f.takePacket(key, out)
		}
	}
	return nil
}

// takePacket cuts the batch of k and moves the batches of k, encoded as packets, to
// out, to be emitted to the shuffle.
func (f *hashRouteFn) takePacket(k bufKey, out *packed) error {
	p := f.packets[k]
	p.cut()
	defer func() {
		for _, b := range p.batches {
			b.Release()
		}
		p.batches = p.batches[:0]
	}()
	for _, b := range p.batches {
		key := k.table
		if f.Spec.AutoShard {
			key += partitionKeySep + strconv.Itoa(f.shards[k])
			f.shards[k]++
		}
		// The IPC stream is at most the batch's buffers plus their framing. Compressed:
		// the packet is copied several times on its way through the shuffle.
		buf := make([]byte, 0, arrowipc.BufferBytes(b)+4<<10)
		packet, err := arrowipc.AppendCompressed(binary.AppendUvarint(buf, uint64(p.ts.sc.ID)), b)
		if err != nil {
			dest, _, _ := strings.Cut(k.table, partitionKeySep)
			return config.WrapOp("write", dest, err)
		}
		out.packets = append(out.packets, shufflePacket{win: k.win, key: key, packet: packet})
	}
	return nil
}

// FinishBundle emits the remaining packets to the shuffle, or, for a bundle lifted
// into the direct path, writes them and emits the files of each table and window.
func (f *hashRouteFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, []byte), direct func(beam.EventTime, string, Part), dead func(beam.EventTime, DeadLetter)) error {
	if err := f.drain(ctx, emit, dead); err != nil {
		f.files.abort()
		return err
	}
	if err := f.files.finish(ctx, direct); err != nil {
		return err
	}
	defer f.releasePackets()
	keys := sortedKeys(f.packets)
	if f.shuffle {
		var out packed
		for _, k := range keys {
			if err := f.takePacket(k, &out); err != nil {
				return err
			}
		}
		out.emit(emit, dead)
		f.router.replay.Done()
		return nil
	}
	// Lifted: one writer per table and window, fed the batches of its partitions.
	for i := 0; i < len(keys); {
		dest, _, _ := strings.Cut(keys[i].table, partitionKeySep)
		j := i
		var group []idBatch
		for ; j < len(keys) && keys[j].win == keys[i].win && strings.HasPrefix(keys[j].table, dest+partitionKeySep); j++ {
			p := f.packets[keys[j]]
			p.cut()
			for _, b := range p.batches {
				group = append(group, idBatch{p.ts.sc.ID, b})
			}
			p.batches = nil // the writer releases them
		}
		files, err := writeBatches(ctx, f.Spec, f.router.rt, dest, slices.Values(group))
		if err != nil {
			return err
		}
		if len(files) > 0 {
			direct(mtime.FromMilliseconds(keys[i].win), dest, Part{Files: files})
		}
		i = j
	}
	f.router.replay.Done()
	return nil
}

// tableSchema is a table's current schema, its row schema, the converter of rows
// to its values and the table's target file size.
type tableSchema struct {
	sc     *ibg.Schema
	rs     *row.Schema
	vals   *row.SchemaValues
	target int64
}

// hashWriteFn writes the packets of one (table, partition) to data files and emits
// their encodings keyed by table.
//
// In the global window (batch) a partition's writers are closed in the background
// (closingFiles): ProcessElement returns once the packets are handed to the writer, whose
// goroutine may still be encoding them, and the next partition's packets are decoded
// and encoded meanwhile. The GroupByKey hands one bundle many partitions one after the
// other; closed in turn, they were encoded on one core while the other idled. At most
// maxClosing writers close at a time (each holds at most writerBatchBuffer batches and
// its row group); FinishBundle waits for them. Windowed elements close their writers
// inline: a file's Part is emitted in its element's window.
type hashWriteFn struct {
	Spec Spec

	rt      *runtime
	closing []*closingFiles // oldest first
}

// maxClosing bounds the writers a hashWriteFn bundle closes in the background.
const maxClosing = 1

// closingFiles is a partition's writers being closed in the background.
type closingFiles struct {
	dest  string
	done  chan struct{}
	files []datafile.Encoded
	err   error
}

func (f *hashWriteFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

// StartBundle drops the writers a failed bundle left closing. Its emitter mirrors
// ProcessElement's output.
func (f *hashWriteFn) StartBundle(_ func(beam.EventTime, string, Part)) {
	f.drop()
}

func (f *hashWriteFn) ProcessElement(ctx context.Context, w beam.Window, key string, packets func(*[]byte) bool, emit func(beam.EventTime, string, Part)) error {
	dest, _, _ := strings.Cut(key, partitionKeySep)
	var decodeErr error
	open, err := openBatches(ctx, f.Spec, f.rt, dest, func(yield func(idBatch) bool) {
		var p []byte
		for packets(&p) {
			id, n := binary.Uvarint(p)
			if n <= 0 {
				decodeErr = config.OpErrorf("write", dest, "corrupt packet")
				return
			}
			b, err := arrowipc.Decode(p[n:])
			if err != nil {
				decodeErr = config.WrapOp("write", dest, err)
				return
			}
			if !yield(idBatch{int(id), b}) {
				b.Release()
				return
			}
		}
	})
	if err = errors.Join(decodeErr, err); err != nil {
		if open != nil {
			open.abort()
		}
		f.drop()
		return err
	}
	if _, global := w.(window.GlobalWindow); !global {
		files, err := open.close()
		if err != nil {
			f.drop()
			return err
		}
		if len(files) > 0 {
			emit(w.MaxTimestamp(), dest, Part{Files: files})
		}
		return nil
	}
	c := &closingFiles{dest: dest, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.files, c.err = open.close()
	}()
	f.closing = append(f.closing, c)
	return f.emitClosed(emit, maxClosing)
}

// emitClosed waits until at most keep writers are closing, emitting the files of
// those closed, oldest first (in the global window). A failure drops the others.
func (f *hashWriteFn) emitClosed(emit func(beam.EventTime, string, Part), keep int) error {
	for len(f.closing) > 0 {
		c := f.closing[0]
		if len(f.closing) <= keep {
			select {
			case <-c.done:
			default:
				return nil
			}
		}
		<-c.done
		f.closing = f.closing[1:]
		if c.err != nil {
			f.drop()
			return c.err
		}
		if len(c.files) > 0 {
			emit(mtime.EndOfGlobalWindowTime, c.dest, Part{Files: c.files})
		}
	}
	return nil
}

// FinishBundle waits for the writers closing and emits their files.
func (f *hashWriteFn) FinishBundle(emit func(beam.EventTime, string, Part)) error {
	return f.emitClosed(emit, 0)
}

// drop waits for the writers closing and forgets their files (after a failure: the
// bundle is retried, its files stay unreferenced).
func (f *hashWriteFn) drop() {
	for _, c := range f.closing {
		<-c.done
	}
	f.closing = nil
}

// idBatch is a record batch of rows of table schema id.
type idBatch struct {
	id int
	b  arrow.RecordBatch
}

// openFiles is the writers of one table's batches, one datafile.Writer per table schema.
type openFiles struct {
	tbl     *table.Table
	dest    string
	writers map[int]*datafile.Writer
	ids     []int // in order of first use
}

// writeBatches writes batches (of table dest) to data files and returns them: one
// datafile.Writer per table schema of the batches, which it releases.
func writeBatches(ctx context.Context, spec Spec, rt *runtime, dest string, batches iter.Seq[idBatch]) ([]datafile.Encoded, error) {
	open, err := openBatches(ctx, spec, rt, dest, batches)
	if err != nil {
		if open != nil {
			open.abort()
		}
		return nil, err
	}
	return open.close()
}

// openBatches hands batches (of table dest) to writers, which it starts, and returns
// them still encoding; the caller closes them (or aborts them after an error, when
// they are not nil). The batches are released either way.
func openBatches(ctx context.Context, spec Spec, rt *runtime, dest string, batches iter.Seq[idBatch]) (*openFiles, error) {
	tbl, err := catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, dest, rt.refresh)
	if err != nil {
		for ib := range batches {
			ib.b.Release()
		}
		return nil, config.WrapOp("write", dest, err)
	}
	o := &openFiles{tbl: tbl, dest: dest, writers: map[int]*datafile.Writer{}}
	for ib := range batches {
		w := o.writers[ib.id]
		if w == nil {
			if _, err := packetSchema(ctx, spec, rt, dest, &o.tbl, ib.id); err != nil {
				ib.b.Release()
				return o, err
			}
			if w, err = datafile.NewWriter(ctx, o.tbl, ib.b.Schema(), spec.fileOptions(rt)); err != nil {
				ib.b.Release()
				return o, err
			}
			o.writers[ib.id] = w
			o.ids = append(o.ids, ib.id)
		}
		if err := w.Write(ib.b); err != nil {
			return o, err
		}
	}
	return o, nil
}

// close waits for the writers to finish their files and returns their encodings.
func (o *openFiles) close() ([]datafile.Encoded, error) {
	defer o.abort()
	var out []datafile.Encoded
	for _, id := range o.ids {
		files, err := o.writers[id].Close()
		delete(o.writers, id)
		if err != nil {
			return nil, err
		}
		enc, err := datafile.Encode(o.tbl.Metadata(), files)
		if err != nil {
			return nil, config.WrapOp("write", o.dest, err)
		}
		out = append(out, enc...)
	}
	return out, nil
}

// abort stops the writers not closed yet, waiting for them.
func (o *openFiles) abort() {
	for id, w := range o.writers {
		w.Close()
		delete(o.writers, id)
	}
}

// writePackets (merge-on-read's new rows) writes the rows of packets (of table dest) to data files and returns
// them. Rows the table cannot take go to dead.
func writePackets(ctx context.Context, spec Spec, rt *runtime, dest string, packets iter.Seq[[]byte], dead func(DeadLetter)) ([]datafile.Encoded, error) {
	tbl, err := catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, dest, rt.refresh)
	if err != nil {
		return nil, config.WrapOp("write", dest, err)
	}
	buf, err := newFileBuffer(tbl, spec.fileOptions(rt))
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			buf.abort()
		}
	}()
	if rowLineage(tbl, spec) {
		// Updates carry _row_id: every file of the window stores the column (see
		// changeShardFn), rather than a file without it for the rows before the first
		// update.
		if err := buf.withLineage(ctx); err != nil {
			return nil, err
		}
	}
	type schemaKey struct {
		id      int
		lineage bool
	}
	schemas := map[schemaKey]*row.Schema{}
	for p := range packets {
		id, lineage, n := readPacketHeader(p)
		if n <= 0 {
			return nil, config.OpErrorf("write", dest, "corrupt packet")
		}
		rs, ok := schemas[schemaKey{id, lineage}]
		if !ok {
			sc, err := packetSchema(ctx, spec, rt, dest, &tbl, id)
			if err != nil {
				return nil, err
			}
			if lineage {
				sc = datafile.LineageSchema(sc)
			}
			rs = row.SchemaOf(sc)
			schemas[schemaKey{id, lineage}] = rs
			if tbl.Schema().ID != buf.tbl.Schema().ID {
				// The table evolved since it was cached (evolve_schema).
				if err := buf.retarget(ctx, tbl); err != nil {
					return nil, err
				}
			}
		}
		if lineage {
			if err := buf.withLineage(ctx); err != nil {
				return nil, err
			}
		}
		var writeErr error // a failure of the writer, reported as is
		err := row.DecodeBodies(rs, p[n:], func(r row.Row) error {
			rowErr, err := buf.add(ctx, r)
			if rowErr != nil {
				dead(DeadLetter{Row: r.String(), Table: dest, Reason: rowErr.Error()})
			}
			writeErr = err
			return err
		})
		if writeErr != nil {
			return nil, writeErr
		}
		if err != nil {
			return nil, config.WrapOp("write", dest, err)
		}
	}
	files, err := buf.close(ctx)
	closed = true
	return files, err
}

// packetSchema returns schema id of *tbl, reloading the table once when its cached
// metadata does not have it yet.
func packetSchema(ctx context.Context, spec Spec, rt *runtime, dest string, tbl **table.Table, id int) (*ibg.Schema, error) {
	if sc, ok := (*tbl).Schemas()[id]; ok {
		return sc, nil
	}
	catalogs.Invalidate(spec.CatalogName, rt.catProps, dest)
	t, err := catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, dest, rt.refresh)
	if err != nil {
		return nil, config.WrapOp("write", dest, err)
	}
	*tbl = t
	if sc, ok := t.Schemas()[id]; ok {
		return sc, nil
	}
	return nil, config.OpErrorf("write", dest, "table has no schema %d", id)
}

func init() {
	register.DoFn6x1[context.Context, beam.Window, row.Row, func(beam.EventTime, string, []byte), func(beam.EventTime, string, Part), func(beam.EventTime, DeadLetter), error](&hashRouteFn{})
	register.Emitter2[beam.EventTime, DeadLetter]()
	beam.RegisterType(reflect.TypeFor[hashWriteFn]())
	register.Emitter2[string, []byte]()
}
