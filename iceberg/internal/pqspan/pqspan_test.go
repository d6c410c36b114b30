package pqspan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestKeyReadSplitsRowGroupByPages: a file of one large row group, as Spark and
// Java Iceberg leave a compacted table (row groups roll at 128 MB), is read by
// several goroutines in spans cut at page boundaries of its offset index
// (pageSpans), and every span reads exactly its rows: a nullable long key and a
// dictionary-encoded string key (whose dictionary page comes before the span's
// first page) read in spans give every row's value at its position, as the file
// holds them. A file without a page index is read as one span.
func TestKeyReadSplitsRowGroupByPages(t *testing.T) {
	defer func(old int64) { MinSpanRows = old }(MinSpanRows)
	MinSpanRows = 1000
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
	ctx := context.Background()
	// withFile opens the file at path and calls fn with it and its reader.
	withFile := func(path string, fn func(src *os.File, pr *file.Reader)) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		fn(f, pr)
	}
	for _, pageIndex := range []bool{true, false} {
		path := write(pageIndex)
		var spans []Span
		withFile(path, func(_ *os.File, pr *file.Reader) {
			if n := pr.NumRowGroups(); n != 1 {
				t.Fatalf("%d row groups, want 1", n)
			}
			spans = Spans(pr, 0, 4, nil)
		})
		if !pageIndex {
			if len(spans) != 1 || spans[0].Lo != 0 || spans[0].Hi != 1 || spans[0].Rows != 0 {
				t.Errorf("no page index: spans %+v, want the row group as one", spans)
			}
		} else {
			if len(spans) != 4 {
				t.Fatalf("spans %+v, want 4 parts of the row group", spans)
			}
			next := int64(0)
			for i, s := range spans {
				if s.Lo != 0 || s.Hi != 1 || s.First != next || s.Base != s.First || s.First%pageRows != 0 || s.Rows < MinSpanRows {
					t.Errorf("span %d is %+v, want rows from %d at a page boundary", i, s, next)
				}
				next = s.First + s.Rows
			}
			if next != rows {
				t.Errorf("spans %+v end at row %d, want %d", spans, next, rows)
			}
			// Each part fetches its own pages: together, the id chunk once.
			var bytes int64
			for _, s := range spans {
				bytes += s.Bytes
			}
			withFile(path, func(_ *os.File, pr *file.Reader) {
				cc, err := pr.MetaData().RowGroup(0).ColumnChunk(0)
				if err != nil || bytes != cc.TotalCompressedSize() {
					t.Errorf("spans fetch %d bytes, want the id chunk's %d (%v)", bytes, cc.TotalCompressedSize(), err)
				}
			})
		}
		for _, par := range []int{1, 4} {
			// Every value read, by position, from all spans.
			gotIDs := make([]*int64, rows)
			seen := make([]int, rows)
			var err error
			withFile(path, func(src *os.File, pr *file.Reader) {
				err = Read(ctx, src, pr, path, 0, parquet.Types.Int64, Int64Batch, par, nil, func(span int, vals []int64, defs []int16, maxDef int16, base int64) error {
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
			withFile(path, func(src *os.File, pr *file.Reader) {
				err = Read(ctx, src, pr, path, 1, parquet.Types.ByteArray, ByteArrayBatch, par, nil, func(span int, vals []parquet.ByteArray, defs []int16, maxDef int16, base int64) error {
					EachValue(vals, defs, maxDef, base, func(v parquet.ByteArray, pos int64) {
						if gotCities[pos] != "" {
							t.Errorf("city of row %d read twice", pos)
						}
						gotCities[pos] = string(v)
					})
					return nil
				})
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
