package cdc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// fixture is one CDC target table on a local SQLite catalog.
type fixture struct {
	cat    *icebergtest.LocalCatalog
	ident  table.Identifier
	parser *Parser
	keys   []string
	format config.DeleteFormat
	shards int
	// indexBytes is the budget of the key index the resolutions use (0: none).
	indexBytes int64
}

// window is one window of changes, prepared by fixture.prepare.
type window struct {
	dataFiles []ibg.DataFile
	deletes   Deletes
}

// result is what fixture.commit reports: the delta and the snapshot it made (zero
// when there was nothing to commit).
type result struct {
	Delta
	SnapshotID, RowsAdded, DeleteFilesAdded, EqualityDeletesAdded int64
}

type fixtureOpt func(*fixtureCfg)

type fixtureCfg struct {
	partitioned bool
	format      config.DeleteFormat
	version     int
	props       map[string]string
	indexBytes  int64
	collide     bool
}

func partitioned() fixtureOpt { return func(c *fixtureCfg) { c.partitioned = true } }
func equality() fixtureOpt    { return func(c *fixtureCfg) { c.format = config.DeleteFormatEquality } }

// indexed resolves keys with a KeyIndex of budget bytes.
func indexed(bytes int64) fixtureOpt { return func(c *fixtureCfg) { c.indexBytes = bytes } }

// collisions gives the fixture's key index a fingerprint of three values, so that
// most lookups match several live rows and go through the index's check.
func collisions() fixtureOpt { return func(c *fixtureCfg) { c.collide = true } }
func tableProps(p map[string]string) fixtureOpt {
	return func(c *fixtureCfg) { c.props = p }
}

// newFixture creates db.<name> (id long, city string, state string), format version
// 3, partitioned by identity(state) when asked, on cat (a new catalog when nil).
func newFixture(t testing.TB, cat *icebergtest.LocalCatalog, name string, opts ...fixtureOpt) *fixture {
	t.Helper()
	cfg := fixtureCfg{version: 3}
	for _, o := range opts {
		o(&cfg)
	}
	if cat == nil {
		cat = icebergtest.NewLocalCatalog(t)
	}
	var topts []icebergtest.TableOption
	keys := []string{"id"}
	if cfg.partitioned {
		topts = append(topts, icebergtest.WithPartitionSpec(ibg.NewPartitionSpec(ibg.PartitionField{
			SourceIDs: []int{3}, FieldID: 1000, Name: "state", Transform: ibg.IdentityTransform{}})))
		if cfg.format == config.DeleteFormatEquality {
			keys = []string{"id", "state"} // equality deletes need the partition column in the key
		}
	}
	if cfg.props != nil {
		topts = append(topts, icebergtest.WithProperties(cfg.props))
	}
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db."+name, citySchema(), topts...)
	if cfg.collide {
		codec, err := newKeyCodec(tbl.Schema(), keys)
		if err != nil {
			t.Fatal(err)
		}
		x := indexFor(tbl, codec, cfg.indexBytes, 1)
		x.exact, x.fingerprint = false, func(b []byte) uint64 { return uint64(b[len(b)-1]) % 3 }
	}
	wc := debeziumConfig()
	wc.EqualityColumns = keys
	p, err := NewParser("db."+name, tbl.Schema(), wc)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{cat: cat, ident: tbl.Identifier(), parser: p, keys: keys, format: cfg.format, shards: 1, indexBytes: cfg.indexBytes}
}

