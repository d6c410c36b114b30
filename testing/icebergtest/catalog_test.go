package icebergtest

import (
	"context"
	"database/sql"
	"maps"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"
)

func TestLocalCatalogProps(t *testing.T) {
	cat := NewLocalCatalog(t)
	if cat.Name != "local" {
		t.Errorf("Name = %q, want local", cat.Name)
	}
	wantKeys := []string{"type", "uri", "sql.driver", "sql.dialect", "warehouse", "init_catalog_tables"}
	if len(cat.Props) != len(wantKeys) {
		t.Errorf("Props has keys %v, want %v", sortedKeys(cat.Props), wantKeys)
	}
	for k, want := range map[string]string{"type": "sql", "sql.driver": "sqlite", "sql.dialect": "sqlite", "init_catalog_tables": "true"} {
		if cat.Props[k] != want {
			t.Errorf("Props[%s] = %q, want %q", k, cat.Props[k], want)
		}
	}
	if !strings.HasPrefix(cat.Warehouse, "file:///") || cat.Props["warehouse"] != cat.Warehouse {
		t.Errorf("warehouse = %q, Props %q", cat.Warehouse, cat.Props["warehouse"])
	}

	// The DSN turns on WAL.
	db, err := sql.Open(sqliteshim.ShimName, cat.Props["uri"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(mode, "wal") {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

// TestLocalCatalogPropsReopen opens the fixture's catalog a second time
// from Props the way icebeam's catalog factory does (sql.driver=sqlite ->
// sqliteshim) and sees the table the fixture created.
func TestLocalCatalogPropsReopen(t *testing.T) {
	ctx := context.Background()
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "ns.t", SampleSchema())
	AppendRecords(t, tbl, SampleRecords(t, 10, 1))

	props := ibg.Properties{}
	maps.Copy(props, cat.Props)
	if props[sqlcat.DriverKey] != "sqlite" {
		t.Fatalf("sql.driver = %q", props[sqlcat.DriverKey])
	}
	props[sqlcat.DriverKey] = sqliteshim.ShimName
	other, err := catalog.Load(ctx, cat.Name, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.(catalog.Closer).Close() })
	again, err := other.LoadTable(ctx, catalog.ToIdentifier("ns.t"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ReadAll(t, again, nil).NumRows(); got != 10 {
		t.Fatalf("rows = %d, want 10", got)
	}
}

func TestNewLocalCatalogAt(t *testing.T) {
	dir := t.TempDir()
	c, err := NewLocalCatalogAt(dir + "/nested")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(c.DBPath, "/nested/catalog.db") {
		t.Errorf("DBPath = %q", c.DBPath)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
