package cdc

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icebeam/icebeam/iceberg/internal/pqspan"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// DefaultChunkKeys is the number of keys per planned predicate: iceberg-go's
// metrics evaluators stop pruning an IN with more than 200 values.
const DefaultChunkKeys = 200

// FileHits are the positions of resolved keys in one data file.
type FileHits struct {
	// Path is the data file.
	Path string
	// Deletes identifies the delete files that applied to the data file when it was
	// read (its live DV, position delete files); a different value at commit time
	// means the file's deletes changed and its keys are resolved again.
	Deletes string
	// Positions are the row positions found, ascending.
	Positions []int64
	// KeyIndexes, parallel to Positions, index Resolution.Keys.
	KeyIndexes []int32
	// FromBlob: the file's key index blob (package keyblob) resolved the keys,
	// its key column was not read.
	FromBlob bool
	// Blob is the key index blob (package keyblob) the read built of the file,
	// when asked to (keySet.indexFiles) and the file allows (see blobBuild).
	Blob []byte
}

// Resolution maps keys to the row positions that hold them in the live rows (not
// deleted by a DV or position delete) of a table snapshot.
type Resolution struct {
	// SnapshotID is the snapshot resolved against (0 for a table without one).
	SnapshotID int64
	// Keys are the resolved keys, deduplicated, one value per equality column.
	Keys [][]any
	// Files are the data files holding at least one key, by path.
	Files []FileHits
	// Scanned are the data files read (holding a key or not), sorted.
	Scanned []string
	// KeyBytes is the stored size of the key columns read to make the resolution
	// (by the key index's build or update, or by reading candidate files), plus
	// those Resolver.Refresh read since.
	KeyBytes int64
	// FilesRead is the number of data files whose key columns were read to make
	// the resolution (Scanned may also name files read for an earlier one).
	FilesRead int
	// SpillBytes is the size of the key index blocks read from its local spill file
	// (partitions not in memory) to make the resolution.
	SpillBytes int64
	// IndexTime is the time spent bringing the worker's key index up to the table
	// for the resolution (on a cold worker: building it), a warm-up's included.
	IndexTime time.Duration

	tasks map[string]table.FileScanTask // planned tasks of SnapshotID, by path
	// rowIDBase: first row ids of a key join's files (it has no tasks; nil: none).
	rowIDBase map[string]*int64
}

// Positions returns the found positions by data file path.
func (r *Resolution) Positions() map[string][]int64 {
	out := make(map[string][]int64, len(r.Files))
	for _, f := range r.Files {
		out[f.Path] = f.Positions
	}
	return out
}

// Found returns the number of positions found.
func (r *Resolution) Found() int {
	n := 0
	for _, f := range r.Files {
		n += len(f.Positions)
	}
	return n
}

// Resolver resolves keys of one table to row positions.
type Resolver struct {
	// KeyColumns are the equality columns.
	KeyColumns []string
	// ChunkKeys is the number of keys per planned predicate (default DefaultChunkKeys).
	ChunkKeys int
	// IndexBytes is the memory budget of the worker's KeyIndex of the table; 0
	// resolves every key by reading the candidate data files.
	IndexBytes int64
	// IndexParts is the number of partitions of the key index (0 or 1: one): a
	// key's partition is its shard when the sink shards by key hash alone
	// (Shard(key, IndexParts)), so that a worker holds in memory only the
	// partitions of the shards it resolves (see KeyIndex).
	IndexParts int
}

// index returns the worker's key index of tbl for r.
func (r Resolver) index(tbl *table.Table, codec *keyCodec) *KeyIndex {
	return indexFor(tbl, codec, r.IndexBytes, max(r.IndexParts, 1))
}

// Warm starts bringing the worker's key index of tbl (the one Resolve uses) up to
// tbl's snapshot in the background and returns at once, so that the first
// resolution of a cold worker (a batch run, a restart) finds the index built or
// being built instead of starting then. It does nothing without an index budget,
// or when the index is already being synced or used; a failure is left to the
// next resolution, which syncs again and reports it.
func (r Resolver) Warm(tbl *table.Table) {
	if r.IndexBytes <= 0 {
		return
	}
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		return
	}
	r.index(tbl, codec).warm(tbl)
}

