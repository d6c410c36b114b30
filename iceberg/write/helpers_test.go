package write

import (
	"context"
	"database/sql"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// newTestCatalog returns a SQL catalog on SQLite with a warehouse in a temporary
// folder, and the namespace "db".
func newTestCatalog(t *testing.T) *sqlcat.Catalog {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open(sqliteshim.ShimName,
		"file:"+filepath.Join(dir, "catalog.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("test", db, sqlcat.SQLite, ibg.Properties{
		"warehouse": "file://" + filepath.Join(dir, "warehouse"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat
}

// idNameSchema is a two-column schema used by the committer tests.
func idNameSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
	)
}

// createTestTable creates db.<name> with schema sc, format-version 3, unpartitioned.
func createTestTable(t *testing.T, cat catalog.Catalog, name string, sc *ibg.Schema, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	opts = append([]catalog.CreateTableOpt{catalog.WithProperties(ibg.Properties{"format-version": "3"})}, opts...)
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"db", name}, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// writeIDFiles writes rows with ids [from, from+n) to data files of tbl (no commit).
func writeIDFiles(t *testing.T, tbl *table.Table, from, n int64) []ibg.DataFile {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return writeIDs(t, tbl, ids)
}

// writeIDs writes rows with ids, in that order, to data files of tbl (no commit).
func writeIDs(t testing.TB, tbl *table.Table, ids []int64) []ibg.DataFile {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("n")
	}
	rec := b.NewRecordBatch()
	recs := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	var out []ibg.DataFile
	for df, err := range table.WriteRecords(context.Background(), tbl, sc, iter.Seq2[arrow.RecordBatch, error](recs)) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, df)
	}
	return out
}

// countRows scans the table ident and returns its row count.
func countRows(t testing.TB, cat catalog.Catalog, ident table.Identifier) int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// ibgTs is a timestamp value in microseconds.
func ibgTs(us int64) ibg.Timestamp { return ibg.Timestamp(us) }

// collect gathers the elements of col into *out after the pipeline runs (prism runs in
// this process, so the slice is filled by the DoFn).
func collect[T any](s beam.Scope, col beam.PCollection, out *[]T) {
	key := registerSink(out)
	beam.ParDo0(s, &collectFn[T]{Key: key}, col)
}

// columnNames returns the top-level column names of tbl, comma-separated.
func columnNames(tbl *table.Table) string {
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	return strings.Join(cols, ",")
}
