package sql

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

func TestSQLiteDSN(t *testing.T) {
	modernc := sqliteshim.DriverName() != "sqlite3"
	tests := []struct {
		name, in  string
		wantSub   []string
		unchanged bool
	}{
		{name: "memory", in: ":memory:", unchanged: true},
		{name: "file uri", in: "file:/tmp/a.db", wantSub: []string{"file:/tmp/a.db?", "_txlock=immediate"}},
		{name: "plain path", in: "/tmp/a.db", wantSub: []string{"file:/tmp/a.db?"}},
		{name: "keeps user busy timeout", in: "file:/tmp/a.db?_pragma=busy_timeout(1)&_busy_timeout=1&_journal_mode=DELETE&_pragma=journal_mode(DELETE)&_txlock=deferred", unchanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SQLiteDSN(tt.in)
			if tt.unchanged {
				if got != tt.in {
					t.Fatalf("SQLiteDSN(%q) = %q, want unchanged", tt.in, got)
				}
				return
			}
			want := tt.wantSub
			if modernc {
				want = append(want, "_pragma=journal_mode%28WAL%29", "_pragma=busy_timeout%28")
			} else {
				want = append(want, "_journal_mode=WAL", "_busy_timeout=")
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("SQLiteDSN(%q) = %q, missing %q", tt.in, got, w)
				}
			}
		})
	}
}

func TestSQLiteUsesWAL(t *testing.T) {
	dir := t.TempDir()
	cat, err := Open(context.Background(), "wal", map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"), "warehouse": "file://" + dir,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = cat.(*sqlCatalog).Close() })
	var mode string
	if err := cat.(*sqlCatalog).db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatalf("PRAGMA journal_mode: %v", err)
	}
	if !strings.EqualFold(mode, "wal") {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

// TestPostgresNeedsImport: sql.driver=postgres without package postgres (this
// test binary does not link pgx) is a ConfigError on sql.driver naming the import.
func TestPostgresNeedsImport(t *testing.T) {
	_, err := Open(context.Background(), "pg", map[string]string{
		"type": "sql", "uri": "postgres://localhost/x", "sql.driver": "postgres",
	})
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Key != "catalog_properties.sql.driver" {
		t.Fatalf("err = %v, want ConfigError on catalog_properties.sql.driver", err)
	}
	if !strings.Contains(err.Error(), `"`+registry.ImportPostgres+`"`) {
		t.Fatalf("err %q does not name the import %s", err, registry.ImportPostgres)
	}
}

// TestEmbeddedProperties: the properties open a working catalog whose warehouse
// directory exists.
func TestEmbeddedProperties(t *testing.T) {
	dir := t.TempDir()
	props, err := EmbeddedProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Open(context.Background(), "local", props)
	if err != nil {
		t.Fatalf("Open(%v): %v", props, err)
	}
	defer cat.(*sqlCatalog).Close()
	if err := cat.CreateNamespace(context.Background(), []string{"db"}, nil); err != nil {
		t.Fatalf("CreateNamespace: %v", err)
	}
	if want := "file://" + filepath.Join(dir, "warehouse"); props["warehouse"] != want {
		t.Fatalf("warehouse = %q, want %q", props["warehouse"], want)
	}
}

// TestSQLiteCreatesFolder opens a SQLite catalog whose database file is in folders
// that do not exist yet: Open creates them (SQLite alone fails with "unable to open
// database file (14)"), and a folder that cannot be made is an error naming uri.
func TestSQLiteCreatesFolder(t *testing.T) {
	dir := t.TempDir()
	for _, uri := range []string{
		"file:" + filepath.Join(dir, "a", "b", "catalog.db"),
		"file://" + filepath.Join(dir, "c", "catalog.db") + "?_txlock=immediate",
		filepath.Join(dir, "d", "e", "catalog.db"),
	} {
		cat, err := Open(context.Background(), "mk", map[string]string{"type": "sql", "uri": uri, "warehouse": "file://" + dir})
		if err != nil {
			t.Fatalf("Open(uri %s): %v", uri, err)
		}
		_ = cat.(*sqlCatalog).Close()
	}
	for _, sub := range []string{"a/b/catalog.db", "c/catalog.db", "d/e/catalog.db"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("database file %s: %v", sub, err)
		}
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), "mk", map[string]string{"type": "sql", "uri": "file:" + filepath.Join(file, "x", "catalog.db")})
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Key != "catalog_properties.uri" || !strings.Contains(err.Error(), "cannot create the folder") {
		t.Fatalf("Open under a file: %v, want a ConfigError on catalog_properties.uri", err)
	}
}

func TestSQLiteFilePath(t *testing.T) {
	for in, want := range map[string]string{
		":memory:": "", "file::memory:?cache=shared": "", "file:x.db?mode=memory": "",
		"file:/tmp/a.db": "/tmp/a.db", "file:///tmp/a.db": "/tmp/a.db", "file://localhost/tmp/a%20b.db": "/tmp/a b.db",
		"/tmp/a.db": "/tmp/a.db", "rel/a.db": "rel/a.db", "file:rel/a.db?_txlock=immediate": "rel/a.db",
	} {
		if got := sqliteFilePath(in); got != want {
			t.Errorf("sqliteFilePath(%q) = %q, want %q", in, got, want)
		}
	}
}
