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

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestParallelKeyRead: a data file of several row groups is read in spans of row
// groups by several goroutines (rowGroupSpans): the spans cover the row groups in
// order with the right first positions, and the expected keys' scan, a plain
// resolution (a long key column and a string one) and the key index (its batch
// read and its large-file read, whose chunks the spans flush) find exactly the
// live rows of the keys, as read by one goroutine.
func TestParallelKeyRead(t *testing.T) {
	defer func(old int64) { minSpanRows = old }(minSpanRows)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	minSpanRows = 1000
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
			spans := rowGroupSpans(pr, par)
			if len(spans) != min(par, 6) || spans[0].lo != 0 || spans[len(spans)-1].hi != 6 {
				t.Errorf("par %d: spans %+v, want %d covering row groups 0-5", par, spans, min(par, 6))
			}
			for i, s := range spans {
				if s.base != int64(s.lo)*1000 || s.hi <= s.lo || (i > 0 && s.lo != spans[i-1].hi) {
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