// Resolve resolves keys against tbl's current snapshot with the equality columns
// keyCols. See Resolver.Resolve.
func Resolve(ctx context.Context, tbl *table.Table, keyCols []string, keys [][]any) (*Resolution, error) {
	return Resolver{KeyColumns: keyCols}.Resolve(ctx, tbl, keys)
}

// keySet is the resolver's lookup of encoded keys.
type keySet struct {
	codec  *keyCodec
	keys   [][]any
	enc    []string         // encoded, by key index
	index  map[string]int32 // encoded -> key index
	single map[int64]int32  // fast path for one long (or int-like) key column
	// seen filters values of single before the map lookup: bit
	// seenBit(v) is set for each key (one hash; about 3% of absent values pass).
	seen      []uint64
	seenShift uint
	// bytesSeed is set for one string or binary key column: seen then holds the
	// bit of each key's raw bytes (see maybeBytes).
	bytesSeed *maphash.Seed
	order     []int32 // key indexes in encoded order
	// sortedLongs and sortedBytes hold the keys of one long column, or of one
	// string or binary column (raw bytes), in order: a row group whose key
	// column's min/max statistics hold none of them is not read (outside).
	sortedLongs []int64
	sortedBytes []string
	// blobs are the key index blobs of the table's data files (useBlobs), of
	// one long key column: a file with one is resolved by its blob (scanBlob).
	// indexFiles asks scanFile to build the blob of each large file read
	// without one (blobBuild).
	blobs      *blobSource
	indexFiles bool
}

func newKeySet(codec *keyCodec, keys [][]any) (*keySet, error) {
	ks := &keySet{codec: codec, index: make(map[string]int32, len(keys))}
	var buf []byte
	for _, k := range keys {
		norm := make([]any, len(k))
		if len(k) != len(codec.types) {
			return nil, fmt.Errorf("key %v has %d values, want %d (%v)", k, len(k), len(codec.types), codec.names)
		}
		for i, v := range k {
			n, err := row.Normalize(v, codec.types[i])
			if err != nil {
				return nil, fmt.Errorf("equality column %q: %w", codec.names[i], err)
			}
			norm[i] = n
		}
		var err error
		if buf, err = codec.append(buf[:0], norm); err != nil {
			return nil, err
		}
		if _, dup := ks.index[string(buf)]; dup {
			continue
		}
		s := string(buf)
		ks.index[s] = int32(len(ks.keys))
		ks.keys = append(ks.keys, norm)
		ks.enc = append(ks.enc, s)
	}
	ks.order = make([]int32, len(ks.keys))
	for i := range ks.order {
		ks.order[i] = int32(i)
	}
	sort.Slice(ks.order, func(a, b int) bool { return ks.enc[ks.order[a]] < ks.enc[ks.order[b]] })
	ks.setSingle()
	return ks, nil
}

// setSingle sets the lookup of ks's keys by value and its bit filter (seen) when
// they are one long column, or the bit filter of their raw bytes (maybeBytes) when
// they are one string or binary column.
func (ks *keySet) setSingle() {
	if len(ks.codec.types) != 1 {
		return
	}
	// About 32 bits per key, at least 4 KiB, at most 8 MiB.
	b := min(max(bits.Len(uint(len(ks.keys))*32), 15), 26)
	if _, long := ks.codec.types[0].(ibg.Int64Type); long {
		ks.single = make(map[int64]int32, len(ks.keys))
		ks.seen, ks.seenShift = make([]uint64, 1<<(b-6)), uint(64-b)
		ks.sortedLongs = make([]int64, len(ks.keys))
		for i, k := range ks.keys {
			v := k[0].(int64)
			ks.single[v] = int32(i)
			ks.sortedLongs[i] = v
			b := ks.seenBit(v)
			ks.seen[b>>6] |= 1 << (b & 63)
		}
		slices.Sort(ks.sortedLongs)
	} else if isBytesType(ks.codec.types[0]) {
		seed := maphash.MakeSeed()
		ks.bytesSeed = &seed
		ks.seen, ks.seenShift = make([]uint64, 1<<(b-6)), uint(64-b)
		for _, k := range ks.keys {
			var h uint64
			switch v := k[0].(type) {
			case string:
				h = maphash.String(seed, v)
				ks.sortedBytes = append(ks.sortedBytes, v)
			case []byte:
				h = maphash.Bytes(seed, v)
				ks.sortedBytes = append(ks.sortedBytes, string(v))
			}
			b := h >> ks.seenShift
			ks.seen[b>>6] |= 1 << (b & 63)
		}
		slices.Sort(ks.sortedBytes)
	}
}

