package cdc

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestSeedScenario is the scenario of the V3 deletion vector document: a CDC batch
// deletes id=5000 and updates id=1 to NY on a 100,000-row table.
func TestSeedScenario(t *testing.T) {
	f := newFixture(t, nil, "seed")
	f.seed(t, cityRows(100000), 100000)
	res := f.apply(t, []row.Row{
		change("d", 5000, "city-5000", "CA", 10),
		change("b", 1, "city-1", "TX", 11),
		change("u", 1, "city-1", "NY", 11),
	}, false)
	if res.DVsAdded != 1 || res.DVsRemoved != 0 || res.PositionsDeleted != 2 || res.RowsAdded != 1 || res.DeleteFilesAdded != 1 {
		t.Fatalf("result %+v", res)
	}
	got := f.contents(t)
	if len(got) != 99999 {
		t.Fatalf("%d rows, want 99999", len(got))
	}
	if _, ok := got[5000]; ok {
		t.Fatal("id 5000 still there")
	}
	if v := got[1]; len(v) != 1 || v[0] != "city-1|NY" {
		t.Fatalf("id 1 = %v", v)
	}
	tbl := f.table(t)
	sum := tbl.CurrentSnapshot().Summary.Properties
	for k, want := range map[string]string{"added-delete-files": "1", "added-position-deletes": "2", "added-records": "1",
		SummaryAddedDVs: "1", SummaryRemovedDVs: "0"} {
		if sum[k] != want {
			t.Errorf("summary %s = %q, want %q", k, sum[k], want)
		}
	}
	dir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	puffins, _ := filepath.Glob(dir + "/*.puffin")
	if len(puffins) != 1 {
		t.Fatalf("%d .puffin files in %s", len(puffins), dir)
	}
	if err := icebergtest.CheckTable(context.Background(), tbl); err != nil {
		t.Fatal(err)
	}
}

// TestSecondCommitMergesDV deletes more rows of a file that has a DV: one merged DV
// replaces the old one.
func TestSecondCommitMergesDV(t *testing.T) {
	f := newFixture(t, nil, "merge")
	f.seed(t, cityRows(1000), 1000)
	f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 20, "", "", 1)}, false)
	old := icebergtest.LiveDVs(t, f.table(t))
	res := f.apply(t, []row.Row{change("d", 30, "", "", 2), change("d", 10, "", "", 2)}, false)
	if res.DVsAdded != 1 || res.DVsRemoved != 1 || res.PositionsDeleted != 1 || res.DeleteFilesAdded != 1 {
		t.Fatalf("result %+v", res)
	}
	live := icebergtest.LiveDVs(t, f.table(t))
	if len(live) != 1 {
		t.Fatalf("live DVs %v", live)
	}
	for path, dvs := range live {
		if dvs[0].Count() != 3 || dvs[0].FilePath() == old[path][0].FilePath() {
			t.Fatalf("DV of %s: %d positions at %s (old %s)", path, dvs[0].Count(), dvs[0].FilePath(), old[path][0].FilePath())
		}
	}
	got := f.contents(t)
	if len(got) != 997 || got[10] != nil || got[20] != nil || got[30] != nil {
		t.Fatalf("%d rows", len(got))
	}
	// Deleting only rows already deleted commits no DV at all.
	res = f.apply(t, []row.Row{change("d", 30, "", "", 3)}, false)
	if res.SnapshotID != 0 || res.DVsAdded != 0 {
		t.Fatalf("no-op window committed: %+v", res)
	}
}

// TestConcurrentDV: another writer deletes rows of the same data file with a DV
// between resolution and commit; the commit re-resolves and merges.
func TestConcurrentDV(t *testing.T) {
	f := newFixture(t, nil, "concurrent")
	f.seed(t, cityRows(2000), 1000)
	w := f.prepare(t, []row.Row{change("b", 5, "city-5", "CA", 1), change("u", 5, "city-5", "NY", 1),
		change("d", 6, "", "", 1), change("d", 1500, "", "", 1)}, false)
	// Another writer: a DV on both data files (rows 7 and 1501), and one on row 6 too.
	tbl := f.table(t)
	pos := map[string][]int64{}
	for _, df := range icebergtest.DataFiles(t, tbl) {
		lo := df.LowerBoundValues()[1]
		if lo[0] == 1 {
			pos[df.FilePath()] = []int64{5, 6} // ids 6 and 7
		} else {
			pos[df.FilePath()] = []int64{500} // id 1501
		}
	}
	icebergtest.DeleteRowsDV(t, tbl, pos)
	res := f.commit(t, w)
	f.check(t)
	if res.Reresolved == 0 || res.DVsRemoved != 2 {
		t.Fatalf("result %+v, want a re-resolution replacing both DVs", res)
	}
	got := f.contents(t)
	for _, id := range []int64{6, 7, 1500, 1501} {
		if got[id] != nil {
			t.Errorf("id %d still there", id)
		}
	}
	if len(got) != 1996 || len(got[5]) != 1 || got[5][0] != "city-5|NY" {
		t.Fatalf("%d rows, id 5 = %v", len(got), got[5])
	}
}

