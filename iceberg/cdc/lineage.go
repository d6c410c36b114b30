package cdc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/file"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/pqspan"
)

// RowLineage reports whether merge-on-read updates of tbl with delete format f
// (see ResolveFormat) and equality columns keys keep the _row_id of the row they
// replace: on format version 3 with deletion vectors, which resolve the replaced
// row (equality deletes do not).
func RowLineage(tbl *table.Table, f config.DeleteFormat, keys []string) bool {
	if tbl.Metadata().Version() < 3 {
		return false
	}
	format, err := ResolveFormat(tbl, f, keys)
	return err == nil && format == config.DeleteFormatDV
}

// errNoRowIDColumn is returned by rowIDLeaf for a data file that does not store
// _row_id.
var errNoRowIDColumn = errors.New("no _row_id column")

// RowIDs returns the row lineage id (_row_id) of the resolved keys whose index in
// Keys want accepts: the value stored in the data file's _row_id column where the
// file has one and the row's value is not null (a row rewritten or updated with its
// lineage), else the file's first_row_id plus the row's position. A key found in a
// file without first_row_id (written before the table moved to format version 3)
// has no id. A key found at more than one position (duplicate rows) takes the id of
// the first one.
//
// A merge-on-read update writes the new row with the id of the row it replaces, as
// Spark's MERGE does, so that _row_id follows a row through its updates.
func (r *Resolution) RowIDs(ctx context.Context, fs iceio.IO, want func(keyIndex int32) bool) (map[int32]int64, error) {
	ids := map[int32]int64{}
	for _, h := range r.Files {
		var pos []int64 // positions wanted in this file, ascending
		var keys []int32
		for i, k := range h.KeyIndexes {
			if _, done := ids[k]; !done && want(k) {
				pos = append(pos, h.Positions[i])
				keys = append(keys, k)
			}
		}
		if len(pos) == 0 {
			continue
		}
		first, ok := r.rowIDBase[h.Path]
		if t, planned := r.tasks[h.Path]; planned {
			first, ok = t.FirstRowID, true
		}
		if !ok {
			return nil, fmt.Errorf("row ids: %s was not planned", h.Path)
		}
		stored, err := storedRowIDs(ctx, fs, h.Path, pos)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			switch {
			case stored != nil && stored[i] >= 0:
				ids[k] = stored[i]
			case first != nil:
				ids[k] = *first + pos[i]
			}
		}
	}
	return ids, nil
}

// storedRowIDs returns the _row_id column of the data file at path at the ascending
// positions pos: -1 where the value is null, nil when the file has no such column.
func storedRowIDs(ctx context.Context, fs iceio.IO, path string, pos []int64) ([]int64, error) {
	col, err := rowIDColumns.get(ctx, fs, path)
	if err != nil || col == nil {
		return nil, err
	}
	out := make([]int64, len(pos))
	for i, p := range pos {
		if p < 0 || p >= int64(len(col)) {
			return nil, fmt.Errorf("row ids: %s has no row %d", path, p)
		}
		out[i] = col[p]
	}
	return out, nil
}

// RowIDCacheBytes bounds the process's cache of data files' _row_id columns.
const RowIDCacheBytes = 64 << 20

// rowIDColumns caches the _row_id columns RowIDs reads, by data file path (8 bytes
// a row; a file without the column costs nothing): data files are immutable, so an
// entry never goes stale, and the shards of a window, and the windows after it,
// that update rows of one file read its column once. The least recently used
// columns go first when the cache is over RowIDCacheBytes.
var rowIDColumns = &rowIDCache{limit: RowIDCacheBytes, m: map[string]*rowIDEntry{}}

type rowIDCache struct {
	mu          sync.Mutex
	limit       int64
	bytes, tick int64
	m           map[string]*rowIDEntry
}

type rowIDEntry struct {
	ids  []int64 // nil: the file stores no _row_id
	used int64
}

// get returns the _row_id column of the data file at path (-1 for a null), nil
// when the file does not store it.
func (c *rowIDCache) get(ctx context.Context, fs iceio.IO, path string) ([]int64, error) {
	c.mu.Lock()
	c.tick++
	if e, ok := c.m[path]; ok {
		e.used = c.tick
		c.mu.Unlock()
		return e.ids, nil
	}
	c.mu.Unlock()
	ids, err := readRowIDs(ctx, fs, path)
	if err != nil {
		return nil, err
	}
	size := int64(len(ids)) * 8
	if size > c.limit {
		return ids, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[path]; !ok {
		c.m[path] = &rowIDEntry{ids: ids, used: c.tick}
		c.bytes += size
	}
	for c.bytes > c.limit {
		var lru string
		var oldest int64 = math.MaxInt64
		for p, e := range c.m {
			if e.ids != nil && e.used < oldest {
				lru, oldest = p, e.used
			}
		}
		c.bytes -= int64(len(c.m[lru].ids)) * 8
		delete(c.m, lru)
	}
	if len(c.m) > 1<<16 { // many files without the column: forget them all
		for p, e := range c.m {
			if e.ids == nil {
				delete(c.m, p)
			}
		}
	}
	return ids, nil
}

// readRowIDs reads the whole _row_id column of the data file at path, straight from
// its pages (readInt64Leaf): -1 where the value is null, nil when the file has no
// such column.
func readRowIDs(ctx context.Context, fs iceio.IO, path string) ([]int64, error) {
	out := []int64{} // an empty file that has the column: no ids, not nil
	err := withParquet(fs, path, func(pr *file.Reader) error {
		leaves, err := rowIDLeaf(pr)
		if err != nil {
			return err
		}
		out = make([]int64, 0, pr.NumRows())
		return readInt64Leaf(ctx, pr, path, leaves[0], func(vals []int64, defs []int16, maxDef int16, base int64) error {
			if base != int64(len(out)) {
				return fmt.Errorf("%s: rows out of order at %d", path, base)
			}
			if defs == nil {
				out = append(out, vals...)
				return nil
			}
			k := 0
			for _, d := range defs {
				if d == maxDef {
					out = append(out, vals[k])
					k++
				} else {
					out = append(out, -1)
				}
			}
			return nil
		})
	})
	switch {
	case errors.Is(err, errNoRowIDColumn):
		return nil, nil
	case errors.Is(err, pqspan.ErrNotDirect):
		return nil, fmt.Errorf("row ids: %s: _row_id is not stored as int64", path)
	case err != nil:
		return nil, fmt.Errorf("row ids: %w", err)
	}
	return out, nil
}

// rowIDLeaf finds the Parquet leaf column of _row_id by its reserved field ID.
func rowIDLeaf(pr *file.Reader) ([]int, error) {
	sc := pr.MetaData().Schema
	for c := 0; c < sc.NumColumns(); c++ {
		if sc.Column(c).SchemaNode().FieldID() == int32(ibg.RowIDFieldID) {
			return []int{c}, nil
		}
	}
	return nil, errNoRowIDColumn
}
