package cdc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/cdc/dvfile"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// DVMerge is the outcome of merging new positions with live deletion vectors.
type DVMerge struct {
	// Added are the new DVs, one blob per data file, in the Puffin files PuffinPaths
	// (laid out by dvfile.Groups).
	Added []ibg.DataFile
	// Replaced are the live DVs the new ones supersede; they must be removed in the
	// same RowDelta.
	Replaced []ibg.DataFile
	// Positions is the number of positions newly deleted (not already deleted).
	Positions int64
	// PuffinPaths are the Puffin files written (none when nothing was written).
	PuffinPaths []string
}

// MergeDVs writes, for every data file in positions (data file path -> positions,
// from any number of shards), a DV that is the union of the positions with the
// file's live DV, read from the planned task in tasks, into as few Puffin files as
// dvfile.Groups allows. A data file whose positions are all deleted already gets no
// new DV. A data file with more than one live DV is an error (the table is already
// invalid); a position past the end of the file is an error. The Puffin files are
// written under the table's data location.
func MergeDVs(ctx context.Context, tbl *table.Table, tasks map[string]table.FileScanTask, positions map[string][]int64) (DVMerge, error) {
	var out DVMerge
	name := strings.Join(tbl.Identifier(), ".")
	fail := func(err error) (DVMerge, error) {
		return DVMerge{}, fmt.Errorf("iceberg: merge deletion vectors %s: %w", name, err)
	}
	if len(positions) == 0 {
		return out, nil
	}
	if v := tbl.Metadata().Version(); v < 3 {
		return fail(fmt.Errorf("%w: deletion vectors need format version 3, table has %d", config.ErrUnsupported, v))
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(err)
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fail(fmt.Errorf("file IO %T is not writable", fs))
	}
	meta := tbl.Metadata()
	var blobs []dvBlob
	for _, p := range slices.Sorted(maps.Keys(positions)) {
		t, ok := tasks[p]
		if !ok {
			return fail(fmt.Errorf("data file %s is not live in snapshot being committed on", p))
		}
		df := t.File
		if len(t.DeletionVectorFiles) > 1 {
			return fail(fmt.Errorf("data file %s has %d live deletion vectors (at most one is allowed)", p, len(t.DeletionVectorFiles)))
		}
		var old *dv.RoaringPositionBitmap
		if len(t.DeletionVectorFiles) == 1 {
			if old, err = readDV(fs, t.DeletionVectorFiles[0]); err != nil {
				return fail(fmt.Errorf("read live deletion vector of %s: %w", p, err))
			}
		}
		var fresh []int64
		for _, pos := range positions[p] {
			if pos < 0 || pos >= df.Count() {
				return fail(fmt.Errorf("position %d out of range for data file %s with %d rows", pos, p, df.Count()))
			}
			if old == nil || !old.Contains(uint64(pos)) {
				fresh = append(fresh, pos)
			}
		}
		slices.Sort(fresh)
		fresh = slices.Compact(fresh)
		if len(fresh) == 0 {
			continue
		}
		bm := dv.NewRoaringPositionBitmap()
		if old != nil {
			bm.Or(old)
			out.Replaced = append(out.Replaced, t.DeletionVectorFiles[0])
		}
		for _, pos := range fresh {
			bm.Set(uint64(pos))
		}
		// The blob's length is what the layout needs (dvfile.Groups).
		b, err := dv.SerializeDV(bm)
		if err != nil {
			return fail(fmt.Errorf("serialize deletion vector of %s: %w", p, err))
		}
		blobs = append(blobs, dvBlob{DataFile: p, Data: b, Cardinality: int64(bm.Cardinality()), SpecID: df.SpecID(), Partition: df.Partition()})
		out.Positions += int64(len(fresh))
	}
	for _, g := range dvfile.Groups(blobs) {
		path := dataLocation(tbl) + "/" + uuid.NewString() + "-deletes.puffin"
		added, err := dvfile.Write(wfs, meta, path, g)
		if err == nil {
			out.PuffinPaths = append(out.PuffinPaths, path)
			err = dvfile.CheckIncreasing(added)
		}
		if err != nil {
			out.removeFiles(ctx, tbl)
			return fail(err)
		}
		out.Added = append(out.Added, added...)
	}
	return out, nil
}

// removeFiles deletes the Puffin files of m, best effort (an attempt that failed or
// lost a race).
func (m DVMerge) removeFiles(ctx context.Context, tbl *table.Table) {
	if len(m.PuffinPaths) == 0 {
		return
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	if r, ok := fs.(interface{ Remove(string) error }); ok {
		for _, p := range m.PuffinPaths {
			_ = r.Remove(p)
		}
	}
}

// dvBlob is one DV to write: the serialized merged positions of a data file.
type dvBlob = dvfile.Blob

// dataLocation is where the table's data and delete files go.
func dataLocation(tbl *table.Table) string {
	if p := tbl.Properties()[table.WriteDataPathKey]; p != "" {
		return strings.TrimRight(p, "/")
	}
	return strings.TrimRight(tbl.Location(), "/") + "/data"
}

// readDV reads the deletion vector d names with one ranged read of its blob (the
// manifest's content offset and size), checking the blob's length, magic, CRC and
// cardinality, instead of dv.ReadDV, which decodes the Puffin file's whole JSON footer
// for every DV: with many DVs per Puffin file that footer decoding dominated key
// resolution.
func readDV(fs iceio.IO, d ibg.DataFile) (*dv.RoaringPositionBitmap, error) {
	off, size := d.ContentOffset(), d.ContentSizeInBytes()
	if off == nil || size == nil || *size <= 0 {
		return dv.ReadDV(fs, d)
	}
	f, err := fs.Open(d.FilePath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, *size)
	if n, err := f.ReadAt(buf, *off); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, fmt.Errorf("read deletion vector %s at %d: %w", d.FilePath(), *off, err)
	}
	bm, err := dv.DeserializeDV(buf, d.Count())
	if err != nil {
		return nil, fmt.Errorf("deletion vector %s at %d: %w", d.FilePath(), *off, err)
	}
	return bm, nil
}
