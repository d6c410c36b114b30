package cdc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
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
			spans := rowGroupSpans(pr, pr.MetaData().Schema.ColumnIndexByName("id"), par, nil)
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

// TestKeyReadSkipsRowGroups: the key read of a resolution skips the row groups
// whose key column statistics hold none of the keys (keySet.outside): a file
// written in key order is read only where the keys lie, the key bytes counted are
// those of the row groups read, and the positions found are those of a full read,
// for a long key column and a string one, by one goroutine and by several.
func TestKeyReadSkipsRowGroups(t *testing.T) {
	defer func(old int64) { minSpanRows = old }(minSpanRows)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	minSpanRows = 1000
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

// TestKeyReadSplitsRowGroupByPages: a file of one large row group, as Spark and
// Java Iceberg leave a compacted table (row groups roll at 128 MB), is read by
// several goroutines in spans cut at page boundaries of its offset index
// (pageSpans), and every span reads exactly its rows: a nullable long key and a
// dictionary-encoded string key (whose dictionary page comes before the span's
// first page) read in spans give every row's value at its position, as the file
// holds them. A file without a page index is read as one span.
func TestKeyReadSplitsRowGroupByPages(t *testing.T) {
	defer func(old int64) { minSpanRows = old }(minSpanRows)
	minSpanRows = 1000
	const rows, pageRows = 60_000, 500
	ids := make([]*int64, rows)
	cities := make([]string, rows)
	for i := range rows {
		if i%97 != 5 {
			v := int64(i) * 3
			ids[i] = &v
		}
		cities[i] = fmt.Sprintf("city-%d", i%300)
	}
	write := func(pageIndex bool) string {
		fieldID := func(id string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id}) }
		sc := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fieldID("1")},
			{Name: "city", Type: arrow.BinaryTypes.String, Metadata: fieldID("2")},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i := range rows {
			if ids[i] == nil {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(*ids[i])
			}
			b.Field(1).(*array.StringBuilder).Append(cities[i])
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		path := filepath.Join(t.TempDir(), fmt.Sprint("index-", pageIndex, ".parquet"))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		// One row group; a page per write batch of 500 rows (pages of 1 byte roll
		// at every batch).
		w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(
			parquet.WithMaxRowGroupLength(rows), parquet.WithBatchSize(pageRows), parquet.WithDataPageSize(1),
			parquet.WithPageIndexEnabled(pageIndex), parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String, Required: true})
	idCodec, err := newKeyCodec(sc, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	cityCodec, err := newKeyCodec(sc, []string{"city"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fs := iceio.LocalFS{}
	for _, pageIndex := range []bool{true, false} {
		path := write(pageIndex)
		var spans []rowSpan
		err := withParquet(fs, path, func(pr *file.Reader) error {
			if n := pr.NumRowGroups(); n != 1 {
				t.Fatalf("%d row groups, want 1", n)
			}
			spans = rowGroupSpans(pr, 0, 4, nil)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !pageIndex {
			if len(spans) != 1 || spans[0].lo != 0 || spans[0].hi != 1 || spans[0].rows != 0 {
				t.Errorf("no page index: spans %+v, want the row group as one", spans)
			}
		} else {
			if len(spans) != 4 {
				t.Fatalf("spans %+v, want 4 parts of the row group", spans)
			}
			next := int64(0)
			for i, s := range spans {
				if s.lo != 0 || s.hi != 1 || s.first != next || s.base != s.first || s.first%pageRows != 0 || s.rows < minSpanRows {
					t.Errorf("span %d is %+v, want rows from %d at a page boundary", i, s, next)
				}
				next = s.first + s.rows
			}
			if next != rows {
				t.Errorf("spans %+v end at row %d, want %d", spans, next, rows)
			}
			// Each part fetches its own pages: together, the id chunk once.
			var bytes int64
			for _, s := range spans {
				bytes += s.bytes
			}
			err := withParquet(fs, path, func(pr *file.Reader) error {
				cc, err := pr.MetaData().RowGroup(0).ColumnChunk(0)
				if err == nil && bytes != cc.TotalCompressedSize() {
					t.Errorf("spans fetch %d bytes, want the id chunk's %d", bytes, cc.TotalCompressedSize())
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, par := range []int{1, 4} {
			// Every value read, by position, from all spans.
			gotIDs := make([]*int64, rows)
			seen := make([]int, rows)
			var read int64
			err := readInt64Key(ctx, fs, path, idCodec, &read, par, nil, func(span int, vals []int64, defs []int16, maxDef int16, base int64) error {
				k := 0
				for j, d := range defs {
					pos := base + int64(j)
					seen[pos]++ // positions of different spans never meet
					if d == maxDef {
						v := vals[k]
						gotIDs[pos] = &v
						k++
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				if seen[i] != 1 || (ids[i] == nil) != (gotIDs[i] == nil) || ids[i] != nil && *ids[i] != *gotIDs[i] {
					t.Fatalf("page index %v, par %d: row %d read %d times as %v, want %v once", pageIndex, par, i, seen[i], gotIDs[i], ids[i])
				}
			}
			gotCities := make([]string, rows)
			err = readByteArrayKey(ctx, fs, path, cityCodec, &read, par, nil, func(span int, vals []parquet.ByteArray, defs []int16, maxDef int16, base int64) error {
				eachValue(vals, defs, maxDef, base, func(v parquet.ByteArray, pos int64) {
					if gotCities[pos] != "" {
						t.Errorf("city of row %d read twice", pos)
					}
					gotCities[pos] = string(v)
				})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gotCities, cities) {
				i := slices.IndexFunc(gotCities, func(c string) bool { return c == "" })
				t.Fatalf("page index %v, par %d: cities read differ (first unread row %d)", pageIndex, par, i)
			}
		}
	}
}
