package catalogs

import (
	"context"
	"net/url"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

// fsEntry is one cached FileIO; ready is closed once fio or err is set.
type fsEntry struct {
	ready chan struct{}
	fio   icebergio.IO
	err   error
}

var (
	fsMu    sync.Mutex
	fsCache = map[string]*fsEntry{}

	// ioPropsByTable remembers, per table UUID, the FileIO properties of the
	// catalog LoadTable loaded it from, so FS can find its shared FileIO.
	ioPropsMu      sync.Mutex
	ioPropsByTable = map[string]map[string]string{}
)

// fsKey is scheme://authority of location plus a hash of the FileIO properties.
func fsKey(location string, props map[string]string) string {
	authority := ""
	if u, err := url.Parse(location); err == nil {
		authority = u.Scheme + "://" + u.Host
	}
	return authority + "\x00" + Key("", props)
}

// SharedFS returns the process-wide FileIO for the bucket (scheme and
// authority) of location with the FileIO properties props, building it with
// iceberg-go's io.LoadFS on first use. The FileIO is built on a context
// without ctx's cancellation (blob FileIOs keep the context they were built
// with), so it stays usable after ctx ends.
func SharedFS(ctx context.Context, location string, props map[string]string) (icebergio.IO, error) {
	key := fsKey(location, props)
	fsMu.Lock()
	e, ok := fsCache[key]
	if !ok {
		e = &fsEntry{ready: make(chan struct{})}
		fsCache[key] = e
		fsMu.Unlock()
		if e.err = registry.CheckLocation(propKey(KeyWarehouse), location); e.err == nil {
			e.fio, e.err = icebergio.LoadFS(context.WithoutCancel(ctx), cloneProps(props), location)
		}
		if e.err != nil {
			e.err = wrapErr(props, "iceberg: open file IO for "+RedactURI(location), e.err)
			fsMu.Lock()
			delete(fsCache, key)
			fsMu.Unlock()
		}
		close(e.ready)
		return e.fio, e.err
	}
	fsMu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return e.fio, e.err
}

// FS returns the FileIO of tbl. For a table loaded through LoadTable from a
// catalog whose FileIO depends only on its properties (sql, hadoop, glue,
// hive), this is the process-wide FileIO shared by every table in the same
// bucket with the same properties; otherwise (REST catalogs, which may vend
// per-table expiring credentials, and tables loaded elsewhere) it is
// tbl.FS(ctx).
func FS(ctx context.Context, tbl *table.Table) (icebergio.IO, error) {
	ioPropsMu.Lock()
	props, ok := ioPropsByTable[tbl.Metadata().TableUUID().String()]
	ioPropsMu.Unlock()
	if !ok {
		return tbl.FS(ctx)
	}
	return SharedFS(ctx, tableFSLocation(tbl.MetadataLocation(), tbl.Location()), props)
}

// tableFSLocation is the location iceberg-go builds a table's FileIO for: its
// metadata file, or the table location when there is none yet.
func tableFSLocation(metadataLocation, location string) string {
	if metadataLocation != "" {
		return metadataLocation
	}
	return location
}

// withSharedFS rebuilds tbl so that its FS is the shared FileIO, for catalogs
// whose tables build their FileIO from the catalog properties alone.
func withSharedFS(tbl *table.Table, cat catalog.Catalog, props map[string]string) *table.Table {
	switch cat.CatalogType() {
	case catalog.SQL, catalog.Hadoop, catalog.Glue, catalog.Hive:
	default:
		return tbl
	}
	ioProps := cloneProps(props)
	loc := tableFSLocation(tbl.MetadataLocation(), tbl.Location())
	ioPropsMu.Lock()
	ioPropsByTable[tbl.Metadata().TableUUID().String()] = ioProps
	ioPropsMu.Unlock()
	fsF := func(ctx context.Context) (icebergio.IO, error) { return SharedFS(ctx, loc, ioProps) }
	var opts []table.Option
	if r := tbl.MetricsReporter(); r != nil {
		opts = append(opts, table.WithMetricsReporter(r))
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, cat, opts...)
}
