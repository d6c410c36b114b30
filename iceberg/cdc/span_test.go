package cdc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/pqspan"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestParallelKeyRead: a data file of several row groups is read in spans of row
// groups by several goroutines (pqspan.Spans): the spans cover the row groups in
// order with the right first positions, and the expected keys' scan, a plain
// resolution (a long key column and a string one) and the key index (its batch
// read and its large-file read, whose chunks the spans flush) find exactly the
// live rows of the keys, as read by one goroutine.
func TestParallelKeyRead(t *testing.T) {
	defer func(old int64) { pqspan.MinSpanRows = old }(pqspan.MinSpanRows)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	pqspan.MinSpanRows = 1000
	ctx := context.Background()
	cat := icebergtest.NewLocalCatalog(t)
	newTable := func(name string) *table.Table {
		// Pages of 500 rows, row groups of 1000: a file of 6000 rows has 6.
		f := newFixture(t, cat, name, tableProps(map[string]string{
			table.ParquetPageRowLimitKey: "500", table.ParquetRowGroupLimitKey: "1000"}))
		rows := cityRows(6000)
		rand.New(rand.NewPCG(21, 22)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		f.seed(t, rows, len(rows))
		f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1), change("d", 5000, "", "", 1)}, false)
		tbl := f.table(t)
		if n := len(icebergtest.DataFiles(t, tbl)); n != 1 {
			t.Fatalf("%d data files, want the one seeded", n)
		}
		return tbl
	}

	tbl := newTable("spans")
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := icebergtest.DataFiles(t, tbl)[0].FilePath()
	err = withParquet(fs, path, func(pr *file.Reader) error {
		if n := pr.NumRowGroups(); n != 6 {
			t.Fatalf("%d row groups, want 6", n)
		}
		for _, par := range []int{1, 2, 4, 8} {
			spans := pqspan.Spans(pr, pr.MetaData().Schema.ColumnIndexByName("id"), par, nil)
			if len(spans) != min(par, 6) || spans[0].Lo != 0 || spans[len(spans)-1].Hi != 6 {
				t.Errorf("par %d: spans %+v, want %d covering row groups 0-5", par, spans, min(par, 6))
			}
			for i, s := range spans {
				if s.Base != int64(s.Lo)*1000 || s.Hi <= s.Lo || (i > 0 && s.Lo != spans[i-1].Hi) {
					t.Errorf("par %d: span %d is %+v", par, i, s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	keys, want := randomIDKeys(rand.New(rand.NewPCG(23, 24)), 700, 6500, 10, 5000, 1, 6000)
	brute := bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] })
	// Plain resolutions: by id, and by city (the string column read as bytes).
	res, err := Resolver{KeyColumns: []string{"id"}}.Resolve(ctx, tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, res.Positions(), brute)
	var cities [][]any
	for _, k := range keys {
		cities = append(cities, []any{fmt.Sprintf("city-%d", k[0])})
	}
	res, err = Resolver{KeyColumns: []string{"city"}}.Resolve(ctx, tbl, cities)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, res.Positions(), brute)

	// The expected keys' scan.
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 1 << 20}
	e, err := r.Expect(tbl)
	if err != nil {
		t.Fatal(err)
	}
	var b KeyBatch
	for _, k := range keys {
		enc, err := e.ks.codec.append(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(enc)
	}
	e.Add(&b)
	res, err = r.Resolve(ctx, tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	if files, ok := e.Scanned(); !ok || len(files) != 1 || res.FilesRead != 1 {
		t.Errorf("expected keys' scan: ran %v, read %v (%d)", ok, files, res.FilesRead)
	}
	samePositions(t, res.Positions(), brute)

	// The key index: its batch read, and its large-file read (chunks of 4000).
	for _, batch := range []int64{1 << 20, 4000} {
		t.Run(fmt.Sprint("index batch ", batch), func(t *testing.T) {
			defer func(old int64) { minIndexBatch = old }(minIndexBatch)
			minIndexBatch = batch
			tbl := newTable(fmt.Sprint("index", batch))
			r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 500 * IndexEntryBytes, IndexParts: 4}
			_, x := resolveChecked(t, r, tbl, keys, want)
			if n := x.Entries(); n != 5997 {
				t.Errorf("index holds %d rows, want the 5997 live ones", n)
			}
			if !slices.Equal(x.files[0:1], []indexFile{{path: x.files[0].path, live: true, entries: 5997}}) {
				t.Errorf("index files %+v, want the one file of 5997 entries", x.files)
			}
		})
	}
}

// TestKeyReadSkipsRowGroups: the key read of a resolution skips the row groups
// whose key column statistics hold none of the keys (keySet.outside): a file
// written in key order is read only where the keys lie, the key bytes counted are
// those of the row groups read, and the positions found are those of a full read,
// for a long key column and a string one, by one goroutine and by several.
func TestKeyReadSkipsRowGroups(t *testing.T) {
	defer func(old int64) { pqspan.MinSpanRows = old }(pqspan.MinSpanRows)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	pqspan.MinSpanRows = 1000
	ctx := context.Background()
	// Row groups of 1000 rows in id order: group g holds ids 1000g+1 .. 1000g+1000.
	f := newFixture(t, nil, "clustered", tableProps(map[string]string{
		table.ParquetPageRowLimitKey: "500", table.ParquetRowGroupLimitKey: "1000"}))
	f.seed(t, cityRows(6000), 6000)
	tbl := f.table(t)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := icebergtest.DataFiles(t, tbl)[0].FilePath()
	// The stored size of the id and city chunks of each row group.
	var idBytes, cityBytes []int64
	err = withParquet(fs, path, func(pr *file.Reader) error {
		if n := pr.NumRowGroups(); n != 6 {
			t.Fatalf("%d row groups, want 6", n)
		}
		sc := pr.MetaData().Schema
		for rg := range 6 {
			for _, c := range []struct {
				name string
				out  *[]int64
			}{{"id", &idBytes}, {"city", &cityBytes}} {
				cc, err := pr.MetaData().RowGroup(rg).ColumnChunk(sc.ColumnIndexByName(c.name))
				if err != nil {
					t.Fatal(err)
				}
				*c.out = append(*c.out, cc.TotalCompressedSize())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(b []int64, groups ...int) (n int64) {
		for _, g := range groups {
			n += b[g]
		}
		return n
	}

	for _, par := range []int{1, 4} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(par))
		// Keys in row groups 2 and 4 (the first and last rows of group 2), and
		// ids no row holds: one inside group 4's bounds, one past every group.
		ids := []int64{2001, 2500, 3000, 4100, 4200, 4999, 4321}
		want := map[int64]bool{}
		var keys [][]any
		for _, id := range ids {
			keys = append(keys, []any{id})
			want[id] = true
		}
		brute := bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] })
		keys = append(keys, []any{int64(9000)})
		res, err := Resolver{KeyColumns: []string{"id"}}.Resolve(ctx, tbl, keys)
		if err != nil {
			t.Fatal(err)
		}
		samePositions(t, res.Positions(), brute)
		if got, w := res.KeyBytes, sum(idBytes, 2, 4); got != w {
			t.Errorf("par %d: %d id bytes read, want %d (row groups 2 and 4 of %v)", par, got, w, idBytes)
		}

		// A string key: "city-4100" and "city-4200" sort within the bounds of
		// groups 0 ("city-1" .. "city-999") and 4 ("city-4001" .. "city-5000")
		// only: groups 1, 2, 3 ("city-3001" .. "city-4000") and 5 are skipped.
		var cities [][]any
		for _, id := range []int64{4100, 4200} {
			cities = append(cities, []any{fmt.Sprintf("city-%d", id)})
		}
		brute = bruteForce(t, tbl, func(id int64, _ string) bool { return id == 4100 || id == 4200 })
		res, err = Resolver{KeyColumns: []string{"city"}}.Resolve(ctx, tbl, cities)
		if err != nil {
			t.Fatal(err)
		}
		samePositions(t, res.Positions(), brute)
		if got, w := res.KeyBytes, sum(cityBytes, 0, 4); got != w {
			t.Errorf("par %d: %d city bytes read, want %d (row groups 0 and 4 of %v)", par, got, w, cityBytes)
		}
	}
}
