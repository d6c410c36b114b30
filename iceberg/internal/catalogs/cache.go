package catalogs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

// Key identifies one catalog configuration: a hash of the name and the sorted
// properties. It holds no secret in clear.
func Key(name string, props map[string]string) string {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(name)
	for _, k := range sortedKeys(props) {
		write(k)
		write(props[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// catalogEntry is one cached catalog; ready is closed once cat or err is set.
type catalogEntry struct {
	ready chan struct{}
	cat   catalog.Catalog
	err   error
}

// tableEntry is one cached table and when its metadata was loaded.
type tableEntry struct {
	tbl      *table.Table
	loadedAt time.Time
}

var (
	catMu    sync.Mutex
	catCache = map[string]*catalogEntry{}

	tblCache = newTableCache(DefaultTableCacheSize)

	// now is the clock of the table cache.
	now = time.Now
)

// DefaultTableCacheSize is how many tables' metadata the process-wide table cache
// keeps when no write sets maximum_table_cache_size.
const DefaultTableCacheSize = 1000

func newTableCache(n int) *lru.Cache[string, tableEntry] {
	c, err := lru.New[string, tableEntry](n)
	if err != nil {
		panic(err) // n > 0
	}
	return c
}

// SetTableCacheSize bounds the process-wide table cache to n tables (the least
// recently used go first): a write's maximum_table_cache_size, set by its DoFns'
// Setup. n <= 0 leaves the bound as it is.
func SetTableCacheSize(n int) {
	if n > 0 {
		tblCache.Resize(n)
	}
}

// Get returns the process-wide catalog for (name, props), opening it with
// Open on first use. Concurrent callers with the same configuration share one
// Open; a failed Open is not cached, so a later call retries. Cached catalogs
// are never closed.
func Get(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error) {
	key := Key(name, props)
	catMu.Lock()
	e, ok := catCache[key]
	if !ok {
		e = &catalogEntry{ready: make(chan struct{})}
		catCache[key] = e
		catMu.Unlock()
		e.cat, e.err = Open(ctx, name, cloneProps(props))
		if e.err != nil {
			catMu.Lock()
			delete(catCache, key)
			catMu.Unlock()
		}
		close(e.ready)
		return e.cat, e.err
	}
	catMu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	// A failure is returned to the callers that waited for it, but is not
	// cached: the next call opens again.
	return e.cat, e.err
}

func tableKey(name string, props map[string]string, ident table.Identifier) string {
	return Key(name, props) + "\x00" + strings.Join(ident, "\x1f")
}

// LoadTable returns table ident ("db.tbl") of the catalog (name, props),
// serving it from a process-wide cache while it is younger than refresh
// (refresh <= 0 always reloads). A missing table wraps config.ErrTableNotFound.
// For catalogs whose FileIO depends only on the catalog properties (sql,
// hadoop, glue, hive) the table's FS is the shared FileIO of FS. Each call
// returns its own *table.Table value, so Refresh on it does not change what
// other callers see.
func LoadTable(ctx context.Context, name string, props map[string]string, ident string, refresh time.Duration) (*table.Table, error) {
	id, err := ParseIdent(ident)
	if err != nil {
		return nil, err
	}
	key := tableKey(name, props, id)
	if refresh > 0 {
		e, ok := tblCache.Get(key)
		if ok && now().Sub(e.loadedAt) < refresh {
			return copyTable(e.tbl), nil
		}
	}
	cat, err := Get(ctx, name, props)
	if err != nil {
		return nil, err
	}
	loadedAt := now()
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		op := "iceberg: load table " + strings.Join(id, ".") + " from catalog " + describe(name, props)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, wrapErr(props, op, err, config.ErrTableNotFound)
		}
		if errors.Is(err, icebergio.ErrIOSchemeNotFound) {
			// iceberg-go's hint names its own package; ours registers it.
			return nil, wrapErr(props, op, fmt.Errorf("%w (import the package for this scheme under %s, or _ %q)",
				err, "github.com/icebeam/icebeam/iceberg/storage/", registry.ImportAll), config.ErrUnsupported)
		}
		return nil, wrapErr(props, op, err)
	}
	// A REST catalog loads metadata on the server: the table's own storage is
	// first touched here, so a missing FileIO package is reported now, at
	// pipeline construction, rather than on a worker.
	if err := registry.CheckLocation(config.KeyTable, tbl.MetadataLocation()); err != nil {
		return nil, wrapErr(props, "iceberg: load table "+strings.Join(id, ".")+" from catalog "+describe(name, props), err)
	}
	tbl = withSharedFS(tbl, cat, props)
	if old, ok := tblCache.Peek(key); !ok || !old.loadedAt.After(loadedAt) {
		tblCache.Add(key, tableEntry{tbl: tbl, loadedAt: loadedAt})
	}
	return copyTable(tbl), nil
}

// Invalidate drops the cached metadata of table ident ("db.tbl") of the
// catalog (name, props), so the next LoadTable reloads it. Call it after a
// commit. Unknown or malformed identifiers are ignored.
func Invalidate(name string, props map[string]string, ident string) {
	id, err := ParseIdent(ident)
	if err != nil {
		return
	}
	tblCache.Remove(tableKey(name, props, id))
}

// copyTable returns a shallow copy, so that a caller's Refresh (which mutates
// the table in place) does not change the cached value.
func copyTable(t *table.Table) *table.Table {
	c := *t
	return &c
}
