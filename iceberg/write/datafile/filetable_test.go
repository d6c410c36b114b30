package datafile

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

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// unknownSchema has unknown fields at the top level (2), in a struct (5) and in the
// struct of a list's elements (9), next to fields of other types.
func unknownSchema() *ibg.Schema {
	p := ibg.PrimitiveTypes
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "u", Type: p.Unknown},
		ibg.NestedField{ID: 3, Name: "s", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 4, Name: "a", Type: p.Int32},
			{ID: 5, Name: "v", Type: p.Unknown},
		}}},
		ibg.NestedField{ID: 6, Name: "l", Type: &ibg.ListType{ElementID: 7, ElementRequired: false, Element: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 8, Name: "b", Type: p.String},
			{ID: 9, Name: "w", Type: p.Unknown},
		}}}},
		ibg.NestedField{ID: 10, Name: "name", Type: p.String},
	)
}

// TestWriterOmitsUnknownColumns: a Writer's Parquet files hold no column for a field
// of type unknown, top-level or nested (the Iceberg spec: writers omit it), and a
// column for every other field; the table reads back with nulls there, with write
// properties, a partitioned table and row lineage alike. The batches carry the
// unknown fields as Arrow null columns, as row.BatchBuilder builds them.
func TestWriterOmitsUnknownColumns(t *testing.T) {
	ctx := context.Background()
	const rows = 6
	tests := []struct {
		name      string
		partition bool
		lineage   bool
		opts      Options
	}{
		{name: "plain"},
		{name: "write_properties", opts: Options{WriteProperties: map[string]string{"write.parquet.row-group-limit": "2"}}},
		{name: "partitioned", partition: true},
		{name: "row lineage", lineage: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := writetest.NewCatalog(t)
			var copts []catalog.CreateTableOpt
			if tc.partition {
				spec := ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{10}, FieldID: 1000, Name: "name", Transform: ibg.IdentityTransform{}})
				copts = append(copts, catalog.WithPartitionSpec(&spec))
			}
			tbl := writetest.CreateTable(t, cat, "t", unknownSchema(), copts...)
			sc := tbl.Schema()
			if tc.lineage {
				sc = LineageSchema(sc)
			}
			asc, err := table.SchemaToArrowSchemaWithOptions(sc, table.ArrowSchemaOptions{IncludeFieldIDs: true})
			if err != nil {
				t.Fatal(err)
			}
			var js []string
			for i := range rows {
				r := fmt.Sprintf(`{"id": %d, "u": null, "s": {"a": %d, "v": null}, "l": [{"b": "x%d", "w": null}], "name": "n%d"`, i, i, i, i%2)
				if tc.lineage {
					r += fmt.Sprintf(`, "_row_id": %d`, 100+i)
				}
				js = append(js, r+"}")
			}
			rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader("["+strings.Join(js, ",")+"]"))
			if err != nil {
				t.Fatal(err)
			}
			files, err := writeDataFiles(ctx, tbl, asc, []arrow.RecordBatch{rec}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := tbl.FS(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				ids, err := icebergtest.ParquetFieldIDs(fs, f.FilePath())
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range []int{2, 5, 9} {
					if slices.Contains(ids, id) {
						t.Errorf("file %s has a column for unknown field %d (field ids %v)", f.FilePath(), id, ids)
					}
				}
				for _, id := range []int{1, 3, 4, 6, 7, 8, 10} {
					if !slices.Contains(ids, id) {
						t.Errorf("file %s has no column for field %d (field ids %v)", f.FilePath(), id, ids)
					}
				}
				if _, ok := f.ColumnSizes()[2]; ok {
					t.Errorf("file %s has a column size for unknown field 2: %v", f.FilePath(), f.ColumnSizes())
				}
			}
			if _, err := commit.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: files}); err != nil {
				t.Fatal(err)
			}
			cur, err := cat.LoadTable(ctx, tbl.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, cur)
			if cur.Schema().ID != tbl.Schema().ID || len(cur.Metadata().Schemas()) != 1 {
				t.Errorf("the table's schemas changed: current %d, %d schemas", cur.Schema().ID, len(cur.Metadata().Schemas()))
			}
			got, err := cur.Scan().ToArrowTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.NumRows() != rows {
				t.Fatalf("read %d rows, want %d", got.NumRows(), rows)
			}
			for i, want := range []string{"u", "s", "l"} {
				if f := got.Schema().Field([]int{1, 2, 3}[i]); f.Name != want {
					t.Fatalf("column %d is %s, want %s", []int{1, 2, 3}[i], f.Name, want)
				}
			}
			for _, ch := range got.Column(1).Data().Chunks() {
				if ch.NullN() != ch.Len() {
					t.Errorf("column u has %d non-null values", ch.Len()-ch.NullN())
				}
			}
			for _, ch := range got.Column(2).Data().Chunks() {
				s := ch.(*array.Struct)
				a, v := s.Field(0), s.Field(1)
				if a.NullN() != 0 || v.NullN() != v.Len() {
					t.Errorf("s.a has %d nulls (want 0), s.v %d non-null values (want 0)", a.NullN(), v.Len()-v.NullN())
				}
			}
			for _, ch := range got.Column(3).Data().Chunks() {
				el := ch.(array.ListLike).ListValues().(*array.Struct)
				b, w := el.Field(0), el.Field(1)
				if b.NullN() != 0 || w.NullN() != w.Len() {
					t.Errorf("l.element.b has %d nulls (want 0), l.element.w %d non-null values (want 0)", b.NullN(), w.Len()-w.NullN())
				}
			}
		})
	}
}

// TestFileTableKeepsPartitionSource: an unknown field the partition spec reads stays
// in the files' schema (iceberg-go computes partition values from the file's columns);
// a table without unknown fields or write properties is used as it is.
func TestFileTableKeepsPartitionSource(t *testing.T) {
	cat := writetest.NewCatalog(t)
	spec := ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "u", Transform: ibg.VoidTransform{}})
	tbl := writetest.CreateTable(t, cat, "t", unknownSchema(), catalog.WithPartitionSpec(&spec))
	ft, err := FileTable(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ft.Schema().FindFieldByID(2); !ok {
		t.Errorf("file schema %v lost the partition source u", ft.Schema())
	}
	if _, ok := ft.Schema().FindFieldByID(5); ok {
		t.Errorf("file schema %v kept s.v", ft.Schema())
	}
	plain := writetest.CreateTable(t, cat, "plain", writetest.IDNameSchema())
	if ft, err := FileTable(plain, nil); err != nil || ft != plain {
		t.Errorf("FileTable(plain) = %p, %v; want the table itself", ft, err)
	}
}