func (f *fixture) table(t testing.TB) *table.Table {
	t.Helper()
	tbl, err := f.cat.Catalog.LoadTable(context.Background(), f.ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// seed appends rows (id, city, state) in files of at most perFile rows.
func (f *fixture) seed(t testing.TB, rows [][]any, perFile int) {
	t.Helper()
	tbl := f.table(t)
	for lo := 0; lo < len(rows); lo += perFile {
		rec := icebergtest.Records(t, tbl.Schema(), rows[lo:min(lo+perFile, len(rows))])
		tbl = icebergtest.AppendRecords(t, tbl, rec)
		rec.Release()
	}
}

// change builds a Debezium-style change row.
func change(op string, id int64, city, state string, seq int64) row.Row {
	return row.New([]string{"op", "id", "city", "state", "seq"}, []any{op, id, city, state, seq})
}

// prepare runs the per-shard steps for one window (parse and shard as package
// write's parse DoFn does, then one ShardWindow per shard: sort, collapse, resolve
// in DV mode, row lineage), writes the new rows to data files and returns the
// window to commit.
func (f *fixture) prepare(t testing.TB, changes []row.Row, upsert bool) window {
	t.Helper()
	tbl := f.table(t)
	shards := make([][]row.Row, f.shards)
	var kb []byte
	for _, r := range changes {
		c, err := f.parser.Parse(r)
		if err != nil {
			t.Fatalf("parse %v: %v", r, err)
		}
		kb, _ = f.parser.AppendKey(kb[:0], c.Key)
		s := Shard(kb, f.shards)
		shards[s] = append(shards[s], r)
	}
	w := window{deletes: Deletes{KeyColumns: f.keys, Format: f.format, Resolver: Resolver{IndexBytes: f.indexBytes}}}
	lineage := RowLineage(tbl, f.format, f.keys)
	var rows []row.Row
	for _, sh := range shards {
		if len(sh) == 0 {
			continue
		}
		run := runShard(t, f.shardConfig(tbl, upsert), sh)
		if len(run.dead) > 0 || len(run.rejected) > 0 {
			t.Fatalf("shard: dead %v, rejected %v", run.dead, run.rejected)
		}
		if run.lineage != lineage {
			t.Fatalf("shard lineage %v, want %v", run.lineage, lineage)
		}
		rows = append(rows, run.lineageRows(tbl)...)
		if run.Resolution != nil {
			w.deletes.Resolved = append(w.deletes.Resolved, run.Resolution)
		} else {
			w.deletes.Keys = append(w.deletes.Keys, run.DeleteKeys...)
		}
	}
	w.dataFiles = writeRows(t, tbl, rows, lineage)
	return w
}

// shardConfig is the fixture's ShardConfig for one window of tbl.
func (f *fixture) shardConfig(tbl *table.Table, upsert bool) ShardConfig {
	return ShardConfig{Table: tbl, Parser: f.parser, Upsert: upsert, DeleteFormat: f.format,
		Resolver: Resolver{KeyColumns: f.keys, IndexBytes: f.indexBytes}, SorterMemory: 1 << 20, SinkID: "fixture"}
}

// shardRun is what a ShardWindow made of one shard's changes.
type shardRun struct {
	ShardResult
	lineage bool
	// rows are the new rows (ShardOutput.Write) and updates the rows that replace a
	// committed row (ShardOutput.Update) with their _row_id, in the Parser's schema.
	rows    []row.Row
	updates []row.Row
	rowIDs  []*int64
	// dead are the changes sent to the dead letter output, with their reasons.
	dead []Rejected
	// rejected are the rows that failed to parse (package write's parse DoFn
	// dead-letters them before the shards).
	rejected []Rejected
}

// written returns the rows written, new and updated.
func (r shardRun) written() []row.Row { return append(slices.Clip(r.rows), r.updates...) }

// lineageRows returns the rows written, in tbl's schema with _row_id when the run
// had row lineage (null for new rows), else in tbl's schema.
func (r shardRun) lineageRows(tbl *table.Table) []row.Row {
	if !r.lineage {
		return r.written()
	}
	lrs := row.SchemaOf(ibg.SchemaWithRowLineageColumns(tbl.Schema(), true, false))
	var out []row.Row
	for _, x := range r.rows {
		out = append(out, row.Of(lrs, append(slices.Clip(x.Values()), nil)))
	}
	for i, x := range r.updates {
		var id any
		if r.rowIDs[i] != nil {
			id = *r.rowIDs[i]
		}
		out = append(out, row.Of(lrs, append(slices.Clip(x.Values()), id)))
	}
	return out
}

// pack parses rows with p as package write's parse DoFn does and packs them, in
// the order given, into packets of table schema schemaID holding at most per
// changes each. Rows that fail to parse are returned instead.
func pack(p *Parser, schemaID int, rows []row.Row, per int) (packets [][]byte, rejected []Rejected) {
	var kb, body []byte
	var cur []byte
	n := 0
	for _, r := range rows {
		c, err := p.Parse(r)
		if err == nil {
			kb, err = p.AppendKey(kb[:0], c.Key)
		}
		if err == nil {
			body, err = row.AppendBody(body[:0], c.Row)
		}
		if err != nil {
			rejected = append(rejected, Rejected{Row: r, Err: err})
			continue
		}
		if cur == nil {
			cur = NewPacket(schemaID)
		}
		cur = AppendChange(cur, kb, c.Seq, c.Kind, body)
		if n++; n == per {
			packets, cur, n = append(packets, cur), nil, 0
		}
	}
	if cur != nil {
		packets = append(packets, cur)
	}
	return packets, rejected
}

// runShard packs rows (parsed with cfg.Parser, three changes a packet) and runs a
// ShardWindow of cfg on them.
func runShard(t testing.TB, cfg ShardConfig, rows []row.Row) shardRun {
	t.Helper()
	run, err := tryShard(cfg, rows)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// tryShard is runShard that returns the ShardWindow's error.
func tryShard(cfg ShardConfig, rows []row.Row) (shardRun, error) {
	packets, rejected := pack(cfg.Parser, cfg.Table.Schema().ID, rows, 3)
	return runPackets(cfg, packets, rejected)
}

// runPackets runs a ShardWindow of cfg on packets.
func runPackets(cfg ShardConfig, packets [][]byte, rejected []Rejected) (shardRun, error) {
	sc := cfg.Parser.Schema()
	sw := NewShardWindow(cfg)
	run := shardRun{lineage: sw.Lineage(), rejected: rejected}
	decode := func(body []byte) (row.Row, error) {
		r, _, err := row.DecodeBody(sc, body)
		return r, err
	}
	var err error
	run.ShardResult, err = runWindow(context.Background(), sw, slices.Values(packets), ShardOutput{
		Write: func(body []byte) error {
			r, err := decode(body)
			run.rows = append(run.rows, r)
			return err
		},
		Update: func(body []byte, rowID int64, hasID bool) error {
			if !run.lineage {
				return fmt.Errorf("an update without lineage")
			}
			r, err := decode(body)
			var id *int64
			if hasID {
				id = &rowID
			}
			run.updates, run.rowIDs = append(run.updates, r), append(run.rowIDs, id)
			return err
		},
		Dead: func(r row.Row, reason string) { run.dead = append(run.dead, Rejected{Row: r, Err: errors.New(reason)}) },
	})
	return run, err
}

// writeRows writes rows (in tbl's schema, with _row_id when lineage) to data files
// of tbl without committing them.
func writeRows(t testing.TB, tbl *table.Table, rows []row.Row, lineage bool) []ibg.DataFile {
	t.Helper()
	if len(rows) == 0 {
		return nil
	}
	sc := tbl.Schema()
	var opts []table.WriteRecordOption
	if lineage {
		sc = ibg.SchemaWithRowLineageColumns(sc, true, false)
		opts = append(opts, table.WithPreserveRowLineage(sc))
	}
	b, err := row.NewBatchBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, r := range rows {
		if err := b.AppendRow(r); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewBatch() // WriteRecords releases it
	recs := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	var files []ibg.DataFile
	for df, err := range table.WriteRecords(context.Background(), tbl, rec.Schema(), recs, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, df)
	}
	return files
}

// commit commits w as one RowDelta on the current table, with the deletes
// w.deletes prepares for it (the sink's committer, with its tokens and retries, is
// write.Committer.CommitChanges).
func (f *fixture) commit(t testing.TB, w window) result {
	t.Helper()
	ctx := context.Background()
	tbl := f.table(t)
	txn := tbl.NewTransaction()
	d, err := w.deletes.Prepare(ctx, tbl, txn)
	if err != nil {
		t.Fatal(err)
	}
	res := result{Delta: d}
	if len(w.dataFiles) == 0 && len(d.Added) == 0 {
		return res
	}
	rd := txn.NewRowDelta(d.Props)
	rd.AddRows(w.dataFiles...)
	rd.AddDeletes(d.Added...)
	if len(d.Removed) > 0 {
		rd.RemoveDeletes(d.Removed...)
	}
	if err := rd.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err = txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	num := func(k string) int64 { n, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64); return n }
	res.SnapshotID, res.RowsAdded = snap.SnapshotID, num("added-records")
	res.DeleteFilesAdded, res.EqualityDeletesAdded = num("added-delete-files"), num("added-equality-deletes")
	return res
}

// apply prepares and commits one window and checks the table's invariants.
func (f *fixture) apply(t testing.TB, changes []row.Row, upsert bool) result {
	t.Helper()
	res := f.commit(t, f.prepare(t, changes, upsert))
	f.check(t)
	return res
}

// check runs icebergtest.RequireValid and requires at most one live DV per file.
func (f *fixture) check(t testing.TB) {
	t.Helper()
	tbl := f.table(t)
	icebergtest.RequireValid(t, tbl)
	for path, dvs := range icebergtest.LiveDVs(t, tbl) {
		if len(dvs) > 1 {
			t.Fatalf("data file %s has %d live DVs", path, len(dvs))
		}
	}
}

// contents reads the table with iceberg-go's scan: id -> "city|state" entries (a
// list, so duplicates show).
func (f *fixture) contents(t testing.TB) map[int64][]string {
	t.Helper()
	at := icebergtest.ReadAll(t, f.table(t), nil, "id", "city", "state")
	out := map[int64][]string{}
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		str := func(c int, i int) string {
			a := rec.Column(c).(*array.String)
			if a.IsNull(i) {
				return "<null>"
			}
			return a.Value(i)
		}
		for i := range int(rec.NumRows()) {
			out[ids.Value(i)] = append(out[ids.Value(i)], str(1, i)+"|"+str(2, i))
		}
	}
	return out
}

// diffModel compares the table with model (id -> "city|state").
func diffModel(got map[int64][]string, model map[int64]string) string {
	var b strings.Builder
	n := 0
	for id, vs := range got {
		want, ok := model[id]
		if !ok || len(vs) != 1 || vs[0] != want {
			if n < 10 {
				fmt.Fprintf(&b, "id %d: table %v, model %q (present %v)\n", id, vs, want, ok)
			}
			n++
		}
	}
	var missing []int64
	for id := range model {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		fmt.Fprintf(&b, "%d ids missing from the table, first %v\n", len(missing), missing[:min(10, len(missing))])
		n++
	}
	if n > 0 {
		fmt.Fprintf(&b, "%d differences", n)
	}
	return b.String()
}

// cityRows returns n seed rows id 1..n.
func cityRows(n int) [][]any {
	states := []string{"CA", "TX", "WA", "NY", "OR"}
	rows := make([][]any, n)
	for i := range rows {
		id := int64(i + 1)
		rows[i] = []any{id, fmt.Sprintf("city-%d", id), states[id%int64(len(states))]}
	}
	return rows
}

// runWindow applies the changes of packets to sw and returns the window's result: Add,
// then Finish, as the shard DoFn of package write does.
func runWindow(ctx context.Context, sw *ShardWindow, packets iter.Seq[[]byte], out ShardOutput) (ShardResult, error) {
	for p := range packets {
		if err := sw.Add(p, out); err != nil {
			sw.Close()
			return sw.res, err
		}
	}
	return sw.Finish(ctx, out)
}
