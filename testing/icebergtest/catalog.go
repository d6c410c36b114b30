package icebergtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"

	// Links the sql catalog type the fixture catalogs' Props name, as a
	// user's program does.
	_ "github.com/icebeam/icebeam/iceberg/catalogs/sql"
)

// LocalCatalogName is the catalog name of every fixture catalog. The SQL
// catalog stores it on each row, so every client of one catalog file must
// use the same name.
const LocalCatalogName = "local"

// sqliteBusyTimeoutMs is how long a SQLite connection waits for a lock held
// by another connection before it reports "database is locked".
const sqliteBusyTimeoutMs = 10000

// LocalCatalog is an iceberg-go SQL catalog backed by a SQLite file, with a
// warehouse on the local file system (or in a fake GCS bucket, see
// [NewLocalCatalogGCS]).
type LocalCatalog struct {
	// Name is the catalog name, always [LocalCatalogName].
	Name string
	// Props are catalog properties that open the same catalog through a
	// catalog factory: type=sql, uri, sql.driver=sqlite, sql.dialect=sqlite,
	// warehouse, init_catalog_tables, plus FileIO properties when the
	// warehouse is not local. sql.driver=sqlite is mapped to the pure-Go
	// sqliteshim driver by icebeam's catalog factory.
	Props map[string]string
	// Catalog is the opened catalog.
	Catalog catalog.Catalog
	// Warehouse is the warehouse root, a file:// or gs:// URL.
	Warehouse string
	// DBPath is the SQLite database file.
	DBPath string

	db *sql.DB
}

// Close closes the catalog and its database handle.
func (c *LocalCatalog) Close() error {
	var errs []error
	if cl, ok := c.Catalog.(catalog.Closer); ok {
		errs = append(errs, cl.Close())
	}
	if c.db != nil {
		errs = append(errs, c.db.Close())
	}

	return errors.Join(errs...)
}

// SQLiteDSN returns a DSN for the SQLite file at path with WAL journaling
// and a busy timeout, understood by both drivers sqliteshim may select
// (modernc.org/sqlite without cgo, mattn/go-sqlite3 with it).
func SQLiteDSN(path string) string {
	return fmt.Sprintf("file:%s?_journal_mode=WAL&_busy_timeout=%d", path, sqliteBusyTimeoutMs)
}

// NewLocalCatalog returns a SQL catalog whose SQLite file and file://
// warehouse live in t.TempDir(). The catalog is closed in t.Cleanup.
func NewLocalCatalog(t testing.TB) *LocalCatalog {
	t.Helper()

	c, err := NewLocalCatalogAt(t.TempDir())
	if err != nil {
		t.Fatalf("icebergtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("icebergtest: close catalog: %v", err)
		}
	})

	return c
}

// NewLocalCatalogAt returns a SQL catalog whose SQLite file (catalog.db) and
// warehouse (warehouse/) live in dir, which is created when missing. The
// caller closes it.
func NewLocalCatalogAt(dir string) (*LocalCatalog, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open local catalog %s: %w", dir, err)
	}
	wh := filepath.Join(abs, "warehouse")
	if err := os.MkdirAll(wh, 0o755); err != nil {
		return nil, fmt.Errorf("iceberg: open local catalog %s: %w", dir, err)
	}
	warehouse := (&url.URL{Scheme: "file", Path: filepath.ToSlash(wh)}).String()

	return openLocalCatalog(filepath.Join(abs, "catalog.db"), warehouse, nil)
}

// openLocalCatalog opens the SQLite catalog file dbPath with the given
// warehouse and extra (FileIO) properties.
func openLocalCatalog(dbPath, warehouse string, extra map[string]string) (*LocalCatalog, error) {
	dsn := SQLiteDSN(dbPath)
	props := map[string]string{
		"type":                "sql",
		"uri":                 dsn,
		sqlcat.DriverKey:      "sqlite",
		sqlcat.DialectKey:     string(sqlcat.SQLite),
		"warehouse":           warehouse,
		"init_catalog_tables": "true",
	}
	for k, v := range extra {
		props[k] = v
	}

	db, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open local catalog %s: %w", dbPath, err)
	}
	iceProps := make(ibg.Properties, len(props))
	for k, v := range props {
		iceProps[k] = v
	}
	cat, err := sqlcat.NewCatalog(LocalCatalogName, db, sqlcat.SQLite, iceProps)
	if err != nil {
		_ = db.Close()

		return nil, fmt.Errorf("iceberg: open local catalog %s: %w", dbPath, err)
	}

	return &LocalCatalog{
		Name:      LocalCatalogName,
		Props:     props,
		Catalog:   cat,
		Warehouse: warehouse,
		DBPath:    dbPath,
		db:        db,
	}, nil
}

// ensureNamespace creates namespace ns in cat unless it exists.
func ensureNamespace(ctx context.Context, cat catalog.Catalog, ns []string) error {
	if len(ns) == 0 {
		return nil
	}
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return err
	}
	if exists {
		return nil
	}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return err
	}

	return nil
}
