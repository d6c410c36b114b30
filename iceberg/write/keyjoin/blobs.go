package keyjoin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	iceberg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Counters of the key index blobs (package keyblob).
var (
	// BlobsRead counts the data files whose keys were resolved by their key index
	// blob instead of their key column.
	BlobsRead = beam.NewCounter(commit.MetricsNamespace, "key_index_blobs_read")
	// BlobsWritten counts the key index blobs attached to the table.
	BlobsWritten = beam.NewCounter(commit.MetricsNamespace, "key_index_blobs_written")
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
// snapshot, to the table's key index file (keyblob.IndexProperty): it writes a new
// file holding them and the blobs of the current file whose data files are still
// live, and points the table property at it (attach). Later runs resolve those
// files' keys by their blobs, not by their key columns (cdc.JoinKeys.ScanFiles).
// The blobs are an index: when the commit fails nothing is attached, a warning
// is logged and the write goes on (a later run builds them again).
func (f *attachFn) ProcessElement(ctx context.Context, _ int, blobs func(*blob) bool) error {
	a := &attach{}
	for b := (blob{}); blobs(&b); b = (blob{}) {
		a.snap, a.field = b.Snapshot, b.Field
		a.blobs = append(a.blobs, keyblob.Blob{DataFile: b.DataFile, Rows: b.Rows, Data: b.Data})
	}
	if len(a.blobs) == 0 {
		return nil
	}
	ident, err := catalogs.ParseIdent(f.Config.Table)
	if err == nil {
		var cat table.CatalogIO
		if cat, err = catalogs.Get(ctx, f.Config.Catalog, f.Config.CatalogProps); err == nil {
			var out commit.Outcome
			if out, err = (commit.Committer{}).CommitTable(ctx, cat, ident, a); err == nil && (out.Table != nil || out.Landed) {
				BlobsWritten.Inc(ctx, int64(len(a.blobs)))
			}
		}
	}
	if err != nil {
		log.Warnf(ctx, "iceberg: write %s: key index blobs not attached: %v (the key columns are read again next time)", f.Config.Table, err)
	}
	return nil
}

// attach is the Change that adds blobs (of key column field, built at snapshot
// snap) to the table's key index file: each attempt writes a new key index file
// of the blobs and the current file's blobs of data files still live, and sets
// the table property to it; the loop retries a race with another commit.
type attach struct {
	snap  int64
	field int
	blobs []keyblob.Blob
	path  string // the file of the last attempt
}

func (a *attach) Op() string { return "attach key index" }

// Stage writes the attempt's key index file and sets the property.
func (a *attach) Stage(ctx context.Context, at *commit.Attempt) (bool, error) {
	tbl := at.Table
	fs, err := tbl.FS(ctx)
	if err != nil {
		return false, err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return false, errors.New("the table's file IO cannot write")
	}
	all := slices.Clone(a.blobs)
	if old := tbl.Properties()[keyblob.IndexProperty]; old != "" && tbl.CurrentSnapshot() != nil {
		refs, err := keyblob.Refs(fs, old, a.field)
		if err != nil {
			refs = nil // unreadable (removed as an orphan): start over
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return false, err
		}
		for _, t := range tasks {
			p := t.File.FilePath()
			r, ok := refs[p]
			if !ok || r.Rows != t.File.Count() || slices.ContainsFunc(a.blobs, func(b keyblob.Blob) bool { return b.DataFile == p }) {
				continue
			}
			data, err := keyblob.ReadBytes(fs, r)
			if err != nil {
				continue
			}
			all = append(all, keyblob.Blob{DataFile: p, Rows: r.Rows, Data: data})
		}
	}
	dir := strings.TrimSuffix(tbl.Location(), "/") + "/metadata"
	if p := tbl.Properties()["write.metadata.path"]; p != "" {
		dir = strings.TrimSuffix(p, "/")
	}
	a.path = fmt.Sprintf("%s/%d-%s.keyindex.puffin", dir, a.snap, uuid.NewString())
	seq := int64(0)
	if s := tbl.Metadata().SnapshotByID(a.snap); s != nil {
		seq = s.SequenceNumber
	}
	if err := keyblob.Write(wfs, a.path, a.snap, seq, a.field, all); err != nil {
		return false, err
	}
	return false, at.Txn.SetProperties(iceberg.Properties{keyblob.IndexProperty: a.path})
}

// Landed finds the property set by an earlier attempt.
func (a *attach) Landed(_ context.Context, at *commit.Attempt) (bool, error) {
	return a.path != "" && at.Table.Properties()[keyblob.IndexProperty] == a.path, nil
}

// Abandon removes the attempt's key index file.
func (a *attach) Abandon(ctx context.Context, at *commit.Attempt) {
	if a.path == "" {
		return
	}
	if fs, err := at.Table.FS(ctx); err == nil {
		if wfs, ok := fs.(iceio.WriteFileIO); ok {
			_ = wfs.Remove(a.path)
		}
	}
}
