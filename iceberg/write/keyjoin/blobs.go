package keyjoin

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// blob is a key index blob a scan built, of a data file of snapshot Snapshot,
// key column Field (cdc.Scanned.Blobs).
type blob struct {
	Snapshot int64
	Field    int
	DataFile string
	Rows     int64
	Data     []byte
}

// attachFn gets every blob the scans built (grouped under one key) and adds them
// to the table's key index file.
type attachFn struct {
	Config Config
}

// ProcessElement adds the blobs, key indexes of large data files of the plan's
// snapshot, to the table's key index file (commit.Committer.AttachKeyIndex). Later
// runs resolve those files' keys by their blobs, not by their key columns
// (cdc.JoinKeys.ScanFiles). The blobs are an index: when the commit fails nothing
// is attached, a warning is logged and the write goes on (a later run builds them
// again).
func (f *attachFn) ProcessElement(ctx context.Context, _ int, blobs func(*blob) bool) error {
	var all []keyblob.Blob
	var snap int64
	field := 0
	for b := (blob{}); blobs(&b); b = (blob{}) {
		snap, field = b.Snapshot, b.Field
		all = append(all, keyblob.Blob{DataFile: b.DataFile, Rows: b.Rows, Data: b.Data})
	}
	if len(all) == 0 {
		return nil
	}
	ident, err := catalogs.ParseIdent(f.Config.Table)
	if err == nil {
		var cat table.CatalogIO
		if cat, err = catalogs.Get(ctx, f.Config.Catalog, f.Config.CatalogProps); err == nil {
			var ok bool
			if ok, err = (commit.Committer{}).AttachKeyIndex(ctx, cat, ident, snap, field, all); ok {
				BlobsWritten.Inc(ctx, int64(len(all)))
			}
		}
	}
	if err != nil {
		log.Warnf(ctx, "iceberg: write %s: key index blobs not attached: %v (the key columns are read again next time)", f.Config.Table, err)
	}
	return nil
}
