package catalogs

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func TestSQLiteRoundTripAndCache(t *testing.T) {
	ctx := context.Background()
	props := sqliteProps(t)

	cat, err := Get(ctx, "lake", props)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if cat.CatalogType() != catalog.SQL {
		t.Fatalf("CatalogType = %v, want sql", cat.CatalogType())
	}
	again, err := Get(ctx, "lake", cloneProps(props))
	if err != nil {
		t.Fatalf("Get again: %v", err)
	}
	if again != cat {
		t.Fatal("Get with equal props returned a different catalog")
	}
	other := cloneProps(props)
	other["extra"] = "1"
	if c2, err := Get(ctx, "lake", other); err != nil {
		t.Fatalf("Get other: %v", err)
	} else if c2 == cat {
		t.Fatal("Get with different props returned the same catalog")
	}

	createTable(t, cat, "db", "events", ibg.Properties{"format-version": "3"})

	tbl, err := LoadTable(ctx, "lake", props, "db.events", time.Hour)
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	if got := tbl.Identifier(); !slices.Equal(got, []string{"db", "events"}) {
		t.Fatalf("Identifier = %v", got)
	}
	fs1, err := tbl.FS(ctx)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	fs2, err := FS(ctx, tbl)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	if fs1 != fs2 {
		t.Fatal("table FS and catalogs.FS differ")
	}

	// Another catalog instance (another worker) commits.
	writer := openForTest(t, "lake", props)
	wt, err := writer.LoadTable(ctx, []string{"db", "events"})
	if err != nil {
		t.Fatalf("writer LoadTable: %v", err)
	}
	appendRows(t, wt, 1, 2, 3)

	cached, err := LoadTable(ctx, "lake", props, "db.events", time.Hour)
	if err != nil {
		t.Fatalf("LoadTable cached: %v", err)
	}
	if cached.CurrentSnapshot() != nil {
		t.Fatal("within the refresh interval LoadTable must serve the cached metadata")
	}
	fresh, err := LoadTable(ctx, "lake", props, "db.events", 0)
	if err != nil {
		t.Fatalf("LoadTable refresh=0: %v", err)
	}
	if fresh.CurrentSnapshot() == nil {
		t.Fatal("refresh=0 must reload and see the other instance's commit")
	}
	if got := scanIDs(t, fresh); !slices.Equal(sorted(got), []int64{1, 2, 3}) {
		t.Fatalf("scan = %v", got)
	}

	// The interval elapses: a cached entry older than refresh is reloaded.
	appendRows(t, fresh, 4)
	t.Cleanup(func() { now = time.Now })
	now = func() time.Time { return time.Now().Add(2 * time.Second) }
	aged, err := LoadTable(ctx, "lake", props, "db.events", time.Second)
	if err != nil {
		t.Fatalf("LoadTable aged: %v", err)
	}
	if got := scanIDs(t, aged); len(got) != 4 {
		t.Fatalf("after the refresh interval: %d rows, want 4", len(got))
	}
	now = time.Now

	// Invalidate drops the entry even inside the interval.
	appendRows(t, aged, 5)
	if stale, _ := LoadTable(ctx, "lake", props, "db.events", time.Hour); len(scanIDs(t, stale)) != 4 {
		t.Fatal("expected the cached 4-row table before Invalidate")
	}
	Invalidate("lake", props, "db.events")
	if got, _ := LoadTable(ctx, "lake", props, "db.events", time.Hour); len(scanIDs(t, got)) != 5 {
		t.Fatal("Invalidate did not force a reload")
	}
}

func sorted(s []int64) []int64 { s = slices.Clone(s); slices.Sort(s); return s }

func TestLoadTableNotFound(t *testing.T) {
	props := sqliteProps(t)
	props["password"] = "hunter2-secret"
	_, err := LoadTable(context.Background(), "lake", props, "db.missing", 0)
	if !errors.Is(err, config.ErrTableNotFound) {
		t.Fatalf("err = %v, want ErrTableNotFound", err)
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("err = %v, want it to keep catalog.ErrNoSuchTable", err)
	}
	for _, want := range []string{"db.missing", `"lake"`, "type sql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2-secret") {
		t.Errorf("error leaks a secret: %v", err)
	}
}

func TestGetConcurrent(t *testing.T) {
	props := sqliteProps(t)
	const n = 8
	cats := make([]catalog.Catalog, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Get(context.Background(), "conc", props)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			cats[i] = c
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if cats[i] != cats[0] {
			t.Fatal("concurrent Get calls returned different catalogs")
		}
	}
}

// TestPostgresRoundTrip runs against a real server when ICEBEAM_PG_DSN is set
// (the interop suite starts one); without it there is nothing to connect to.
func TestPostgresRoundTrip(t *testing.T) {
	dsn := os.Getenv("ICEBEAM_PG_DSN")
	if dsn == "" {
		t.Skip("ICEBEAM_PG_DSN is not set: no PostgreSQL server to run the sql catalog round trip against")
	}
	ctx := context.Background()
	ns := "icebeam_test_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	props := map[string]string{
		"type": "sql", "uri": dsn, "sql.driver": "postgres",
		"warehouse": "file://" + t.TempDir(),
	}
	cat := openForTest(t, "pg", props)
	t.Cleanup(func() {
		_ = cat.DropTable(ctx, []string{ns, "t"})
		_ = cat.DropNamespace(ctx, []string{ns})
	})
	createTable(t, cat, ns, "t", ibg.Properties{"format-version": "3"})
	tbl, err := LoadTable(ctx, "pg", props, ns+".t", 0)
	if err != nil {
		t.Fatalf("LoadTable: %v", err)
	}
	tbl = appendRows(t, tbl, 7, 8)
	if got := scanIDs(t, tbl); !slices.Equal(sorted(got), []int64{7, 8}) {
		t.Fatalf("scan = %v", got)
	}
}

// TestTableCacheSize: with maximum_table_cache_size 2 the cache keeps the two tables
// used most recently; a third load evicts the least recently used, which the next
// LoadTable reads from the catalog again (it sees a commit the cached copy lacks).
func TestTableCacheSize(t *testing.T) {
	ctx := context.Background()
	props := sqliteProps(t)
	cat, err := Get(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		createTable(t, cat, "db", name, ibg.Properties{"format-version": "3"})
	}
	SetTableCacheSize(2)
	t.Cleanup(func() { SetTableCacheSize(DefaultTableCacheSize) })
	load := func(name string) *table.Table {
		t.Helper()
		tbl, err := LoadTable(ctx, "lake", props, "db."+name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	a := load("a")
	load("b")
	appendRows(t, a, 1) // a commit the cached a does not have
	if load("a").CurrentSnapshot() != nil {
		t.Fatal("a within the refresh interval and the cache bound must be served from the cache")
	}
	load("c") // evicts b, the least recently used
	if !tblCache.Contains(tableKey("lake", props, table.Identifier{"db", "a"})) ||
		tblCache.Contains(tableKey("lake", props, table.Identifier{"db", "b"})) || tblCache.Len() > 2 {
		t.Fatalf("cache holds %v, want a and c", tblCache.Keys())
	}
	load("b") // evicts a
	if load("a").CurrentSnapshot() == nil {
		t.Fatal("an evicted table must be reloaded from the catalog")
	}
}
