package commit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
)

// AttachKeyIndex adds blobs, key index blobs of key column field built from
// snapshot snap of table ident, to the table's key index file
// (keyblob.IndexProperty): each attempt writes a new key index file of the blobs
// and the current file's blobs of data files still live, and sets the table
// property to it, in a commit of its own. It reports whether the property was set.
// The batch key join (package keyjoin) and compaction (package maintain) attach
// the blobs of the large files they read or write.
func (c Committer) AttachKeyIndex(ctx context.Context, cat table.CatalogIO, ident table.Identifier, snap int64, field int, blobs []keyblob.Blob) (bool, error) {
	if len(blobs) == 0 || field == 0 {
		return false, nil
	}
	out, err := c.CommitTable(ctx, cat, ident, &attach{snap: snap, field: field, blobs: blobs})
	return err == nil && (out.Table != nil || out.Landed), err
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
func (a *attach) Stage(ctx context.Context, at *Attempt) (bool, error) {
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
	return false, at.Txn.SetProperties(ibg.Properties{keyblob.IndexProperty: a.path})
}

// Landed finds the property set by an earlier attempt.
func (a *attach) Landed(_ context.Context, at *Attempt) (bool, error) {
	return a.path != "" && at.Table.Properties()[keyblob.IndexProperty] == a.path, nil
}

// Abandon removes the attempt's key index file.
func (a *attach) Abandon(ctx context.Context, at *Attempt) {
	if a.path == "" {
		return
	}
	if fs, err := at.Table.FS(ctx); err == nil {
		if wfs, ok := fs.(iceio.WriteFileIO); ok {
			_ = wfs.Remove(a.path)
		}
	}
}
