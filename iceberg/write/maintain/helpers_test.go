package maintain

import (
	"context"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// changeWindow is a merge-on-read window of sink "cdc": its new rows' data files and
// the keys it deletes.
type changeWindow struct {
	WindowEndMs int64
	DataFiles   []ibg.DataFile
	Deletes     cdc.Deletes
}

// deleteAndAdd is a window that deletes the rows of keys and adds rows [from, from+n).
func deleteAndAdd(t *testing.T, tbl *table.Table, end, _ int64, keys []int64, from, n int64) changeWindow {
	t.Helper()
	w := changeWindow{WindowEndMs: end, Deletes: cdc.Deletes{KeyColumns: []string{"id"}}}
	for _, k := range keys {
		w.Deletes.Keys = append(w.Deletes.Keys, []any{k})
	}
	if n > 0 {
		w.DataFiles = writetest.WriteIDFiles(t, tbl, from, n)
	}
	return w
}

// commitChanges commits w as a merge-on-read window commit (the deletes of its keys
// resolved on each attempt's table), with writetest.FastCommitter; the result carries the
// positions deleted.
func commitChanges(ctx context.Context, cat table.CatalogIO, ident table.Identifier, w changeWindow) (commit.CommitResult, error) {
	d := &keyDeletes{keys: w.Deletes}
	res, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "cdc", RunID: "run-1", WindowEndMs: w.WindowEndMs,
		DataFiles: w.DataFiles, Deletes: d, FreshFiles: true})
	res.PositionsDeleted = d.last.PositionsDeleted
	return res, err
}

// keyDeletes are the deletes of a test window's keys (commit.Deletes).
type keyDeletes struct {
	keys    cdc.Deletes
	last    cdc.Delta
	attempt int
}

func (d *keyDeletes) Prepare(ctx context.Context, a *commit.Attempt) (commit.Prepared, error) {
	delta, err := d.keys.Prepare(ctx, a.Table, a.Txn)
	if err != nil {
		return commit.Prepared{}, err
	}
	d.last, d.attempt = delta, a.Number
	return commit.Prepared{Deletes: delta.Added, Removed: delta.Removed, Props: delta.Props}, nil
}

func (d *keyDeletes) Abandon(ctx context.Context, a *commit.Attempt) {
	if d.attempt == a.Number {
		d.last.Abandon(ctx, a.Table)
		d.attempt = 0
	}
}
