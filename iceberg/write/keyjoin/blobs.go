package keyjoin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
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

// attachFn gets every blob the scans built (grouped under one key) and attaches
// them to the table as one statistics file: a snapshot has at most one.
type attachFn struct {
	Config Config
}

// ProcessElement writes the blobs, key indexes of large data files of the
// plan's snapshot, as one Puffin statistics file, and attaches it to that
// snapshot: later runs resolve those files' keys by their blobs, not by their key
// columns (cdc.JoinKeys.ScanFiles). The blobs are an index: when the snapshot has
// a statistics file already (another engine's), has expired, or the commit fails,
// nothing is attached, the file is removed, and the write goes on (a later run
// builds them again).
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
	warn := func(err error) error {
		log.Warnf(ctx, "iceberg: write %s: key index blobs not attached: %v (the key columns are read again next time)", f.Config.Table, err)
		return nil
	}
	tbl, err := f.Config.load(ctx, true)
	if err != nil {
		return warn(err)
	}
	s := tbl.Metadata().SnapshotByID(snap)
	if s == nil {
		return nil // expired since the plan
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return warn(err)
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return warn(errors.New("the table's file IO cannot write"))
	}
	dir := strings.TrimSuffix(tbl.Location(), "/") + "/metadata"
	if p := tbl.Properties()["write.metadata.path"]; p != "" {
		dir = strings.TrimSuffix(p, "/")
	}
	path := fmt.Sprintf("%s/%d-%s.stats", dir, snap, uuid.NewString())
	sf, err := keyblob.Write(wfs, path, s, field, all)
	if err != nil {
		return warn(err)
	}
	ident, err := catalogs.ParseIdent(f.Config.Table)
	if err == nil {
		var cat table.CatalogIO
		if cat, err = catalogs.Get(ctx, f.Config.Catalog, f.Config.CatalogProps); err == nil {
			var out commit.Outcome
			if out, err = (commit.Committer{}).CommitTable(ctx, cat, ident, &attach{sf: sf}); err == nil && (out.Table != nil || out.Landed) {
				BlobsWritten.Inc(ctx, int64(len(all)))
				return nil
			}
		}
	}
	_ = wfs.Remove(path)
	if err != nil {
		return warn(err)
	}
	return nil
}

// attach is the Change that sets a statistics file on its snapshot, unless the
// snapshot is gone or has one.
type attach struct {
	sf table.StatisticsFile
}

func (a *attach) Op() string { return "attach key index" }

// Stage sets a.Raw to the statistics update, asserting main's head as loaded (an
// expiry racing it then makes it retry and find its snapshot gone).
func (a *attach) Stage(_ context.Context, at *commit.Attempt) (bool, error) {
	meta := at.Table.Metadata()
	if meta.SnapshotByID(a.sf.SnapshotID) == nil {
		return true, nil
	}
	for sf := range meta.Statistics() {
		if sf.SnapshotID == a.sf.SnapshotID {
			return true, nil
		}
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	if head := at.Table.CurrentSnapshot(); head != nil {
		id := head.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(table.MainBranch, &id))
	}
	at.Raw = &table.TableCommit{Identifier: at.Table.Identifier(), Requirements: reqs,
		Updates: []table.Update{table.NewSetStatisticsUpdate(a.sf)}}
	return false, nil
}

// Landed finds the statistics file set by an earlier attempt.
func (a *attach) Landed(_ context.Context, at *commit.Attempt) (bool, error) {
	for sf := range at.Table.Metadata().Statistics() {
		if sf.StatisticsPath == a.sf.StatisticsPath {
			return true, nil
		}
	}
	return false, nil
}

// Abandon keeps the file for the next attempt; attachBlobs removes it when none
// commits.
func (a *attach) Abandon(context.Context, *commit.Attempt) {}