// outside reports whether a row group holds none of ks's keys by the min/max
// statistics of its key column chunk cc (one long, string or binary key column):
// the key read then skips the row group. It reports false when the chunk has no
// statistics, or ks has no sorted keys of the chunk's type. A file written in key
// order, or compacted with the key as its sort order, is then read only where
// changed keys lie; keys spread evenly over a file land in every row group.
//
// Parquet orders INT64 statistics as signed values and BYTE_ARRAY statistics of
// strings and binary as unsigned bytes (Go's string order); a writer that
// truncates a byte array's min/max keeps them bounds (the max rounded up).
func (ks *keySet) outside(cc *metadata.ColumnChunkMetaData) bool {
	if ok, err := cc.StatsSet(); !ok || err != nil {
		return false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return false
	}
	switch s := st.(type) {
	case *metadata.Int64Statistics:
		if ks.sortedLongs == nil || st.Descr().SortOrder() != schema.SortSIGNED {
			return false
		}
		i, _ := slices.BinarySearch(ks.sortedLongs, s.Min())
		return i == len(ks.sortedLongs) || ks.sortedLongs[i] > s.Max()
	case *metadata.ByteArrayStatistics:
		if ks.sortedBytes == nil || st.Descr().SortOrder() != schema.SortUNSIGNED {
			return false
		}
		i, _ := slices.BinarySearch(ks.sortedBytes, string(s.Min()))
		return i == len(ks.sortedBytes) || ks.sortedBytes[i] > string(s.Max())
	}
	return false
}

// isBytesType reports whether a key column of type t is stored as BYTE_ARRAY and
// encoded escaped (appendEscaped): a string or binary column.
func isBytesType(t ibg.Type) bool {
	switch t.(type) {
	case ibg.StringType, ibg.BinaryType:
		return true
	}
	return false
}

// maybeBytes reports whether v, the raw bytes of a value of a single string or
// binary key column, may be a key (its bit in seen is set; see setSingle).
func (ks *keySet) maybeBytes(v []byte) bool {
	b := maphash.Bytes(*ks.bytesSeed, v) >> ks.seenShift
	return ks.seen[b>>6]&(1<<(b&63)) != 0
}

// seenBit is v's bit in ks.seen (multiplicative hashing).
func (ks *keySet) seenBit(v int64) uint64 { return uint64(v) * 0x9E3779B97F4A7C15 >> ks.seenShift }

// maybeKey reports whether v may be a key of single (its bit in seen is set).
func (ks *keySet) maybeKey(v int64) bool {
	b := ks.seenBit(v)
	return ks.seen[b>>6]&(1<<(b&63)) != 0
}

// predicate returns the planning filter of the keys at order[lo:hi].
func (ks *keySet) predicate(lo, hi int) (ibg.BooleanExpression, error) {
	names := ks.codec.names
	if len(names) == 1 {
		lits := make([]ibg.Literal, 0, hi-lo)
		for _, i := range ks.order[lo:hi] {
			l, err := literal(ks.keys[i][0])
			if err != nil {
				return nil, err
			}
			lits = append(lits, l)
		}
		return ibg.SetPredicate(ibg.OpIn, ibg.Reference(names[0]), lits), nil
	}
	ors := make([]ibg.BooleanExpression, 0, hi-lo)
	for _, i := range ks.order[lo:hi] {
		var and ibg.BooleanExpression = ibg.AlwaysTrue{}
		for c, v := range ks.keys[i] {
			l, err := literal(v)
			if err != nil {
				return nil, err
			}
			and = ibg.NewAnd(and, ibg.LiteralPredicate(ibg.OpEQ, ibg.Reference(names[c]), l))
		}
		ors = append(ors, and)
	}
	return balancedOr(ors), nil
}

