//go:build interop

package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// icebeamChange is a Debezium-style change of a Columns row: op (c, u, d), the
// sequence number, and the row's columns.
type icebeamChange struct {
	Op       string       `iceberg:"op"`
	Seq      int64        `iceberg:"_commit_snapshot_sequence_number"`
	ID       int64        `iceberg:"id"`
	Category *string      `iceberg:"category"`
	Qty      *int32       `iceberg:"qty"`
	Amount   *ibg.Decimal `iceberg:"amount" precision:"10" scale:"2"`
	Score    *float64     `iceberg:"score"`
	Day      *ibg.Date    `iceberg:"day"`
	TS       *time.Time   `iceberg:"ts"`
	Flag     *bool        `iceberg:"flag"`
}

// changeSpec is one change: op on id with the values GenRow gives ValuesOf.
type changeSpec struct {
	Op       string
	ID       int64
	ValuesOf int64
	Seq      int64
}

func init() {
	beam.RegisterType(reflect.TypeFor[icebeamChange]())
	beam.RegisterType(reflect.TypeFor[changeSpec]())
	register.Function2x0(genChangeFn)
	register.Emitter1[icebeamChange]()
}

// morValues returns the row op writes for c: GenRow(c.ValuesOf) with id c.ID.
func morValues(c changeSpec) []any {
	v := slices.Clone(GenRow(c.ValuesOf))
	v[0] = c.ID
	return v
}

// genChangeFn builds the change row of c.
func genChangeFn(c changeSpec, emit func(icebeamChange)) {
	v := morValues(c)
	out := icebeamChange{Op: c.Op, Seq: c.Seq, ID: c.ID}
	if v[1] != nil {
		s := v[1].(string)
		out.Category = &s
	}
	q := v[2].(int32)
	out.Qty = &q
	d := v[3].(ibg.Decimal)
	out.Amount = &d
	if v[4] != nil {
		f := v[4].(float64)
		out.Score = &f
	}
	day := v[5].(ibg.Date)
	out.Day = &day
	ts := time.UnixMicro(int64(v[6].(ibg.Timestamp))).UTC()
	out.TS = &ts
	b := v[7].(bool)
	out.Flag = &b
	emit(out)
}

// writeIcebeamMOR writes the "icebeam_mor" scenarios with iceberg.Write in mode
// merge-on-read on prism, and their answers to expected/icebeam_mor.json. Each is a
// v3 table appended by iceberg.Write (30,000 rows), then a CDC batch (deletes,
// upserts, inserts: first DVs on several data files and a new data file), then a
// second CDC batch that deletes more rows of one base data file that already has a
// DV (its DV is merged and replaced). In the second scenario the second batch also
// upserts rows of the first batch's data file, so its commit holds several DVs, one
// replacing an older DV. The third is writeMORReplaced.
func writeIcebeamMOR(t *testing.T) {
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	exp := Expected{Writer: "icebeam_mor"}
	for _, v := range []struct {
		ident, name string
		twoFiles    bool
	}{
		{"go_icebeam.v3_mor", "v3 merge-on-read CDC (2 batches, merged DV)", false},
		{"go_icebeam.v3_mor_2dvs", "v3 merge-on-read CDC (2 batches, merged DV among several in its Puffin)", true},
	} {
		live := writeMORScenario(t, cat, v.ident, v.twoFiles)
		sc := scenarioFor(t, v.name, v.ident, 3, live, "PUFFIN/position")
		sc.Lineage = lineageQuery(t, cat, v.ident)
		exp.Scenarios = append(exp.Scenarios, sc)
	}
	const replaced = "go_icebeam.v3_mor_replaced"
	sc := scenarioFor(t, "v3 merge-on-read CDC (4 batches, DVs replaced in each)",
		replaced, 3, writeMORReplaced(t, cat, replaced), "PUFFIN/position")
	sc.Lineage = lineageQuery(t, cat, replaced)
	exp.Scenarios = append(exp.Scenarios, sc)
	const compacted = "go_icebeam.v3_mor_compacted"
	sc = scenarioFor(t, "v3 merge-on-read CDC (4 batches of replaced DVs), then compacted by Maintain",
		compacted, 3, writeMORCompacted(t, cat, compacted))
	sc.Lineage = lineageQuery(t, cat, compacted)
	exp.Scenarios = append(exp.Scenarios, sc)
	exp.Scenarios = append(exp.Scenarios, writeUTF8MOR(t, cat))
	const blobbed = "go_icebeam.v3_mor_keyblob"
	sc = scenarioFor(t, "v3 merge-on-read CDC (2 batches), the second resolved by a key index blob",
		blobbed, 3, writeMORKeyBlob(t, cat, blobbed), "PUFFIN/position")
	exp.Scenarios = append(exp.Scenarios, sc)
	if err := WriteJSON(filepath.Join(expectedDir(t), "icebeam_mor.json"), exp); err != nil {
		t.Fatal(err)
	}
}

