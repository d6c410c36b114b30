package cdc

import (
	"cmp"
	"slices"
	"sync/atomic"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
)

// MinBlobRows is the least record count of a data file whose key index blob
// (package iceberg/internal/keyblob) a batch merge-on-read write builds when it
// reads the file's key column: a smaller file's key column reads fast enough.
var MinBlobRows int64 = 1 << 20

// useBlobs lets ks resolve its keys in the data files of tbl's metadata that
// have a key index blob (keyblob.Refs) by the blob, and, with build, build the
// blob of each large file it reads without one (FileHits.Blob): only for one long
// key column, whose values the blobs hold.
func (ks *keySet) useBlobs(meta table.Metadata, build bool) {
	if ks.single == nil {
		return
	}
	ks.blobs, ks.indexFiles = keyblob.Refs(meta, ks.codec.ids[0]), build
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

// blobBuilder builds the key index blob of a data file from its key column as
// read in spans (readInt64Key), each span's keys into a part of its own. The
// blob is built when the keys ascend in row order (an in-order load, a sorted
// compaction), so that a part needs no more memory than its encoded blocks;
// a file whose keys do not ascend, or with a null key, gets none.
type blobBuilder struct {
	rows   int64
	parts  []*keyblob.Ascending
	failed atomic.Bool
	// size is the bytes the parts encoded, at most limit: the key column's stored
	// size (from the manifest's metrics), as a blob larger than the column it
	// replaces (sparse keys) costs more to read than it saves.
	size, limit atomic.Int64
}

// blobBuild returns the builder of the key index blob of t's data file, or nil
// when ks does not index files, or the file is small or has a blob.
func (ks *keySet) blobBuild(t table.FileScanTask, par int) *blobBuilder {
	if !ks.indexFiles || t.File.Count() < MinBlobRows {
		return nil
	}
	if _, ok := ks.blobs[t.File.FilePath()]; ok {
		return nil
	}
	b := &blobBuilder{rows: t.File.Count(), parts: make([]*keyblob.Ascending, max(par, 1))}
	b.limit.Store(t.File.FileSizeBytes())
	if n, ok := t.File.ColumnSizes()[ks.codec.ids[0]]; ok && n > 0 {
		b.limit.Store(n)
	}
	return b
}

// add adds the keys vals of span, from row position base on (defs and maxDef as
// readInt64Key gives them); nil does nothing.
func (b *blobBuilder) add(span int, vals []int64, defs []int16, maxDef int16, base int64) {
	if b == nil || b.failed.Load() {
		return
	}
	for _, d := range defs {
		if d != maxDef {
			b.failed.Store(true) // a null key: no position for it in the index
			return
		}
	}
	p := b.parts[span]
	if p == nil {
		p = keyblob.NewAscending(base)
		b.parts[span] = p
	}
	before := p.Size()
	if !p.Add(base, vals) || b.size.Add(int64(p.Size()-before)) > b.limit.Load() {
		b.failed.Store(true)
	}
}

// finish returns the blob, or nil (nil builder, keys not ascending, a null key,
// rows not read, or a blob past the limit).
func (b *blobBuilder) finish() []byte {
	if b == nil || b.failed.Load() {
		return nil
	}
	blob, ok := keyblob.JoinAscending(b.parts, b.rows)
	if !ok || int64(len(blob)) > b.limit.Load() {
		return nil
	}
	return blob
}
