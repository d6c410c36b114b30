package read

import (
	"context"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// pinnedMax bounds the tables kept by pinned: a streaming read plans against a new
// metadata file after every commit.
const pinnedMax = 16

// pinned caches tables loaded at a given metadata location: a metadata file never
// changes, so an entry stays valid for the life of the worker.
var pinned = struct {
	sync.Mutex
	m map[string]*table.Table
}{m: map[string]*table.Table{}}

// loadAt returns the table at metadata location loc, loading it through the spec's
// catalog (for its FileIO) the first time.
func loadAt(ctx context.Context, spec Spec, loc string) (*table.Table, error) {
	pinned.Lock()
	t, ok := pinned.m[loc]
	pinned.Unlock()
	if ok {
		return t, nil
	}
	cur, err := catalogs.LoadTable(ctx, spec.CatalogName, spec.Props(), spec.Table, 0)
	if err != nil {
		return nil, err
	}
	tbl := cur
	if cur.MetadataLocation() != loc {
		ident, err := catalogs.ParseIdent(spec.Table)
		if err != nil {
			return nil, err
		}
		fsF := func(ctx context.Context) (icebergio.IO, error) { return catalogs.FS(ctx, cur) }
		tbl, err = table.NewFromLocation(ctx, ident, loc, fsF, nil)
		if err != nil {
			return nil, config.OpErrorf("read", spec.Table, "load metadata %s: %w", loc, err)
		}
	}
	pinned.Lock()
	defer pinned.Unlock()
	if len(pinned.m) >= pinnedMax {
		for k := range pinned.m { // evict any one entry
			delete(pinned.m, k)
			break
		}
	}
	pinned.m[loc] = tbl
	return tbl, nil
}
