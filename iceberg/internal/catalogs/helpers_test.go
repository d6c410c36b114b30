package catalogs

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// testSchema is the schema of every test table: id long required, name string.
func testSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
	)
}

// sqliteProps returns sql catalog properties for a fresh SQLite file and
// local warehouse in a temp dir.
func sqliteProps(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	return map[string]string{
		"type":      "sql",
		"uri":       "file:" + filepath.Join(dir, "catalog.db"),
		"warehouse": "file://" + filepath.Join(dir, "wh"),
	}
}

// openForTest opens a catalog with Open and closes it at cleanup.
func openForTest(t *testing.T, name string, props map[string]string) catalog.Catalog {
	t.Helper()
	cat, err := Open(context.Background(), name, props)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(catalog.Closer); ok {
			_ = c.Close()
		}
	})
	return cat
}

// createTable creates namespace ns and table ns.tbl with testSchema.
func createTable(t *testing.T, cat catalog.Catalog, ns, tbl string, props ibg.Properties) *table.Table {
	t.Helper()
	ctx := context.Background()
	if ok, err := cat.CheckNamespaceExists(ctx, table.Identifier{ns}); err != nil {
		t.Fatalf("CheckNamespaceExists: %v", err)
	} else if !ok {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatalf("CreateNamespace: %v", err)
		}
	}
	created, err := cat.CreateTable(ctx, table.Identifier{ns, tbl}, testSchema(), catalog.WithProperties(props))
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return created
}

// appendRows writes ids as data files with table.WriteRecords and commits
// them with a RowDelta (the format-version 3 path), returning the new table.
func appendRows(t *testing.T, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatalf("SchemaToArrowSchema: %v", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	rec := b.NewRecordBatch()
	var records iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) {
		yield(rec, nil)
	}
	var files []ibg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, records) {
		if err != nil {
			t.Fatalf("WriteRecords: %v", err)
		}
		files = append(files, df)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(files...).Commit(ctx); err != nil {
		t.Fatalf("RowDelta commit: %v", err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatalf("Transaction commit: %v", err)
	}
	return out
}

// scanIDs reads the table back and returns its ids.
func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var ids []int64
	col := at.Column(0)
	for _, chunk := range col.Data().Chunks() {
		a := chunk.(*array.Int64)
		for i := 0; i < a.Len(); i++ {
			ids = append(ids, a.Value(i))
		}
	}
	return ids
}
