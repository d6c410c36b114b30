package cdc

import (
	"cmp"
	"slices"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
)

// MinBlobRows is the least record count of a data file whose key index blob
// (package iceberg/internal/keyblob) a batch merge-on-read write builds when it
// reads the file's key column: a smaller file's key column reads fast enough.
var MinBlobRows int64 = 1 << 20

// useBlobs lets ks resolve its keys in the data files of tbl that have a key
// index blob in the table's key index file (keyblob.IndexProperty) by the blob,
// and, with build, build the blob of each large file it reads without one
// (FileHits.Blob): only for one long key column, whose values the blobs hold. An
// unreadable key index file counts as none: the key columns are read (and the
// blobs built again).
func (ks *keySet) useBlobs(fs iceio.IO, tbl *table.Table, build bool) {
	if ks.single == nil {
		return
	}
	ks.indexFiles = build
	if refs, err := keyblob.Refs(fs, tbl.Properties()[keyblob.IndexProperty], ks.codec.ids[0]); err == nil {
		ks.blobs = refs
	}
}

// scanBlob resolves ks's keys in the data file of t by its key index blob, into
// h (its live positions, ascending), and counts the blob's bytes in read. It
// reports false, leaving h as it was, when the file has no blob or its blob cannot
// be read or fails its checks: the key column is then read, the blob being an
// index, never the data.
func (ks *keySet) scanBlob(fs iceio.IO, t table.FileScanTask, h *FileHits, live func(int64) bool, read *int64) bool {
	ref, ok := ks.blobs[t.File.FilePath()]
	if !ok {
		return false
	}
	x, err := keyblob.Read(fs, ref, t.File.Count())
	if err != nil {
		return false
	}
	type hit struct {
		pos int64
		key int32
	}
	var hits []hit
	if err := x.Lookup(ks.sortedLongs, func(i int, pos int64) {
		if live(pos) {
			hits = append(hits, hit{pos, ks.single[ks.sortedLongs[i]]})
		}
	}); err != nil {
		return false
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.pos, b.pos) })
	for _, e := range hits {
		h.Positions, h.KeyIndexes = append(h.Positions, e.pos), append(h.KeyIndexes, e.key)
	}
	*read += ref.Length
	h.FromBlob = true
	return true
}

// blobBuild returns the builder of the key index blob of t's data file (see
// keyblob.Spans: keys ascending in row order, as an in-order load or a sorted
// compaction writes them), or nil when ks does not index files, or the file is
// small or has a blob. Its limit is the key column's stored size (the manifest's
// metrics): a blob larger than the column it replaces (sparse keys) costs more to
// read than it saves.
func (ks *keySet) blobBuild(t table.FileScanTask, par int) *keyblob.Spans {
	if !ks.indexFiles || t.File.Count() < MinBlobRows {
		return nil
	}
	if _, ok := ks.blobs[t.File.FilePath()]; ok {
		return nil
	}
	limit := t.File.FileSizeBytes()
	if n, ok := t.File.ColumnSizes()[ks.codec.ids[0]]; ok && n > 0 {
		limit = n
	}
	return keyblob.NewSpans(t.File.Count(), par, limit)
}
