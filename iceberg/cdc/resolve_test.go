package cdc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// bruteForce reads every row of every live data file (id and state) and returns
// the positions whose (state, id) or id is in keys, minus deleted positions.
func bruteForce(t *testing.T, tbl *table.Table, match func(id int64, state string) bool) map[string][]int64 {
	t.Helper()
	deleted := map[string]map[int64]bool{}
	ctx := context.Background()
	fs, _ := tbl.FS(ctx)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, task := range tasks {
		bm, err := deletedPositions(fs, task)
		if err != nil {
			t.Fatal(err)
		}
		path := task.File.FilePath()
		deleted[path] = map[int64]bool{}
		pf, err := file.OpenParquetFile(strings.TrimPrefix(path, "file://"), false)
		if err != nil {
			t.Fatal(err)
		}
		fr, _ := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
		at, err := fr.ReadTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids := at.Column(0).Data().Chunk(0).(*array.Int64)
		states := at.Column(2).Data().Chunk(0).(*array.String)
		for i := range ids.Len() {
			if match(ids.Value(i), states.Value(i)) && (bm == nil || !bm.Contains(uint64(i))) {
				out[path] = append(out[path], int64(i))
			}
		}
		at.Release()
		pf.Close()
	}
	return out
}

func samePositions(t *testing.T, got, want map[string][]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d files with hits, want %d", len(got), len(want))
	}
	for p, w := range want {
		g := slices.Clone(got[p])
		slices.Sort(g)
		if !slices.Equal(g, w) {
			t.Fatalf("%s: positions %v, want %v", p, g, w)
		}
	}
}

func TestResolveMatchesBruteForce(t *testing.T) {
	f := newFixture(t, nil, "resolve", partitioned())
	rows := cityRows(6000)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	f.seed(t, rows, 400) // 15 appends x 5 partitions: many files
	// Delete some rows first, so that they are not found again.
	f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1), change("d", 5000, "", "", 1)}, false)
	tbl := f.table(t)
	if n := len(icebergtest.DataFiles(t, tbl)); n < 50 {
		t.Fatalf("%d data files, want many", n)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	keys, want := randomIDKeys(rng, 700, 7000)                                  // some absent (> 6000)
	keys = append(keys, []any{int64(10)}, []any{int64(5000)}, []any{int64(10)}) // deleted, and a duplicate
	want[10], want[5000] = true, true
	res, err := Resolver{KeyColumns: []string{"id"}, ChunkKeys: 50}.Resolve(context.Background(), tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	bf := bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] })
	samePositions(t, res.Positions(), bf)
	if res.SnapshotID != tbl.CurrentSnapshot().SnapshotID || len(res.Keys) != len(want) {
		t.Fatalf("snapshot %d, %d keys (want %d)", res.SnapshotID, len(res.Keys), len(want))
	}
	if len(res.Scanned) >= len(icebergtest.DataFiles(t, tbl)) && len(want) < 100 {
		t.Fatalf("no pruning: %d files scanned", len(res.Scanned))
	}
	// Each hit's key is the key at that position.
	for _, fh := range res.Files {
		if len(fh.KeyIndexes) != len(fh.Positions) {
			t.Fatal("key indexes not parallel to positions")
		}
	}

	// Composite keys (state, id): only the pairs that exist are found.
	pairs := map[string]bool{}
	var ckeys [][]any
	states := []string{"CA", "TX", "WA", "NY", "OR"}
	for range 300 {
		id := int64(rng.IntN(6000) + 1)
		st := states[rng.IntN(len(states))]
		pairs[fmt.Sprint(st, id)] = true
		ckeys = append(ckeys, []any{st, id})
	}
	cres, err := Resolver{KeyColumns: []string{"state", "id"}}.Resolve(context.Background(), tbl, ckeys)
	if err != nil {
		t.Fatal(err)
	}
	cbf := bruteForce(t, tbl, func(id int64, st string) bool { return pairs[fmt.Sprint(st, id)] })
	samePositions(t, cres.Positions(), cbf)
	if cres.Found() == 0 || cres.Found() >= 300 {
		t.Fatalf("composite keys found %d of 300 random pairs", cres.Found())
	}

	// Absent keys only: nothing found; a table without snapshot: nothing either.
	none, err := Resolve(context.Background(), tbl, []string{"id"}, [][]any{{int64(-1)}, {int64(1 << 40)}})
	if err != nil || none.Found() != 0 {
		t.Fatalf("absent keys: %v %d", err, none.Found())
	}
	empty := newFixture(t, f.cat, "empty")
	none, err = Resolve(context.Background(), empty.table(t), []string{"id"}, [][]any{{int64(1)}})
	if err != nil || none.Found() != 0 || none.SnapshotID != 0 {
		t.Fatalf("empty table: %v %+v", err, none)
	}
}

// TestResolveStringKey: a single string key column is read straight from its
// Parquet pages (readByteArrayKey, the raw-bytes bit filter): the positions found
// are those of a brute-force read, with null keys skipped (their rows hold no
// value in the page), keys holding 0x00 (escaped in the encoding) found, absent
// keys not, through the scan and through the key index.
func TestResolveStringKey(t *testing.T) {
	f := newFixture(t, nil, "resolve_string")
	city := func(id int64) any {
		switch {
		case id%7 == 0:
			return nil
		case id%11 == 0:
			return fmt.Sprintf("a\x00b-%d", id%3)
		}
		return fmt.Sprintf("city-%d", id)
	}
	rows := make([][]any, 5000)
	for i := range rows {
		id := int64(i + 1)
		rows[i] = []any{id, city(id), "CA"}
	}
	f.seed(t, rows, 900)
	f.apply(t, []row.Row{change("d", 12, "", "", 1)}, false) // deleted: city-12 is not found again
	tbl := f.table(t)
	want := map[string]bool{"a\x00b-1": true, "city-12": true, "city-4999": true, "nowhere": true, "": true}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		if c, ok := city(int64(rng.IntN(5000) + 1)).(string); ok {
			want[c] = true
		}
	}
	var keys [][]any
	for c := range want {
		keys = append(keys, []any{c})
	}
	bf := bruteForce(t, tbl, func(id int64, _ string) bool {
		c, ok := city(id).(string)
		return ok && want[c]
	})
	for _, r := range []Resolver{{KeyColumns: []string{"city"}}, {KeyColumns: []string{"city"}, IndexBytes: 64 << 20}} {
		res, err := r.Resolve(context.Background(), tbl, keys)
		if err != nil {
			t.Fatal(err)
		}
		samePositions(t, res.Positions(), bf)
		if res.Found() < 100 {
			t.Fatalf("index %d: found %d keys", r.IndexBytes, res.Found())
		}
	}
}