// morTable is a v3 table written with iceberg.Write and its model: the live rows
// by id.
type morTable struct {
	t     *testing.T
	cat   *icebergtest.LocalCatalog
	ident string
	live  map[int64][]any
	seq   int64
}

// newMORTable creates ident and appends the ids of each range in ranges, one
// iceberg.Write (one commit) per range.
func newMORTable(t *testing.T, cat *icebergtest.LocalCatalog, ident string, ranges ...[2]int64) *morTable {
	t.Helper()
	icebergtest.CreateTable(t, cat.Catalog, ident, Schema(), icebergtest.WithFormatVersion(3))
	m := &morTable{t: t, cat: cat, ident: ident, live: map[int64][]any{}}
	for _, r := range ranges {
		p, s := beam.NewPipelineWithRoot()
		var ranges []idRange
		for lo := r[0]; lo < r[1]; lo += 5000 {
			ranges = append(ranges, idRange{lo, min(lo+5000, r[1])})
		}
		res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: ident, CatalogName: cat.Name, CatalogProperties: cat.Props},
			beam.ParDo(s, genRowsFn, beam.CreateList(s, ranges)))
		if err != nil {
			t.Fatalf("TryWrite %s: %v", ident, err)
		}
		passert.Count(s, res.DeadLetter, "dead letters", 0)
		if err := ptest.Run(p); err != nil {
			t.Fatalf("append %s: %v", ident, err)
		}
		for id := r[0]; id < r[1]; id++ {
			m.live[id] = GenRow(id)
		}
	}
	return m
}

// change is the next change: op on id with the values of GenRow(valuesOf).
func (m *morTable) change(op string, id, valuesOf int64) changeSpec {
	m.seq++
	return changeSpec{Op: op, ID: id, ValuesOf: valuesOf, Seq: m.seq}
}

// apply writes changes with iceberg.Write in mode merge-on-read (upsert), one
// commit, and applies them to the model.
func (m *morTable) apply(changes []changeSpec) {
	m.t.Helper()
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: m.ident, CatalogName: m.cat.Name, CatalogProperties: m.cat.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", Upsert: true,
		ChangeTypeMap: map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
	}, beam.ParDo(s, genChangeFn, beam.CreateList(s, changes)))
	if err != nil {
		m.t.Fatalf("TryWrite %s (merge-on-read): %v", m.ident, err)
	}
	passert.Count(s, res.DeadLetter, "dead letters", 0)
	passert.Count(s, res.Snapshots, "snapshots", 1)
	if err := ptest.Run(p); err != nil {
		m.t.Fatalf("merge-on-read %s: %v", m.ident, err)
	}
	for _, c := range changes {
		if c.Op == "d" {
			delete(m.live, c.ID)
		} else {
			m.live[c.ID] = morValues(c)
		}
	}
}

// load loads the table.
func (m *morTable) load() *table.Table {
	m.t.Helper()
	tbl, err := m.cat.Catalog.LoadTable(context.Background(), table.Identifier(strings.Split(m.ident, ".")))
	if err != nil {
		m.t.Fatal(err)
	}
	return tbl
}

