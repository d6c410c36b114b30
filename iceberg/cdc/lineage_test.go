package cdc

import (
	"context"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// TestResolutionRowIDs: RowIDs gives the resolved keys that want accepts, and only
// those, their row's _row_id (first_row_id plus position here: the seed stores no
// _row_id); a key not in the table has none.
func TestResolutionRowIDs(t *testing.T) {
	f := newFixture(t, nil, "rowids")
	f.seed(t, cityRows(20), 10) // ids 1..10 at rows 0..9, ids 11..20 at rows 10..19
	tbl := f.table(t)
	keys := [][]any{{int64(3)}, {int64(15)}, {int64(20)}, {int64(99)}} // 99 is not in the table
	res, err := Resolve(context.Background(), tbl, f.keys, keys)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want func(int32) bool
		ids  map[int32]int64
	}{
		{"all", func(int32) bool { return true }, map[int32]int64{0: 2, 1: 14, 2: 19}},
		{"second file only", func(k int32) bool { return k == 2 }, map[int32]int64{2: 19}},
		{"none", func(int32) bool { return false }, map[int32]int64{}},
	} {
		ids, err := res.RowIDs(context.Background(), fs, c.want)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(ids, c.ids) {
			t.Errorf("%s: row ids %v, want %v", c.name, ids, c.ids)
		}
	}
}

// writeRowIDFile writes a Parquet file at path with an id column and, when ids is
// not nil, a _row_id column (its reserved field ID) holding ids, -1 as null, in row
// groups of 3 rows.
func writeRowIDFile(t testing.TB, path string, n int, ids []int64) {
	writeRowIDFileGroups(t, path, n, ids, 3)
}

// writeRowIDFileGroups is writeRowIDFile with row groups of rowGroup rows.
func writeRowIDFileGroups(t testing.TB, path string, n int, ids []int64, rowGroup int64) {
	t.Helper()
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}
	if ids != nil {
		fields = append(fields, arrow.Field{Name: "_row_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(ibg.RowIDFieldID)})})
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if ids != nil {
			if ids[i] < 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int64Builder).Append(ids[i])
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRowIDCache: the cache returns a file's _row_id column (nulls as -1, row groups
// in order) or nil for a file without one, serves it again without reading the
// file, and drops the least recently used columns when over its limit.
func TestRowIDCache(t *testing.T) {
	dir := t.TempDir()
	fs := iceio.LocalFS{}
	a, b, c, none := dir+"/a.parquet", dir+"/b.parquet", dir+"/c.parquet", dir+"/none.parquet"
	writeRowIDFile(t, a, 7, []int64{10, -1, 12, 13, -1, 15, 16})
	writeRowIDFile(t, b, 7, []int64{20, 21, 22, 23, 24, 25, 26})
	writeRowIDFile(t, c, 7, []int64{-1, -1, -1, -1, -1, -1, 36})
	writeRowIDFile(t, none, 5, nil)
	cache := &rowIDCache{limit: 2 * 7 * 8, m: map[string]*rowIDEntry{}} // two columns
	ctx := context.Background()
	get := func(path string) []int64 {
		t.Helper()
		ids, err := cache.get(ctx, fs, path)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := get(a); !slices.Equal(got, []int64{10, -1, 12, 13, -1, 15, 16}) {
		t.Fatalf("a: %v", got)
	}
	if got := get(none); got != nil {
		t.Fatalf("a file without _row_id: %v", got)
	}
	get(b)
	// Served from the cache: the file is gone.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if got := get(a); len(got) != 7 || got[2] != 12 {
		t.Fatalf("a again: %v", got)
	}
	// c goes over the limit: b, the least recently used, is dropped; a stays.
	if got := get(c); got[6] != 36 || got[0] != -1 {
		t.Fatalf("c: %v", got)
	}
	if _, ok := cache.m[b]; ok || cache.m[a] == nil || cache.bytes != 2*7*8 {
		t.Fatalf("after c: cached %v, %d bytes", slices.Sorted(maps.Keys(cache.m)), cache.bytes)
	}
	if _, err := cache.get(ctx, fs, dir+"/missing.parquet"); err == nil {
		t.Fatal("a missing file: no error")
	}
}

// BenchmarkReadRowIDs reads the _row_id column of a 1,000,000-row file (one row group,
// every 10th id null), as an update of a compacted table's rows does on a cold start.
func BenchmarkReadRowIDs(b *testing.B) {
	path := b.TempDir() + "/ids.parquet"
	ids := make([]int64, 1_000_000)
	for i := range ids {
		ids[i] = int64(i) * 3
		if i%10 == 0 {
			ids[i] = -1
		}
	}
	writeRowIDFileGroups(b, path, len(ids), ids, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		got, err := readRowIDs(context.Background(), iceio.LocalFS{}, path)
		if err != nil || len(got) != len(ids) || got[10] != -1 || got[11] != 33 {
			b.Fatalf("read %d ids, %v", len(got), err)
		}
	}
}
