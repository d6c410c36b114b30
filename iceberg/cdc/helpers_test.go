package cdc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// fixture is one CDC target table on a local SQLite catalog.
type fixture struct {
	cat       *icebergtest.LocalCatalog
	ident     table.Identifier
	parser    *Parser
	committer Committer
	sink      string
	window    int64
	shards    int
	fileSize  int64 // target data file size of new rows (0: default)
}

type fixtureOpt func(*fixtureCfg)

type fixtureCfg struct {
	partitioned bool
	format      config.DeleteFormat
	version     int
	props       map[string]string
}

func partitioned() fixtureOpt { return func(c *fixtureCfg) { c.partitioned = true } }
func equality() fixtureOpt    { return func(c *fixtureCfg) { c.format = config.DeleteFormatEquality } }
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
	wc := debeziumConfig()
	wc.EqualityColumns = keys
	p, err := NewParser("db."+name, tbl.Schema(), wc)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{cat: cat, ident: tbl.Identifier(), parser: p, sink: "sink-" + name, shards: 1,
		committer: Committer{KeyColumns: keys, DeleteFormat: cfg.format}}
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
func (f *fixture) prepare(t testing.TB, changes []row.Row, upsert bool) Window {
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
	w := Window{SinkID: f.sink, WindowEndMs: f.window + 1000}
	format, err := f.committer.format(tbl)
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
		w.MaxSeq = max(w.MaxSeq, res.MaxSeq)
		rows = append(rows, res.Rows...)
		if format == config.DeleteFormatDV {
			r, err := Resolve(ctx, tbl, f.committer.KeyColumns, res.DeleteKeys)
			if err != nil {
				t.Fatal(err)
			}
			w.Resolved = append(w.Resolved, r)
		} else {
			w.DeleteKeys = append(w.DeleteKeys, res.DeleteKeys...)
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
		files, err := write.WriteDataFiles(ctx, tbl, rec.Schema(), []arrow.RecordBatch{rec}, write.FileOptions{TargetFileSizeBytes: f.fileSize})
		if err != nil {
			t.Fatal(err)
		}
		w.DataFiles = files
	}
	return w
}

// commit commits w through f's committer and advances the window.
func (f *fixture) commit(t testing.TB, cat table.CatalogIO, w Window) CommitResult {
	t.Helper()
	if cat == nil {
		cat = f.cat.Catalog
	}
	res, err := f.committer.Commit(context.Background(), cat, f.ident, w)
	if err != nil {
		t.Fatal(err)
	}
	f.window = max(f.window, w.WindowEndMs)
	return res
}

// apply prepares and commits one window and checks the table's invariants.
func (f *fixture) apply(t testing.TB, changes []row.Row, upsert bool) CommitResult {
	t.Helper()
	res := f.commit(t, nil, f.prepare(t, changes, upsert))
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

// lossyCatalog commits through the real catalog and then reports a failure, as a
// lost response would, the first `lose` times.
type lossyCatalog struct {
	catalog.Catalog
	lose int
}

func (c *lossyCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, ups)
	if err == nil && c.lose > 0 {
		c.lose--
		return nil, "", fmt.Errorf("connection reset by peer (response lost)")
	}
	return meta, loc, err
}
