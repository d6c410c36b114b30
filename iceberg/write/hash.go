package write

import (
	"context"
	"encoding/binary"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// The hash distribution (distribution_mode=hash): hashRouteFn checks each row against
// its table and packs the rows of one (table, partition) into packets, the rows'
// values without their schema (row.AppendBody) after the id of the table schema they
// were normalized to; a GroupByKey brings each partition's packets to one
// hashWriteFn, which writes them to files. Each partition thus gets files from one
// writer instead of one per bundle.

// partitionKeySep separates the table name from the partition key in a shuffle key.
const partitionKeySep = "\x00"

// partitionKeyer computes the partition of a row of a table (whose values are
// normalized to the table's types) as a string: the table's partition transforms
// applied to the source columns.
type partitionKeyer struct {
	fields []keyField
}

type keyField struct {
	path []string
	tr   ibg.Transform
}

func newPartitionKeyer(tbl *table.Table) (*partitionKeyer, error) {
	spec, sc := tbl.Spec(), tbl.Schema()
	k := &partitionKeyer{}
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

// key returns r's partition key; rows of one partition have the same key.
func (k *partitionKeyer) key(r row.Row) string {
	if len(k.fields) == 0 {
		return "" // unpartitioned
	}
	var b strings.Builder
	get := RowGetter(r)
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

// hashRouteFn routes and checks rows like writeFn, then packs them by (table, partition)
// and emits the packets keyed by table and partition (see partitionKeySep). Rows it
// cannot write go to the dead letter output.
//
// With Spec.AutoShard, a partition's packets of one bundle go to successive shards
// (the shuffle key gets the packet's index in the bundle), so a partition receiving
// more data is written by more writers. With Spec.DirectLimit (bundle lifting), a
// bundle whose packets stay within DirectLimit bytes is written to files directly, at
// the end of the bundle, and emitted on the direct output; a larger bundle goes
// through the shuffle.
type hashRouteFn struct {
	Spec Spec

	router  *router
	schemas map[*table.Table]tableSchema // each table's current schema
	packets map[bufKey]*[]byte           // bufKey.table is the shuffle key without shard
	shards  map[bufKey]int               // packets emitted per key in this bundle
	bytes   int64                        // packet bytes of the bundle
	shuffle bool                         // the bundle goes through the shuffle
	vals    []any                        // the values of the row being packed
	last    lastKey                      // the key of the last row
	chunk   []windowedRow                // rows not yet handed to the packer
	pk      *packer                      // the bundle's packer, once started
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
	f.schemas = map[*table.Table]tableSchema{}
	return err
}

// StartBundle resets the packets (its emitters mirror ProcessElement's outputs).
func (f *hashRouteFn) StartBundle(ctx context.Context, _ func(beam.EventTime, string, []byte), _ func(beam.EventTime, string, Part), _ func(beam.EventTime, DeadLetter)) {
	f.stopPacker() // a failed bundle's
	f.chunk = f.chunk[:0]
	f.packets = map[bufKey]*[]byte{}
	f.last = lastKey{}
	f.shards = map[bufKey]int{}
	f.bytes = 0
	f.shuffle = f.Spec.DirectLimit <= 0
	f.router.replay.Begin()
}

// ProcessElement collects r into the chunk of rows that is handed to the packer
// when full (see packer).
func (f *hashRouteFn) ProcessElement(ctx context.Context, w beam.Window, r row.Row, emit func(beam.EventTime, string, []byte), _ func(beam.EventTime, string, Part), dead func(beam.EventTime, DeadLetter)) error {
	f.chunk = append(f.chunk, windowedRow{w: w, r: r})
	if len(f.chunk) < packChunkRows {
		return nil
	}
	return f.hand(ctx, emit, dead)
}

// pack routes, checks and packs row r of window w (on the packer's goroutine),
// adding the packets to emit and the dead letters to out.
func (f *hashRouteFn) pack(ctx context.Context, w beam.Window, r row.Row, out *packed) error {
	dead := func(d DeadLetter) { out.dead = append(out.dead, timedDead{w.MaxTimestamp(), d}) }
	r, dt, dl, err := f.router.route(ctx, r)
	var skip bool
	if err == nil && dl == nil {
		skip, dl, err = f.router.late(ctx, dt, r, w)
	}
	if skip {
		return nil
	}
	if err != nil || dl != nil {
		if dl != nil {
			dead(*dl)
		}
		return err
	}
	// Table.Schema returns a new schema value per call, whose name index would be
	// built again for every row, and Schema.Fields copies the fields on every call:
	// keep one schema and its fields per table.
	ts, ok := f.schemas[dt.tbl]
	if !ok {
		sc := dt.tbl.Schema()
		ts = tableSchema{sc: sc, rs: row.SchemaOf(sc), vals: row.NewSchemaValues(sc)}
		f.schemas[dt.tbl] = ts
	}
	vals, err := ts.vals.AppendRow(f.vals[:0], r)
	if err != nil && f.Spec.EvolveSchema {
		changed, reason, eerr := f.router.evolve(ctx, dt, r, err)
		if eerr != nil {
			return eerr
		}
		if err = reason; changed {
			f.takeTable(dt.name, out)
			sc := dt.tbl.Schema()
			ts = tableSchema{sc: sc, rs: row.SchemaOf(sc), vals: row.NewSchemaValues(sc)}
			f.schemas[dt.tbl] = ts
			vals, err = ts.vals.AppendRow(f.vals[:0], r)
		}
	}
	f.vals = vals
	if err != nil {
		dead(DeadLetter{Row: r.String(), Table: dt.name, Reason: err.Error()})
		return nil
	}
	sc, rs := ts.sc, ts.rs
	if dt.keys == nil {
		if dt.keys, err = newPartitionKeyer(dt.tbl); err != nil {
			return err
		}
	}
	nr := row.Of(rs, vals)
	pk, win := dt.keys.key(nr), w.MaxTimestamp().Milliseconds()
	if l := &f.last; l.dt != dt || l.pk != pk || l.win != win {
		*l = lastKey{dt: dt, pk: pk, win: win, key: bufKey{table: dt.name + partitionKeySep + pk, win: win}}
	}
	key := f.last.key
	pp := f.packets[key]
	if pp == nil {
		p := binary.AppendUvarint(nil, uint64(sc.ID))
		pp = &p
		f.packets[key] = pp
	}
	n := len(*pp)
	p, err := row.AppendBody(*pp, nr)
	if err != nil {
		dead(DeadLetter{Row: r.String(), Table: dt.name, Reason: err.Error()})
		return nil
	}
	*pp = p
	f.bytes += int64(len(p) - n)
	if !f.shuffle && f.bytes > f.Spec.DirectLimit {
		// Too big to lift: everything of this bundle goes through the shuffle.
		f.shuffle = true
		for _, k := range sortedKeys(f.packets) {
			f.takePacket(k, out)
		}
		return nil
	}
	if f.shuffle && len(p) >= packetBytes {
		f.takePacket(key, out)
	}
	return nil
}

// takeTable moves every packet of table dest to out (its schema evolved: the next
// rows go into packets of the new schema).
func (f *hashRouteFn) takeTable(dest string, out *packed) {
	for _, k := range sortedKeys(f.packets) {
		if strings.HasPrefix(k.table, dest+partitionKeySep) {
			f.takePacket(k, out)
		}
	}
	f.last = lastKey{}
}

// takePacket moves the packet of k to out, to be emitted to the shuffle.
func (f *hashRouteFn) takePacket(k bufKey, out *packed) {
	key := k.table
	if f.Spec.AutoShard {
		key += partitionKeySep + strconv.Itoa(f.shards[k])
		f.shards[k]++
	}
	out.packets = append(out.packets, shufflePacket{win: k.win, key: key, packet: *f.packets[k]})
	delete(f.packets, k)
}

// FinishBundle emits the remaining packets to the shuffle, or, for a bundle lifted
// into the direct path, writes them and emits the files of each table and window.
func (f *hashRouteFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, string, []byte), direct func(beam.EventTime, string, Part), dead func(beam.EventTime, DeadLetter)) error {
	if err := f.drain(ctx, emit, dead); err != nil {
		return err
	}
	keys := sortedKeys(f.packets)
	if f.shuffle {
		var out packed
		for _, k := range keys {
			f.takePacket(k, &out)
		}
		out.emit(emit, dead)
		f.packets = nil
		f.router.replay.Done()
		return nil
	}
	// Lifted: one writer per table and window, fed the packets of its partitions.
	for i := 0; i < len(keys); {
		dest, _, _ := strings.Cut(keys[i].table, partitionKeySep)
		j := i
		var group [][]byte
		for ; j < len(keys) && keys[j].win == keys[i].win && strings.HasPrefix(keys[j].table, dest+partitionKeySep); j++ {
			group = append(group, *f.packets[keys[j]])
		}
		ts := mtime.FromMilliseconds(keys[i].win)
		files, err := writePackets(ctx, f.Spec, f.router.rt, dest, slices.Values(group), func(d DeadLetter) { dead(ts, d) })
		if err != nil {
			return err
		}
		if len(files) > 0 {
			direct(ts, dest, Part{Files: files})
		}
		i = j
	}
	f.packets = nil
	f.router.replay.Done()
	return nil
}

// tableSchema is a table's current schema, its row schema and the converter of rows
// to its values.
type tableSchema struct {
	sc   *ibg.Schema
	rs   *row.Schema
	vals *row.SchemaValues
}

// hashWriteFn writes the packets of one (table, partition) to data files and emits
// their encodings keyed by table.
type hashWriteFn struct {
	Spec Spec

	rt *runtime
}

func (f *hashWriteFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *hashWriteFn) ProcessElement(ctx context.Context, key string, packets func(*[]byte) bool, emit func(string, Part), dead func(DeadLetter)) error {
	dest, _, _ := strings.Cut(key, partitionKeySep)
	files, err := writePackets(ctx, f.Spec, f.rt, dest, func(yield func([]byte) bool) {
		var p []byte
		for packets(&p) && yield(p) {
		}
	}, dead)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		emit(dest, Part{Files: files})
	}
	return nil
}

// writePackets writes the rows of packets (of table dest) to data files and returns
// them. Rows the table cannot take go to dead.
func writePackets(ctx context.Context, spec Spec, rt *runtime, dest string, packets iter.Seq[[]byte], dead func(DeadLetter)) ([]EncodedDataFile, error) {
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
	schemas := map[int]*row.Schema{}
	for p := range packets {
		id, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, config.OpErrorf("write", dest, "corrupt packet")
		}
		rs, ok := schemas[int(id)]
		if !ok {
			sc, err := packetSchema(ctx, spec, rt, dest, &tbl, int(id))
			if err != nil {
				return nil, err
			}
			rs = row.SchemaOf(sc)
			schemas[int(id)] = rs
			if tbl.Schema().ID != buf.tbl.Schema().ID {
				// The table evolved since it was cached (evolve_schema).
				if err := buf.retarget(ctx, tbl); err != nil {
					return nil, err
				}
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
	register.DoFn5x1[context.Context, string, func(*[]byte) bool, func(string, Part), func(DeadLetter), error](&hashWriteFn{})
	register.Emitter2[string, []byte]()
}