// writeMORScenario writes one merge-on-read scenario to ident and returns its live
// rows by id.
func writeMORScenario(t *testing.T, cat *icebergtest.LocalCatalog, ident string, twoFiles bool) map[int64][]any {
	ctx := context.Background()
	m := newMORTable(t, cat, ident, [2]int64{0, 20000}, [2]int64{20000, 30000})
	apply, change := m.apply, m.change

	// Batch 1: delete ids ending in 3, upsert ids ending in 7 with other values, in
	// [0, 30000); insert 30000..30999.
	var b1 []changeSpec
	for id := int64(0); id < 30000; id++ {
		switch id % 10 {
		case 3:
			b1 = append(b1, change("d", id, id))
		case 7:
			b1 = append(b1, change("u", id, id+500000))
		}
	}
	for id := int64(30000); id < 31000; id++ {
		b1 = append(b1, change("c", id, id))
	}
	before := rowIDsOf(t, m.load())
	apply(b1)
	// The upserted rows keep their _row_id (row lineage, as Spark's MERGE).
	after := rowIDsOf(t, m.load())
	for id := int64(7); id < 30000; id += 10 {
		if after[id] != before[id] {
			t.Fatalf("%s: upserted id %d has _row_id %d, had %d", ident, id, after[id], before[id])
		}
	}

	// Batch 2: delete up to 300 ids ending in 5 of one base data file that has a DV
	// now (its DV is replaced by the union).
	tbl := m.load()
	dvs := icebergtest.LiveDVs(t, tbl)
	var target string
	for _, df := range icebergtest.DataFiles(t, tbl) {
		if len(dvs[df.FilePath()]) == 1 && (target == "" || df.FilePath() < target) {
			target = df.FilePath()
		}
	}
	if target == "" {
		t.Fatal("no data file has a DV after the first batch")
	}
	idsIn, err := idsAt(ctx, tbl, target)
	if err != nil {
		t.Fatal(err)
	}
	var b2 []changeSpec
	for _, id := range idsIn {
		if id%10 == 5 && len(b2) < 300 {
			b2 = append(b2, change("d", id, id))
		}
	}
	if len(b2) == 0 {
		t.Fatalf("data file %s holds no id ending in 5", target)
	}
	if twoFiles {
		// Upsert again rows batch 1 rewrote: their data file gets its first DV.
		for id := int64(7); id < 2000; id += 20 {
			b2 = append(b2, change("u", id, id+700000))
		}
	}
	apply(b2)

	tbl = m.load()
	icebergtest.RequireValid(t, tbl)
	sum := tbl.CurrentSnapshot().Summary.Properties
	// Without twoFiles one DV (replacing the old one); with it, also first DVs on the
	// first batch's data files (one per shard that upserted those ids).
	added, _ := strconv.Atoi(sum["added-dvs"])
	if sum["removed-dvs"] != "1" || (added == 1) == twoFiles {
		t.Fatalf("%s: second batch added %d and replaced %s DVs", ident, added, sum["removed-dvs"])
	}
	return m.live
}

// writeMORReplaced writes ident: three appends of 6,000 rows, then four CDC batches
// that each replace DVs. Of the base data files in path order, the 1st loses every
// 8th row per batch (its DV grows to a half of the file, no runs), the 2nd one
// delete and one upsert per batch, the 3rd two deletes in batches 1 and 3 (in batch 1
// a DV as long as the 2nd file's); from batch 2 on, the row upserted the batch
// before is upserted again (a DV on a data file CDC wrote). With one Puffin file per
// commit and blobs in path order, the long DV came first and DuckDB 1.5.5 read the
// next blob as that DV (README.md); the live rows by id are returned.
func writeMORReplaced(t *testing.T, cat *icebergtest.LocalCatalog, ident string) map[int64][]any {
	ctx := context.Background()
	m := newMORTable(t, cat, ident, [2]int64{0, 6000}, [2]int64{6000, 12000}, [2]int64{12000, 18000})
	tbl := m.load()
	var paths []string
	for _, df := range icebergtest.DataFiles(t, tbl) {
		paths = append(paths, df.FilePath())
	}
	slices.Sort(paths)
	if len(paths) < 3 {
		t.Fatalf("%s: the appends made %d data files, want at least 3", ident, len(paths))
	}
	var ids [3][]int64
	for i := range ids {
		var err error
		if ids[i], err = idsAt(ctx, tbl, paths[i]); err != nil {
			t.Fatal(err)
		}
		if len(ids[i]) < 1000 {
			t.Fatalf("%s: data file %s holds %d rows, want at least 1000", ident, paths[i], len(ids[i]))
		}
	}
	var upserted int64 = -1
	for k := 0; k < 4; k++ {
		var b []changeSpec
		for i, id := range ids[0] {
			if i%8 == 2*k {
				b = append(b, m.change("d", id, id))
			}
		}
		b = append(b, m.change("d", ids[1][10*k], ids[1][10*k]))
		if k%2 == 0 {
			b = append(b, m.change("d", ids[2][10*k], ids[2][10*k]), m.change("d", ids[2][10*k+1], ids[2][10*k+1]))
		}
		if upserted >= 0 {
			b = append(b, m.change("u", upserted, upserted+900000))
		}
		upserted = ids[1][10*k+1]
		b = append(b, m.change("u", upserted, upserted+800000))
		m.apply(b)
		if k > 0 {
			sum := m.load().CurrentSnapshot().Summary.Properties
			if n, _ := strconv.Atoi(sum["removed-dvs"]); n < 2 {
				t.Fatalf("%s: batch %d replaced %s DVs, want at least 2", ident, k+1, sum["removed-dvs"])
			}
		}
	}
	icebergtest.RequireValid(t, m.load())
	return m.live
}