// TestConcurrentRewrite: another writer rewrites the data file holding the keys
// between resolution and commit; the rows are found in the new file.
func TestConcurrentRewrite(t *testing.T) { testConcurrentRewrite(t) }

func testConcurrentRewrite(t *testing.T, opts ...fixtureOpt) {
	f := newFixture(t, nil, "rewrite", opts...)
	f.seed(t, cityRows(1000), 1000)
	w := f.prepare(t, []row.Row{change("d", 3, "", "", 1), change("b", 4, "", "", 1), change("u", 4, "c", "NY", 1)}, false)
	tbl := f.table(t)
	old := icebergtest.DataFiles(t, tbl)
	// Rewrite: the same rows, reversed, in a new file replacing the old one.
	rows := cityRows(1000)
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	rec := icebergtest.Records(t, tbl.Schema(), rows)
	defer rec.Release()
	files := icebergtest.WriteDataFiles(t, tbl, rec)
	txn := tbl.NewTransaction()
	var oldPaths, newPaths []string
	for _, df := range old {
		oldPaths = append(oldPaths, df.FilePath())
	}
	for _, df := range files {
		newPaths = append(newPaths, df.FilePath())
	}
	if err := txn.ReplaceDataFiles(context.Background(), oldPaths, newPaths, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := f.commit(t, w)
	f.check(t)
	if res.Reresolved == 0 || res.PositionsDeleted != 2 {
		t.Fatalf("result %+v", res)
	}
	got := f.contents(t)
	if len(got) != 999 || got[3] != nil || len(got[4]) != 1 || got[4][0] != "c|NY" {
		t.Fatalf("%d rows, id 3 %v, id 4 %v", len(got), got[3], got[4])
	}
}

// TestEqualityMatchesDV applies the same windows in dv and equality mode.
func TestEqualityMatchesDV(t *testing.T) {
	for _, part := range []bool{false, true} {
		name := map[bool]string{false: "unpartitioned", true: "partitioned"}[part]
		t.Run(name, func(t *testing.T) {
			opts := []fixtureOpt{}
			if part {
				opts = append(opts, partitioned())
			}
			cat := icebergtest.NewLocalCatalog(t)
			dvf := newFixture(t, cat, "dv_"+name, opts...)
			eqf := newFixture(t, cat, "eq_"+name, append(opts, equality())...)
			for _, f := range []*fixture{dvf, eqf} {
				f.seed(t, cityRows(300), 100)
			}
			windows := [][]row.Row{
				{change("d", 5, "city-5", "CA", 1), change("b", 6, "city-6", "TX", 1), change("u", 6, "x", "TX", 1), change("c", 400, "n", "WA", 1)},
				{change("c", 7, "city-7b", "WA", 2), change("d", 400, "n", "WA", 2), change("c", 401, "m", "OR", 2), change("d", 401, "m", "OR", 3)},
				{change("b", 8, "city-8", "NY", 4), change("u", 8, "y", "NY", 4), change("d", 8, "y", "NY", 5), change("c", 8, "z", "NY", 6)},
			}
			for i, w := range windows {
				upsert := i == 1 // window 2: upsert of id 7 (same state, so the equality key matches)
				dvf.apply(t, w, upsert)
				res := eqf.apply(t, w, upsert)
				if res.EqualityDeleteFiles == 0 || res.DVsAdded != 0 || res.EqualityDeletesAdded == 0 ||
					res.DeleteFilesAdded != int64(res.EqualityDeleteFiles) || res.PositionsDeleted != 0 {
					t.Fatalf("equality window %d: %+v", i, res)
				}
				a, b := dvf.contents(t), eqf.contents(t)
				if diff := diffLists(a, b); diff != "" {
					t.Fatalf("window %d: dv and equality tables differ:\n%s", i, diff)
				}
			}
			if got := dvf.contents(t); len(got) != 299 || got[7] == nil || got[8][0] != "z|NY" {
				t.Fatalf("dv table: %d rows, 7=%v 8=%v", len(got), got[7], got[8])
			}
		})
	}
}

func diffLists(a, b map[int64][]string) string {
	model := map[int64]string{}
	for id, v := range b {
		model[id] = strings.Join(v, ";")
	}
	return diffModel(a, model)
}