// plan plans tbl's current snapshot with the key predicate, chunk by chunk, and
// returns the candidate tasks by path.
func (r Resolver) plan(ctx context.Context, tbl *table.Table, ks *keySet) (map[string]table.FileScanTask, error) {
	out := map[string]table.FileScanTask{}
	if tbl.CurrentSnapshot() == nil || len(ks.keys) == 0 {
		return out, nil
	}
	if fs, err := tbl.FS(ctx); err == nil {
		ks.useBlobs(fs, tbl, false)
	}
	chunk := r.ChunkKeys
	if chunk <= 0 {
		chunk = DefaultChunkKeys
	}
	if len(ks.codec.names) > 1 {
		chunk = max(1, chunk/4) // OR trees grow with the columns
	}
	// One planning pass: manifests are read once, and each chunk stays small
	// enough for the metrics evaluators to prune with it.
	var preds []ibg.BooleanExpression
	for lo := 0; lo < len(ks.order); lo += chunk {
		hi := min(lo+chunk, len(ks.order))
		pred, err := ks.predicate(lo, hi)
		if err != nil {
			return nil, err
		}
		preds = append(preds, pred)
	}
	filter := balancedOr(preds)
	promoted := promotedKey(tbl, ks.codec)
	if promoted {
		// iceberg-go's metrics evaluator fails on the narrower bounds of the files
		// written before the promotion; keyRanges reads them.
		filter = ibg.AlwaysTrue{}
	}
	tasks, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(ks.codec.names...)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	// Bounds that hold no key between them drop files IN keeps (see keyRanges).
	ranges := newKeyRanges(ks)
	for _, t := range tasks {
		if ranges.mayHold(t.File) {
			out[t.File.FilePath()] = t
		}
	}
	return out, nil
}

// promotedKey reports whether one of the key columns had another type in one of
// tbl's schemas (an int promoted to long, say): files written before then hold
// the older type.
func promotedKey(tbl *table.Table, codec *keyCodec) bool {
	for _, sc := range tbl.Metadata().Schemas() {
		for i, id := range codec.ids {
			if f, ok := sc.FindFieldByID(id); ok && !f.Type.Equals(codec.types[i]) {
				return true
			}
		}
	}
	return false
}

// balancedOr ORs preds as a balanced tree (depth log n, not n).
func balancedOr(preds []ibg.BooleanExpression) ibg.BooleanExpression {
	switch len(preds) {
	case 0:
		return ibg.AlwaysFalse{}
	case 1:
		return preds[0]
	}
	mid := len(preds) / 2
	return ibg.NewOr(balancedOr(preds[:mid]), balancedOr(preds[mid:]))
}

// Resolve finds the live row positions of keys (one value per equality column,
// normalized like row values) in tbl's current snapshot: it plans with the key
// predicate (an IN for one column, an OR of ANDs for several, in chunks of ChunkKeys
// keys ORed together in one planning pass) so partition and column-statistics pruning drop files, reads only the key
// columns of each candidate data file, counts row positions and skips positions
// deleted by the file's DV or position delete files. Keys not in the table are
// simply not found. Rows deleted by equality delete files may be found (deleting
// them again is harmless).
func (r Resolver) Resolve(ctx context.Context, tbl *table.Table, keys [][]any) (*Resolution, error) {
	name := strings.Join(tbl.Identifier(), ".")
	fail := func(err error) (*Resolution, error) {
		return nil, fmt.Errorf("iceberg: resolve keys %s: %w", name, err)
	}
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		return fail(err)
	}
	ks, err := newKeySet(codec, keys)
	if err != nil {
		return fail(err)
	}
	if r.IndexBytes > 0 {
		if e := expectedFor(tbl, codec, 0, false); e != nil {
			// Resolved without the index: a warm-up stops before the scan.
			res, ok, err := e.resolve(ctx, tbl, ks, r.index(tbl, codec).halt)
			if err != nil {
				return fail(err)
			}
			if ok {
				return res, nil
			}
		}
		res, ok, err := r.index(tbl, codec).resolve(ctx, tbl, ks, true)
		if err != nil {
			return fail(err)
		}
		if ok {
			return res, nil
		}
	}
	res := &Resolution{Keys: ks.keys}
	if s := tbl.CurrentSnapshot(); s != nil {
		res.SnapshotID = s.SnapshotID
	}
	tasks, err := r.plan(ctx, tbl, ks)
	if err != nil {
		return fail(err)
	}
	res.tasks = tasks
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(err)
	}
	paths := sortedPaths(tasks)
	list := make([]table.FileScanTask, len(paths))
	for i, p := range paths {
		list[i] = tasks[p]
	}
	hits, read, err := scanFiles(ctx, fs, list, ks)
	if err != nil {
		return fail(err)
	}
	res.Scanned, res.FilesRead, res.KeyBytes = paths, len(paths), read
	for _, h := range hits {
		if len(h.Positions) > 0 {
			res.Files = append(res.Files, h)
		}
	}
	return res, nil
}

