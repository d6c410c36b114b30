package cdc

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/internal/pqspan"
)

// MinBlobRows is the least record count of a data file whose key index blob
// (package iceberg/internal/keyblob) a batch merge-on-read write builds when it
// reads the file's key column: a smaller file's key column reads fast enough.
var MinBlobRows int64 = 1 << 20

// useBlobs lets ks resolve its keys in the data files of tbl that have a key
// index blob in the table's key index file (keyblob.IndexProperty) by the blob,
// and, with build, build the blob of each large file it reads without one
// (FileHits.Blob): only for one long key column, whose values the blobs hold. It
// reads nothing: the key index file's footer is read when a file is first
// scanned (a commit's refresh that scans no file reads none).
func (ks *keySet) useBlobs(fs iceio.IO, tbl *table.Table, build bool) {
	if ks.single == nil {
		return
	}
	ks.indexFiles = build
	ks.blobs = &blobSource{fs: fs, file: tbl.Properties()[keyblob.IndexProperty], field: ks.codec.ids[0]}
}

// blobSource is a table's key index file, its blobs read once, when first asked
// for (by concurrent scans).
type blobSource struct {
	fs    iceio.IO
	file  string
	field int
	once  sync.Once
	refs  map[string]keyblob.Ref
}

// ref returns the blob of the data file at path. An unreadable key index file
// counts as none: the key columns are read (and the blobs built again).
func (b *blobSource) ref(path string) (keyblob.Ref, bool) {
	if b == nil || b.file == "" {
		return keyblob.Ref{}, false
	}
	b.once.Do(func() {
		if refs, err := keyblob.Refs(b.fs, b.file, b.field); err == nil {
			b.refs = refs
		}
	})
	r, ok := b.refs[path]
	return r, ok
}

// scanBlob resolves ks's keys in the data file of t by its key index blob, into
// h (its live positions, ascending), and counts the blob's bytes in read. It
// reports false, leaving h as it was, when the file has no blob or its blob cannot
// be read or fails its checks: the key column is then read, the blob being an
// index, never the data.
func (ks *keySet) scanBlob(fs iceio.IO, t table.FileScanTask, h *FileHits, live func(int64) bool, read *int64) bool {
	ref, ok := ks.blobs.ref(t.File.FilePath())
	if !ok {
		return false
	}
	x, err := keyblob.Read(fs, ref, t.File.Count())
	if err != nil {
		return false
	}
	pos, probe, err := x.Hits(ks.sortedLongs, live)
	if err != nil {
		return false
	}
	for i, p := range pos {
		h.Positions, h.KeyIndexes = append(h.Positions, p), append(h.KeyIndexes, ks.single[ks.sortedLongs[probe[i]]])
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
	if _, ok := ks.blobs.ref(t.File.FilePath()); ok {
		return nil
	}
	return newSpans(t.File, ks.codec, par)
}

// newSpans starts the blob of data file f read in par spans, its limit the
// stored size of f's key column (codec's one column, from the manifest's
// metrics), or of f when the manifest has none.
func newSpans(f ibg.DataFile, codec *keyCodec, par int) *keyblob.Spans {
	limit := f.FileSizeBytes()
	if n, ok := f.ColumnSizes()[codec.ids[0]]; ok && n > 0 {
		limit = n
	}
	return keyblob.NewSpans(f.Count(), par, limit)
}

// KeyBlobs reads the key column keyCol (one long column) of the data files of
// tbl whole and returns the key index blobs of those of at least MinBlobRows
// rows whose keys ascend in row order (compaction's sorted output): for the
// writer to attach to the table (commit.Committer.AttachKeyIndex), so that the
// first batch after it resolves them by their blobs too.
func KeyBlobs(ctx context.Context, tbl *table.Table, keyCol string, files []ibg.DataFile) ([]keyblob.Blob, error) {
	codec, err := newKeyCodec(tbl.Schema(), []string{keyCol})
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if _, long := codec.types[0].(ibg.Int64Type); err != nil || !long {
		return nil, err
	}
	var out []keyblob.Blob
	for _, f := range files {
		if f.Count() < MinBlobRows {
			continue
		}
		par := runtime.GOMAXPROCS(0)
		b, read := newSpans(f, codec, par), int64(0)
		err := readInt64Key(ctx, fs, f.FilePath(), codec, &read, par, nil, func(span int, vals []int64, defs []int16, maxDef int16, base int64) error {
			addSpan(b, span, vals, defs, maxDef, base)
			return nil
		})
		if err != nil && !errors.Is(err, pqspan.ErrNotDirect) {
			return out, err
		}
		if data := b.Finish(); err == nil && data != nil {
			out = append(out, keyblob.Blob{DataFile: f.FilePath(), Rows: f.Count(), Data: data})
		}
	}
	return out, nil
}

// addSpan adds a span's keys (as readInt64Key gives them) to b; a null key
// gives the blob up.
func addSpan(b *keyblob.Spans, span int, vals []int64, defs []int16, maxDef int16, base int64) {
	if slices.ContainsFunc(defs, func(d int16) bool { return d != maxDef }) {
		b.Fail()
	}
	b.Add(span, base, vals)
}
