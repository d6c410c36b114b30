//go:build interop

package interop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	_ "github.com/icebeam/icebeam/iceberg/catalogs/postgres" // type=sql on PostgreSQL: the pgx driver
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// openPG opens iceberg-go's SQL catalog on the PostgreSQL server of
// ICEBEAM_PG_DSN, with its own connection pool.
func openPG(t *testing.T, warehouse string) catalog.Catalog {
	t.Helper()
	db, err := sql.Open("pgx", mustEnv(t, envPG))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sqlcat.NewCatalog("local", db, sqlcat.Postgres, ibg.Properties{
		"warehouse": warehouse, "init_catalog_tables": "true",
	})
	if err != nil {
		_ = db.Close()
		t.Fatalf("open sql catalog on PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close(); _ = db.Close() })
	return cat
}

// TestPostgresConcurrentAppends has two writers, each with its own catalog
// connection, append batches to one format-version 3 table through
// iceberg-go RowDeltas on the SQL catalog over PostgreSQL. A writer that
// loses the race reloads and commits again (iceberg-go reports a stale
// base as "requirement failed", see DESIGN.md §10). Every batch must land
// exactly once.
func TestPostgresConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	wh := "file://" + t.TempDir()
	setup := openPG(t, wh)
	ns := fmt.Sprintf("interop_%d", time.Now().UnixNano())
	ident := ns + ".concurrent"
	tbl := icebergtest.CreateTable(t, setup, ident, Schema(), icebergtest.WithFormatVersion(3))
	t.Cleanup(func() {
		_ = setup.DropTable(ctx, catalog.ToIdentifier(ident))
		_ = setup.DropNamespace(ctx, []string{ns})
	})
	_ = tbl // created; the writers load it themselves

	const writers, batches, rowsPerBatch = 2, 8, 500
	var wg sync.WaitGroup
	conflicts := make([]int, writers)
	errs := make([]error, writers)
	for w := 0; w < writers; w++ {
		cat := openPG(t, wh)
		wg.Add(1)
		go func(w int, cat catalog.Catalog) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				lo := int64((w*batches + b) * rowsPerBatch)
				n, err := appendWithRetry(ctx, cat, ident, lo, lo+rowsPerBatch)
				conflicts[w] += n
				if err != nil {
					errs[w] = fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		}(w, cat)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	final, err := setup.LoadTable(ctx, catalog.ToIdentifier(ident))
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, final)
	got := icebergtest.ReadAll(t, final, nil, "id")
	want := int64(writers * batches * rowsPerBatch)
	seen := map[int64]int{}
	col := got.Column(0)
	for _, ch := range col.Data().Chunks() {
		ids := ch.(interface{ Value(int) int64 })
		for i := 0; i < ch.Len(); i++ {
			seen[ids.Value(i)]++
		}
	}
	var missing, dup int
	for id := int64(0); id < want; id++ {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	fmt.Printf("interop: postgres concurrent appends: %d writers x %d batches, %d rows expected, %d seen, %d lost, %d duplicated, %d conflicts retried, %d snapshots\n",
		writers, batches, want, got.NumRows(), missing, dup, conflicts[0]+conflicts[1], len(final.Metadata().Snapshots()))
	recordResult(t, "postgres", Result{Engine: "iceberg-go", Writer: "2 goroutines", Scenario: "PostgreSQL sql catalog concurrent RowDelta appends",
		Check: "all rows", Expected: fmt.Sprint(want), Seen: fmt.Sprint(got.NumRows()), OK: got.NumRows() == want && missing == 0 && dup == 0})
	if got.NumRows() != want || missing != 0 || dup != 0 {
		t.Fatalf("rows = %d, want %d (%d lost, %d duplicated)", got.NumRows(), want, missing, dup)
	}
	if len(final.Metadata().Snapshots()) != writers*batches {
		t.Fatalf("snapshots = %d, want %d", len(final.Metadata().Snapshots()), writers*batches)
	}
}

// appendWithRetry writes ids [lo, hi) to one data file and commits it with a
// RowDelta, reloading and retrying on a concurrent commit. It returns the
// number of conflicts it retried.
func appendWithRetry(ctx context.Context, cat catalog.Catalog, ident string, lo, hi int64) (int, error) {
	rows := make([][]any, 0, hi-lo)
	for id := lo; id < hi; id++ {
		rows = append(rows, GenRow(id))
	}
	rec, err := icebergtest.BuildRecords(Schema(), rows)
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(ident))
	if err != nil {
		return 0, err
	}
	var files []ibg.DataFile
	var seq iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) {
		rec.Retain()
		yield(rec, nil)
	}
	for df, err := range table.WriteRecords(ctx, tbl, rec.Schema(), seq) {
		if err != nil {
			return 0, err
		}
		files = append(files, df)
	}
	conflicts := 0
	for attempt := 0; attempt < 50; attempt++ {
		tbl, err = cat.LoadTable(ctx, catalog.ToIdentifier(ident))
		if err != nil {
			return conflicts, err
		}
		tx := tbl.NewTransaction()
		if err := tx.NewRowDelta(nil).AddRows(files...).Commit(ctx); err != nil {
			return conflicts, err
		}
		_, err = tx.Commit(ctx)
		if err == nil {
			return conflicts, nil
		}
		if !errors.Is(err, table.ErrCommitFailed) && !strings.Contains(err.Error(), "requirement failed") {
			return conflicts, err
		}
		conflicts++
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return conflicts, fmt.Errorf("no commit after %d conflicts", conflicts)
}