// Refresh brings res up to tbl's current snapshot: files no longer live are dropped
// (their rows, if rewritten, are in new files), files whose delete files changed are
// read again, and files added since res.SnapshotID that may hold a key are read. It
// returns whether any file was read again or dropped (a new snapshot that changed
// nothing for the keys is no change). res must have been made by a Resolver with the
// same key columns.
func (r Resolver) Refresh(ctx context.Context, tbl *table.Table, res *Resolution) (bool, error) {
	name := strings.Join(tbl.Identifier(), ".")
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("iceberg: resolve keys %s: %w", name, err)
	}
	head := int64(0)
	if s := tbl.CurrentSnapshot(); s != nil {
		head = s.SnapshotID
	}
	if head == res.SnapshotID && res.tasks != nil {
		return false, nil
	}
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		return fail(err)
	}
	if r.IndexBytes > 0 && head == res.SnapshotID {
		// Resolved at this very snapshot (by a shard): only the tasks are missing.
		if tasks, ok := r.index(tbl, codec).tasksFor(head, res.Files); ok {
			res.tasks = tasks
			return false, nil
		}
		if e := expectedFor(tbl, codec, 0, false); e != nil {
			if tasks, ok := e.tasksFor(head, res.Files); ok {
				res.tasks = tasks
				return false, nil
			}
		}
	}
	ks, err := newKeySet(codec, res.Keys)
	if err != nil {
		return fail(err)
	}
	if len(ks.keys) != len(res.Keys) {
		return fail(fmt.Errorf("resolution holds duplicate keys"))
	}
	// Read at head (Scanned): planning finds the tasks; the index would read files.
	if r.IndexBytes > 0 && (head != res.SnapshotID || len(res.Scanned) == 0) {
		idx := r.index(tbl, codec)
		// The committer's refresh looks keys up without bringing their partitions
		// into memory (those on local disk stay there).
		fresh, ok, err := idx.resolve(ctx, tbl, ks, false)
		if err != nil {
			return fail(err)
		}
		if ok {
			res.KeyBytes += fresh.KeyBytes
		}
		if ok && fresh.SnapshotID == head {
			changed := head != res.SnapshotID && !sameHits(res.Files, fresh.Files)
			res.SnapshotID, res.Files, res.Scanned, res.tasks = head, fresh.Files, nil, fresh.tasks
			return changed, nil
		}
	}
	tasks, err := r.plan(ctx, tbl, ks)
	if err != nil {
		return fail(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(err)
	}
	old := make(map[string]FileHits, len(res.Files))
	for _, f := range res.Files {
		old[f.Path] = f
	}
	scanned := make(map[string]bool, len(res.Scanned))
	for _, p := range res.Scanned {
		scanned[p] = true
	}
	changed := false
	var files []FileHits
	var paths []string
	for _, p := range sortedPaths(tasks) {
		t := tasks[p]
		paths = append(paths, p)
		prev, hit := old[p]
		if scanned[p] && (!hit || prev.Deletes == deleteIdentity(t)) {
			if hit {
				files = append(files, prev)
			}
			continue
		}
		h, err := scanFile(ctx, fs, t, ks, &res.KeyBytes, goruntime.GOMAXPROCS(0))
		if err != nil {
			return fail(err)
		}
		changed = true
		if len(h.Positions) > 0 {
			files = append(files, h)
		}
	}
	if len(files) != len(res.Files) {
		changed = true
	}
	res.SnapshotID, res.Files, res.Scanned, res.tasks = head, files, paths, tasks
	return changed, nil
}

// sameHits reports whether a and b hold the same positions of the same files.
func sameHits(a, b []FileHits) bool {
	return slices.EqualFunc(a, b, func(x, y FileHits) bool { return x.Path == y.Path && slices.Equal(x.Positions, y.Positions) })
}

