package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

func init() { registry.Register("sql", Open) }

// Catalog property keys read by the sql catalog.
const (
	keyURI        = "uri"
	keySQLDriver  = "sql.driver"
	keySQLDialect = "sql.dialect"
)

// propKey is the managed-config key of catalog property k, used in ConfigErrors.
func propKey(k string) string { return "catalog_properties." + k }

// sqliteBusyTimeoutMs is the busy timeout added to SQLite DSNs: concurrent
// writers wait for the lock instead of failing with "database is locked".
const sqliteBusyTimeoutMs = 10000

// sqlCatalog is iceberg-go's SQL catalog together with the database handle it
// was built on, so that Close releases both.
type sqlCatalog struct {
	*sqlcat.Catalog
	db *dbsql.DB
}

// Close releases the catalog and its connection pool.
func (c *sqlCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// Unwrap returns iceberg-go's SQL catalog.
func (c *sqlCatalog) Unwrap() *sqlcat.Catalog { return c.Catalog }

// sqlDriver resolves the sql.driver property to a registered driver name,
// its dialect, and whether it is SQLite. PostgreSQL needs the pgx driver,
// which package postgres registers.
func sqlDriver(props map[string]string) (driver string, dialect sqlcat.SupportedDialect, sqlite bool, err error) {
	switch d := strings.ToLower(props[keySQLDriver]); d {
	case "", "sqlite", "sqlite3", sqliteshim.ShimName:
		return sqliteshim.ShimName, sqlcat.SQLite, true, nil
	case "postgres", "postgresql", "pgx", "pgx/v5":
		if !slices.Contains(dbsql.Drivers(), "pgx") {
			return "", "", false, config.Errorf(propKey(keySQLDriver),
				"%w: driver %q is not linked into this program: add import _ %q (or _ %q for every catalog and storage scheme)",
				config.ErrUnsupported, props[keySQLDriver], registry.ImportPostgres, registry.ImportAll)
		}
		return "pgx", sqlcat.Postgres, false, nil
	case "mysql":
		return "mysql", sqlcat.MySQL, false, nil
	default:
		return "", "", false, config.Errorf(propKey(keySQLDriver),
			"unsupported driver %q; supported: sqlite, sqlite3, postgres, pgx, mysql", props[keySQLDriver])
	}
}

// Open builds the sql catalog named name from props as icebeam does for
// catalog_properties type=sql: uri is the DSN; sql.driver absent, "sqlite" or
// "sqlite3" selects the pure-Go SQLite driver of sqliteshim (WAL, a busy
// timeout and immediate transactions are added to file DSNs that do not set
// them); "postgres", "pgx" or "pgx/v5" select pgx (import package postgres);
// "mysql" selects go-sql-driver/mysql. The catalog's tables are created when
// missing. Closing the catalog (catalog.Closer) also closes its database.
func Open(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error) {
	driver, dialect, sqlite, err := sqlDriver(props)
	if err != nil {
		return nil, err
	}
	if d := props[keySQLDialect]; d != "" {
		dialect = sqlcat.SupportedDialect(strings.ToLower(d))
	}
	dsn := strings.TrimPrefix(props[keyURI], "sql://")
	if dsn == "" {
		return nil, config.Errorf(propKey(keyURI), "missing: the sql catalog needs a DSN")
	}
	if sqlite {
		if err := makeSQLiteDir(dsn); err != nil {
			return nil, err
		}
		dsn = SQLiteDSN(dsn)
	}
	db, err := dbsql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	if sqlite {
		// SQLite has one writer at a time; a few connections suffice and keep
		// lock contention inside the busy timeout.
		db.SetMaxOpenConns(4)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	p := ibg.Properties(maps.Clone(props))
	p[keySQLDialect] = string(dialect)
	p[keySQLDriver] = driver
	// Several workers may create the catalog tables at once; a lost
	// CREATE TABLE IF NOT EXISTS race is retried.
	var cat *sqlcat.Catalog
	for attempt := 0; ; attempt++ {
		cat, err = sqlcat.NewCatalog(name, db, dialect, p)
		if err == nil || attempt == 2 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &sqlCatalog{Catalog: cat, db: db}, nil
}

// makeSQLiteDir creates the folder of the database file a SQLite DSN names (a path
// or a file: URI; nothing for in-memory databases), as SQLite creates the file but
// not its folder ("unable to open database file (14)"). An error names the uri key
// and the folder.
func makeSQLiteDir(dsn string) error {
	path := sqliteFilePath(dsn)
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return config.Errorf(propKey(keyURI), "cannot create the folder %s of the SQLite database: %w (create it, or point uri at a folder that exists)", dir, err)
	}
	return nil
}

// sqliteFilePath returns the file a SQLite DSN opens, or "" for an in-memory
// database. A file: URI's path is unescaped; file:///p and file://localhost/p name /p.
func sqliteFilePath(dsn string) string {
	if dsn == "" || strings.HasPrefix(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") {
		return ""
	}
	path, _, _ := strings.Cut(dsn, "?")
	rest, isURI := strings.CutPrefix(path, "file:")
	if !isURI {
		return path
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		auth, p, _ := strings.Cut(after, "/")
		if auth != "" && auth != "localhost" {
			return "" // SQLite refuses other hosts itself
		}
		rest = "/" + p
	}
	if u, err := url.PathUnescape(rest); err == nil {
		rest = u
	}
	if rest == "" || rest == ":memory:" {
		return ""
	}
	return rest
}

// SQLiteDSN adds WAL journaling, a busy timeout and immediate write
// transactions to a SQLite DSN when it does not set them, in the syntax of the
// driver sqliteshim selected (modernc.org/sqlite without cgo, mattn with cgo).
// A plain path becomes a file: URI; ":memory:" and DSNs that are not file
// URIs are returned unchanged.
func SQLiteDSN(dsn string) string {
	if dsn == "" || strings.HasPrefix(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") {
		return dsn
	}
	if !strings.HasPrefix(dsn, "file:") {
		if strings.Contains(dsn, "?") {
			return dsn
		}
		dsn = "file:" + dsn
	}
	path, rawQuery, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return dsn
	}
	has := func(s string) bool { return strings.Contains(strings.ToLower(rawQuery), s) }
	var add []string
	if sqliteshim.DriverName() == "sqlite3" { // mattn/go-sqlite3
		if !has("journal_mode") && !has("_journal") {
			add = append(add, "_journal_mode=WAL")
		}
		if !has("busy_timeout") && !has("_timeout") {
			add = append(add, fmt.Sprintf("_busy_timeout=%d", sqliteBusyTimeoutMs))
		}
	} else { // modernc.org/sqlite
		if !has("journal_mode") {
			add = append(add, "_pragma="+url.QueryEscape("journal_mode(WAL)"))
		}
		if !has("busy_timeout") {
			add = append(add, "_pragma="+url.QueryEscape(fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeoutMs)))
		}
	}
	if q.Get("_txlock") == "" {
		add = append(add, "_txlock=immediate")
	}
	if len(add) == 0 {
		return dsn
	}
	if rawQuery != "" {
		return path + "?" + rawQuery + "&" + strings.Join(add, "&")
	}
	return path + "?" + strings.Join(add, "&")
}
