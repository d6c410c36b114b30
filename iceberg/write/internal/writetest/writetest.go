// Package writetest holds the fixtures of the tests of package write and the
// packages beneath it (commit, maintain, late): a SQLite catalog, id/name tables and
// their data files, a catalog that injects commit faults, a committer that retries
// quickly and a table seeded by another sink. It imports package commit, so
// commit's own tests are in package commit_test.
package writetest

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// NewCatalog returns a SQL catalog on SQLite with a warehouse in a temporary
// folder, and the namespace "db".
func NewCatalog(t *testing.T) *sqlcat.Catalog {
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

// FastCommitter is the committer with its retries a thousand times faster: tests
// of conflicts and lost responses run in milliseconds.
var FastCommitter = commit.Committer{MaxAttempts: 5, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

// SeededChangeTable creates db.<name> (IDNameSchema, format version 3) with ids 0..99
// in one data file, committed by another sink ("seed"), and returns it loaded.
func SeededChangeTable(t *testing.T, cat catalog.Catalog, name string) *table.Table {
	t.Helper()
	tbl := CreateTable(t, cat, name, IDNameSchema())
	if _, err := FastCommitter.Commit(context.Background(), cat, tbl.Identifier(),
		commit.CommitRequest{SinkID: "seed", WindowEndMs: 1, DataFiles: WriteIDFiles(t, tbl, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// IDNameSchema is a two-column schema used by the committer tests.
func IDNameSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
	)
}

// CreateTable creates db.<name> with schema sc, format-version 3, unpartitioned.
func CreateTable(t *testing.T, cat catalog.Catalog, name string, sc *ibg.Schema, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	opts = append([]catalog.CreateTableOpt{catalog.WithProperties(ibg.Properties{"format-version": "3"})}, opts...)
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"db", name}, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// WriteIDFiles writes rows with ids [from, from+n) to data files of tbl (no commit).
func WriteIDFiles(t *testing.T, tbl *table.Table, from, n int64) []ibg.DataFile {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return WriteIDs(t, tbl, ids)
}

// WriteIDs writes rows with ids, in that order, to data files of tbl (no commit).
func WriteIDs(t testing.TB, tbl *table.Table, ids []int64) []ibg.DataFile {
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

// CountRows scans the table ident and returns its row count.
func CountRows(t testing.TB, cat catalog.Catalog, ident table.Identifier) int64 {
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

// FaultCatalog wraps a catalog and injects faults around CommitTable. Tables it loads
// commit through it.
type FaultCatalog struct {
	catalog.Catalog
	mu      sync.Mutex
	Commits int // CommitTable calls so far
	// before runs before the inner CommitTable of call n (0-based).
	Before func(n int)
	// after may replace the result of call n after the inner CommitTable ran.
	After func(n int, err error) error
}

// LoadTable loads ident from the wrapped catalog, bound to f for its commits.
func (f *FaultCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := f.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(ident, tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, f), nil
}

// CommitTable runs Before, the wrapped catalog's CommitTable, then After, which may
// replace the result.
func (f *FaultCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	f.mu.Lock()
	n := f.Commits
	f.Commits++
	f.mu.Unlock()
	if f.Before != nil {
		f.Before(n)
	}
	meta, loc, err := f.Catalog.CommitTable(ctx, ident, reqs, ups)
	if f.After != nil {
		if err2 := f.After(n, err); err2 != nil {
			return nil, "", err2
		}
	}
	return meta, loc, err
}

// CommitOther commits rows [from, from+n) to ident of cat as another writer, with
// no token: the commit a fault hook makes to win a race.
func CommitOther(t *testing.T, cat catalog.Catalog, ident table.Identifier, from, n int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Error(err)
		return
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddRows(WriteIDFiles(t, tbl, from, n)...).Commit(ctx); err != nil {
		t.Error(err)
		return
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Error(err)
	}
}

// LostFirstResponse is a FaultCatalog.After hook: the first commit lands, and its
// response is lost.
func LostFirstResponse(n int, err error) error {
	if n == 0 && err == nil {
		return errors.New("read tcp: connection reset by peer")
	}
	return nil
}

// NewLocalCatalog is a local catalog (reachable by name and properties, as the
// heartbeat's DoFn needs) with the namespace db.
func NewLocalCatalog(t *testing.T) *icebergtest.LocalCatalog {
	t.Helper()
	lc := icebergtest.NewLocalCatalog(t)
	if err := lc.Catalog.CreateNamespace(context.Background(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return lc
}

// ExpireAllButNewest expires every snapshot of ident but the current one, as a
// maintenance job with a short retention would.
func ExpireAllButNewest(t *testing.T, lc *icebergtest.LocalCatalog, ident table.Identifier) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots left after expiry, want 1", n)
	}
	return tbl
}

// SnapshotsWith counts the snapshots of ident whose summary has a value for key
// (a sink's token key: how many commits carry it).
func SnapshotsWith(t *testing.T, cat catalog.Catalog, ident table.Identifier, key string) int {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[key] != "" {
			n++
		}
	}
	return n
}

// ColumnNames returns the top-level column names of tbl, comma-separated.
func ColumnNames(tbl *table.Table) string {
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	return strings.Join(cols, ",")
}

// ParsePartitions parses partition_fields terms, failing t on an error.
func ParsePartitions(t *testing.T, s ...string) []config.PartitionField {
	t.Helper()
	out, err := config.ParsePartitionFields(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