func sortedPaths(tasks map[string]table.FileScanTask) []string {
	out := make([]string, 0, len(tasks))
	for p := range tasks {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// deleteIdentity names the delete files applying to a task's data file.
func deleteIdentity(t table.FileScanTask) string {
	var parts []string
	for _, d := range t.DeletionVectorFiles {
		off := int64(-1)
		if o := d.ContentOffset(); o != nil {
			off = *o
		}
		parts = append(parts, d.FilePath()+"@"+strconv.FormatInt(off, 10))
	}
	for _, d := range t.DeleteFiles {
		parts = append(parts, d.FilePath())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// deletedPositions returns the positions of task's data file deleted by its DVs
// and position delete files (nil when none).
func deletedPositions(fs iceio.IO, t table.FileScanTask) (*dv.RoaringPositionBitmap, error) {
	if len(t.DeletionVectorFiles) == 0 && len(t.DeleteFiles) == 0 {
		return nil, nil
	}
	bm := dv.NewRoaringPositionBitmap()
	for _, d := range t.DeletionVectorFiles {
		b, err := readDV(fs, d)
		if err != nil {
			return nil, fmt.Errorf("read deletion vector %s: %w", d.FilePath(), err)
		}
		bm.Or(b)
	}
	path := t.File.FilePath()
	for _, d := range t.DeleteFiles {
		if d.FileFormat() != ibg.ParquetFile {
			return nil, fmt.Errorf("position delete file %s: format %s not supported", d.FilePath(), d.FileFormat())
		}
		err := readParquet(fs, d.FilePath(), func(pr *file.Reader) ([]int, error) {
			p := pr.MetaData().Schema.ColumnIndexByName("file_path")
			q := pr.MetaData().Schema.ColumnIndexByName("pos")
			if p < 0 || q < 0 {
				return nil, fmt.Errorf("position delete file %s lacks file_path or pos", d.FilePath())
			}
			return []int{p, q}, nil
		}, func(rec arrow.RecordBatch, _ int64) error {
			paths, ok1 := rec.Column(0).(*array.String)
			pos, ok2 := rec.Column(1).(*array.Int64)
			if !ok1 || !ok2 {
				return fmt.Errorf("position delete file %s: unexpected column types", d.FilePath())
			}
			for j := 0; j < int(rec.NumRows()); j++ {
				if paths.Value(j) == path {
					bm.Set(uint64(pos.Value(j)))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return bm, nil
}

// readParquet reads the leaf columns chosen by cols of a Parquet file through fs,
// calling fn with each batch and the position of its first row.
func readParquet(fs iceio.IO, path string, cols func(*file.Reader) ([]int, error), fn func(arrow.RecordBatch, int64) error) error {
	return withParquet(fs, path, func(pr *file.Reader) error { return readColumns(pr, path, cols, fn) })
}

// withParquet opens the Parquet file at path through fs and calls fn with its reader.
func withParquet(fs iceio.IO, path string, fn func(*file.Reader) error) error {
	return withParquetSource(fs, path, func(_ parquet.ReaderAtSeeker, pr *file.Reader) error { return fn(pr) })
}

// withParquetSource is withParquet, and gives fn the opened file too.
func withParquetSource(fs iceio.IO, path string, fn func(parquet.ReaderAtSeeker, *file.Reader) error) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer pr.Close()
	return fn(f, pr)
}

func readColumns(pr *file.Reader, path string, cols func(*file.Reader) ([]int, error), fn func(arrow.RecordBatch, int64) error) error {
	idx, err := cols(pr)
	if err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), idx, nil)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer rr.Release()
	var pos int64
	for rr.Next() {
		rec := rr.RecordBatch()
		if err := fn(rec, pos); err != nil {
			return err
		}
		pos += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// keyLeaves finds the Parquet leaf columns of the key columns: by field ID, or by
// name for files written without IDs.
func keyLeaves(pr *file.Reader, codec *keyCodec) ([]int, error) {
	sc := pr.MetaData().Schema
	out := make([]int, len(codec.ids))
	for i, id := range codec.ids {
		out[i] = -1
		for c := 0; c < sc.NumColumns(); c++ {
			if sc.Column(c).SchemaNode().FieldID() == int32(id) {
				out[i] = c
				break
			}
		}
		if out[i] < 0 {
			out[i] = sc.ColumnIndexByName(codec.names[i])
		}
		if out[i] < 0 {
			return nil, fmt.Errorf("data file has no column %q (field %d)", codec.names[i], id)
		}
	}
	return out, nil
}

// readInt64Key reads the single key column (codec) of the data file at path
// straight from its Parquet pages, into reused buffers, without building Arrow
// arrays: fn gets each batch's non-null values, in row order, with the position of
// the batch's first row and, when the column can hold nulls, its definition levels
// (a row holds a value where its level is maxDef). It returns pqspan.ErrNotDirect
// when the column is not stored as INT64.
//
// The file's row groups are read in up to par spans of consecutive row groups,
// or of the pages of a large row group (see pqspan.Spans), each by a goroutine
// of its own, so that one large file uses par processors: fn is called
// concurrently for different spans, with the span's number (0 to par-1, in row
// order) and in row order within a span.
//
// A row group for which skip (when not nil) reports true, given its key column
// chunk, is not read (nor counted in *read).
func readInt64Key(ctx context.Context, fs iceio.IO, path string, codec *keyCodec, read *int64, par int,
	skip func(*metadata.ColumnChunkMetaData) bool, fn func(span int, vals []int64, defs []int16, maxDef int16, base int64) error) error {
	return readKey(ctx, fs, path, codec, read, parquet.Types.Int64, pqspan.Int64Batch, par, skip, fn)
}

// readByteArrayKey is readInt64Key for a single key column stored as BYTE_ARRAY (a
// string or binary column): fn gets each batch's values as slices of the decoded
// page, valid during the call only.
func readByteArrayKey(ctx context.Context, fs iceio.IO, path string, codec *keyCodec, read *int64, par int,
	skip func(*metadata.ColumnChunkMetaData) bool, fn func(span int, vals []parquet.ByteArray, defs []int16, maxDef int16, base int64) error) error {
	return readKey(ctx, fs, path, codec, read, parquet.Types.ByteArray, pqspan.ByteArrayBatch, par, skip, fn)
}

// readInt64Leaf reads the int64 leaf column leaf of pr as readInt64Key describes,
// by one goroutine.
func readInt64Leaf(ctx context.Context, pr *file.Reader, path string, leaf int,
	fn func(vals []int64, defs []int16, maxDef int16, base int64) error) error {
	return pqspan.ReadLeaf(ctx, pr, path, leaf, parquet.Types.Int64, pqspan.Int64Batch, pqspan.Span{Hi: pr.NumRowGroups()}, fn)
}

// readKey reads the single key column (codec) of the data file at path, stored
// as typ, with pqspan.Read: in spans of row groups, or of pages, in parallel.
func readKey[T any](ctx context.Context, fs iceio.IO, path string, codec *keyCodec, read *int64, typ parquet.Type,
	readBatch pqspan.BatchFunc[T], par int,
	skip func(*metadata.ColumnChunkMetaData) bool, fn func(span int, vals []T, defs []int16, maxDef int16, base int64) error) error {
	return withParquetSource(fs, path, func(src parquet.ReaderAtSeeker, pr *file.Reader) error {
		leaves, err := keyLeaves(pr, codec)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if pr.MetaData().Schema.Column(leaves[0]).PhysicalType() != typ {
			return pqspan.ErrNotDirect
		}
		keep := pqspan.Kept(pr, leaves[0], skip)
		*read += pqspan.ChunkBytes(pr, leaves, keep)
		return pqspan.Read(ctx, src, pr, path, leaves[0], typ, readBatch, par, keep, fn)
	})
}

// readKeyColumns reads the key columns (codec) of the data file at path and calls
// fn with each batch's key columns, in key column order, their encoders and the
// position of the batch's first row. It adds the stored size of the key columns
// to *read.
func readKeyColumns(ctx context.Context, fs iceio.IO, path string, codec *keyCodec, read *int64, fn func(cols []arrow.Array, encs []arrowKeyFn, base int64) error) error {
	var order []int // key column -> column of the record batch
	return readParquet(fs, path, func(pr *file.Reader) ([]int, error) {
		leaves, err := keyLeaves(pr, codec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sorted := slices.Clone(leaves)
		slices.Sort(sorted)
		order = make([]int, len(leaves))
		for i, l := range leaves {
			order[i] = slices.Index(sorted, l)
		}
		*read += pqspan.ChunkBytes(pr, sorted, nil)
		return sorted, nil
	}, func(rec arrow.RecordBatch, base int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		encs := make([]arrowKeyFn, len(order))
		cols := make([]arrow.Array, len(order))
		for i := range order {
			cols[i] = rec.Column(order[i])
			var err error
			if encs[i], err = codec.arrowEncoder(i, cols[i]); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return fn(cols, encs, base)
	})
}

// scanFile reads the key columns of task's data file and returns the live positions
// holding keys of ks. It adds the key columns' stored size to *read. A single key
// column is read by up to par goroutines (see readInt64Key).
func scanFile(ctx context.Context, fs iceio.IO, t table.FileScanTask, ks *keySet, read *int64, par int) (FileHits, error) {
	path := t.File.FilePath()
	h := FileHits{Path: path, Deletes: deleteIdentity(t)}
	deleted, err := deletedPositions(fs, t)
	if err != nil {
		return h, err
	}
	live := func(pos int64) bool { return deleted == nil || !deleted.Contains(uint64(pos)) }
	if ok := ks.scanBlob(fs, t, &h, live, read); ok {
		return h, nil
	}
	// The hits of each span of a direct read, concatenated in row order.
	spans := make([]FileHits, max(par, 1))
	join := func(err error) (FileHits, error) {
		for _, s := range spans {
			h.Positions = append(h.Positions, s.Positions...)
			h.KeyIndexes = append(h.KeyIndexes, s.KeyIndexes...)
		}
		return h, err
	}
	if ks.single != nil {
		// One long column: read straight from the pages; most values fail the
		// bit filter before a map lookup.
		check := func(s *FileHits, v, pos int64) {
			if k, ok := ks.single[v]; ok && live(pos) {
				s.Positions = append(s.Positions, pos)
				s.KeyIndexes = append(s.KeyIndexes, k)
			}
		}
		build := ks.blobBuild(t, par) // a read that skips row groups builds none
		err := readInt64Key(ctx, fs, path, ks.codec, read, par, ks.outside, func(span int, vals []int64, defs []int16, maxDef int16, base int64) error {
			s := &spans[span]
			if build != nil {
				addSpan(build, span, vals, defs, maxDef, base)
			}
			if defs == nil {
				for j, v := range vals {
					if ks.maybeKey(v) {
						check(s, v, base+int64(j))
					}
				}
				return nil
			}
			k := 0
			for j, d := range defs {
				if d != maxDef {
					continue // a null key
				}
				if v := vals[k]; ks.maybeKey(v) {
					check(s, v, base+int64(j))
				}
				k++
			}
			return nil
		})
		if !errors.Is(err, pqspan.ErrNotDirect) {
			if err == nil && build != nil {
				h.Blob = build.Finish()
			}
			return join(err)
		}
	}
	if ks.bytesSeed != nil {
		// One string or binary column: read straight from the pages; most values
		// fail the bit filter before they are encoded and looked up.
		bufs := make([][]byte, len(spans))
		err := readByteArrayKey(ctx, fs, path, ks.codec, read, par, ks.outside, func(span int, vals []parquet.ByteArray, defs []int16, maxDef int16, base int64) error {
			s := &spans[span]
			pqspan.EachValue(vals, defs, maxDef, base, func(v parquet.ByteArray, pos int64) {
				if !ks.maybeBytes(v) {
					return
				}
				bufs[span] = appendEscaped(bufs[span][:0], v)
				if k, ok := ks.index[string(bufs[span])]; ok && live(pos) {
					s.Positions = append(s.Positions, pos)
					s.KeyIndexes = append(s.KeyIndexes, k)
				}
			})
			return nil
		})
		if !errors.Is(err, pqspan.ErrNotDirect) {
			return join(err)
		}
	}
	err = readKeyColumns(ctx, fs, path, ks.codec, read, func(cols []arrow.Array, encs []arrowKeyFn, base int64) error {
		n := cols[0].Len()
		// One long column by value; other columns, and the Int32 values of a long
		// column in a file written before its promotion, by their encoding (encs).
		if a, ok := cols[0].(*array.Int64); ok && ks.single != nil {
			for j, v := range a.Int64Values()[:n] {
				if !ks.maybeKey(v) {
					continue
				}
				if k, ok := ks.single[v]; ok && a.IsValid(j) && live(base+int64(j)) {
					h.Positions = append(h.Positions, base+int64(j))
					h.KeyIndexes = append(h.KeyIndexes, k)
				}
			}
			return nil
		}
		var buf []byte
	rows:
		for j := range n {
			buf = buf[:0]
			for i, enc := range encs {
				if cols[i].IsNull(j) {
					continue rows
				}
				buf = enc(buf, j)
			}
			if k, ok := ks.index[string(buf)]; ok && live(base+int64(j)) {
				h.Positions = append(h.Positions, base+int64(j))
				h.KeyIndexes = append(h.KeyIndexes, k)
			}
		}
		return nil
	})
	return h, err
}
