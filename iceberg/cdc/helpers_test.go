package cdc

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

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

// prepare runs the per-shard steps (parse, shard, sort, collapse, resolve in DV
// mode, write data files) for one window and returns the window to commit.
func (f *fixture) prepare(t testing.TB, changes []row.Row, upsert bool) window {
	t.Helper()
	ctx := context.Background()
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
	format, err := ResolveFormat(tbl, f.format, f.keys)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row.Row
	for _, sh := range shards {
		if len(sh) == 0 {
			continue
		}
		res, rejected, err := SortAndCollapse(f.parser, sh, upsert, 1<<20)
		if err != nil || len(rejected) > 0 {
			t.Fatalf("collapse: %v %v", err, rejected)
		}
		rows = append(rows, res.Rows...)
		if format == config.DeleteFormatDV {
			r, err := Resolver{KeyColumns: f.keys, IndexBytes: f.indexBytes}.Resolve(ctx, tbl, res.DeleteKeys)
			if err != nil {
				t.Fatal(err)
			}
			w.deletes.Resolved = append(w.deletes.Resolved, r)
		} else {
			w.deletes.Keys = append(w.deletes.Keys, res.DeleteKeys...)
		}
	}
	if len(rows) > 0 {
		b, err := row.NewBatchBuilder(tbl.Schema(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := b.AppendRow(r); err != nil {
				t.Fatal(err)
			}
		}
		rec := b.NewBatch()
		b.Release()
		w.dataFiles = icebergtest.WriteDataFiles(t, tbl, rec)
		rec.Release()
	}
	return w
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