// writeMORCompacted writes writeMORReplaced's history to ident, then runs Maintain
// (rewrite_data_files folding every DV, expire_snapshots): the table must be left
// with one data file, no delete file and the same rows.
func writeMORCompacted(t *testing.T, cat *icebergtest.LocalCatalog, ident string) map[int64][]any {
	live := writeMORReplaced(t, cat, ident)
	one, zero := 1, 0
	p, s := beam.NewPipelineWithRoot()
	reports := iceberg.Maintain(s, iceberg.MaintainConfig{Table: ident, CatalogName: cat.Name, CatalogProperties: cat.Props,
		Operations: []string{iceberg.OpRewriteDataFiles, iceberg.OpExpireSnapshots}, DeleteFileThreshold: &one,
		ExpireOlderThanSeconds: &zero, RetainLast: &one})
	passert.Count(s, reports, "reports", 1)
	if err := ptest.Run(p); err != nil {
		t.Fatalf("maintain %s: %v", ident, err)
	}
	tbl, err := cat.Catalog.LoadTable(context.Background(), strings.Split(ident, "."))
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	if d, del := icebergtest.DataFiles(t, tbl), icebergtest.DeleteFiles(t, tbl); len(d) != 1 || len(del) != 0 {
		t.Fatalf("%s after Maintain: %d data files, %d delete files; want 1 and 0", ident, len(d), len(del))
	}
	return live
}

// writeMORKeyBlob writes ident: 20,000 rows in one append, then two CDC batches;
// the first reads the key column of the large data file (cdc.MinBlobRows lowered
// to 5,000) and writes its key index blob to the table's key index file (the
// table property icebeam.key-index-file names it), which the second uses: the
// engines read a table with icebeam's key index.
func writeMORKeyBlob(t *testing.T, cat *icebergtest.LocalCatalog, ident string) map[int64][]any {
	defer func(n int64) { cdc.MinBlobRows = n }(cdc.MinBlobRows)
	cdc.MinBlobRows = 5000
	m := newMORTable(t, cat, ident, [2]int64{0, 20000})
	for b := range int64(2) {
		var changes []changeSpec
		for id := b; id < 20000; id += 97 {
			op := map[bool]string{true: "d", false: "u"}[id%2 == 0]
			changes = append(changes, m.change(op, id, id+900000))
		}
		changes = append(changes, m.change("c", 20000+b, 20000+b))
		m.apply(changes)
	}
	tbl := m.load()
	icebergtest.RequireValid(t, tbl)
	if tbl.Properties()["icebeam.key-index-file"] == "" || len(icebergtest.DataFiles(t, tbl)) < 1 {
		t.Fatalf("%s: no key index file after the first batch (properties %v)", ident, tbl.Properties())
	}
	return m.live
}

// lineageQuery is the row lineage read of ident (id, _row_id,
// _last_updated_sequence_number of every live row) as iceberg-go reads it. Updated
// rows keep the _row_id of the row they replaced (the writers check that), so other
// readers agreeing on it shows they read the _row_id the data files store.
func lineageQuery(t *testing.T, cat *icebergtest.LocalCatalog, ident string) *Query {
	t.Helper()
	tbl, err := cat.Catalog.LoadTable(context.Background(), table.Identifier(strings.Split(ident, ".")))
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{"id", ibg.RowIDColumnName, ibg.LastUpdatedSequenceNumberColumnName}
	at := icebergtest.ReadAll(t, tbl, nil, keep...)
	q := &Query{Name: "lineage", Keep: keep}
	var sum Checksum
	seen := map[int64]bool{}
	rdr := array.NewTableReader(at, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids, rowIDs, seqs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if rowIDs.IsNull(i) || seqs.IsNull(i) || seen[rowIDs.Value(i)] {
				t.Fatalf("%s: id %d has _row_id %v (null or not unique)", ident, ids.Value(i), rowIDs.GetOneForMarshal(i))
			}
			seen[rowIDs.Value(i)] = true
			sum.Add(fmt.Sprintf("%d|%d|%d", ids.Value(i), rowIDs.Value(i), seqs.Value(i)))
		}
	}
	q.Count, q.Checksum = sum.N, sum.String()
	return q
}

// rowIDsOf returns the _row_id of every live row of tbl by id.
func rowIDsOf(t *testing.T, tbl *table.Table) map[int64]int64 {
	t.Helper()
	at := icebergtest.ReadAll(t, tbl, nil, "id", ibg.RowIDColumnName)
	out := map[int64]int64{}
	rdr := array.NewTableReader(at, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids, rowIDs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			out[ids.Value(i)] = rowIDs.Value(i)
		}
	}
	return out
}

// idsAt returns the ids of the rows of data file path of tbl (deleted or not).
func idsAt(ctx context.Context, tbl *table.Table, path string) ([]int64, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	col := pr.MetaData().Schema.ColumnIndexByName("id")
	at, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	var out []int64
	for _, chunk := range at.Column(col).Data().Chunks() {
		out = append(out, chunk.(*array.Int64).Int64Values()...)
	}
	return out, nil
}
