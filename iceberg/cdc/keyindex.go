package cdc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"golang.org/x/sync/errgroup"
)

// IndexEntryBytes is the memory one indexed row takes in a KeyIndex: a 64-bit key
// fingerprint and a 64-bit location (data file ordinal, row position).
const IndexEntryBytes = 16

// KeyIndex maps the keys of a table's live rows to their data file and row
// position, so that resolving a window's keys costs lookups, not reads of every
// data file's key columns. Data files are immutable: the index, built once from the
// key columns of the live data files of a snapshot, follows the table by reading
// only the data files each later snapshot adds (the sink's own and other
// writers'), forgetting those it removes (a rewrite or compaction), and reading
// the deletion vectors of the files whose keys it reports, by the delete files that
// apply to them (their bitmaps are cached until those change).
//
// One index serves every shard of a table in a worker process (see indexFor): a
// data file's key columns are read once per process, whatever the number of
// shards. A restarted worker rebuilds it from the live data files on its first
// resolution.
//
// Each indexed row takes IndexEntryBytes: the key's fingerprint and its location,
// in sorted arrays. Keys whose encoding fits 8 bytes (one integer, date, time or
// timestamp column, or several narrow ones) are their own fingerprint, so lookups are
// exact. Longer keys (strings, UUIDs, composites) are fingerprinted with a 64-bit
// hash: a fingerprint matching more than one live row is checked against the data
// files (a real duplicate and a collision are told apart), and a key absent from the
// table matches one other live row with probability rows/2^64 per lookup (about
// 5e-11 for a billion-row table), in which case that row would be deleted. Set
// the budget to 0 to resolve every key by reading the data files instead.
//
// A table whose live rows exceed the budget (bytes / IndexEntryBytes) is not
// indexed: its keys are resolved by reading the candidate data files' key columns,
// as without an index, until it shrinks below the budget.
type KeyIndex struct {
	mu       sync.Mutex
	codec    *keyCodec
	exact    bool // encoded keys fit 8 bytes: the fingerprint is the key
	seed     maphash.Seed
	limit    int64 // entries
	disabled bool  // over the budget at snapID

	snapID, seq int64
	files       []indexFile       // by ordinal
	ordinal     map[string]uint32 // live files by path
	tasks       map[string]table.FileScanTask
	main, delta []indexEntry // sorted by fingerprint
	dead        int64        // entries of files no longer live
	deleted     map[string]deletedRows
	lastUse     int64
	// warmed are the data files a warm-up (Resolver.Warm) read, reported with
	// the next resolution's.
	warmed []string

	// fingerprint may be replaced by tests (collisions).
	fingerprint func(enc []byte) uint64
}

type indexEntry struct{ fp, loc uint64 }

type indexFile struct {
	path    string
	live    bool
	entries int64
}

// deletedRows are a data file's deleted positions (nil: none) under the delete
// files named by ident (deleteIdentity).
type deletedRows struct {
	ident string
	bm    *dv.RoaringPositionBitmap
}

// indexes are the process's key indexes, by table UUID and key columns.
var indexes = struct {
	sync.Mutex
	m    map[string]*KeyIndex
	tick int64
}{m: map[string]*KeyIndex{}}

// indexFor returns the process's key index of tbl's keys (codec), made on first use
// with a budget of limitBytes. When the indexes of all tables together exceed the
// largest budget, the least recently used others are dropped.
func indexFor(tbl *table.Table, codec *keyCodec, limitBytes int64) *KeyIndex {
	var id strings.Builder
	id.WriteString(tbl.Metadata().TableUUID().String())
	for i, n := range codec.names {
		fmt.Fprintf(&id, "\x00%s:%d:%s", n, codec.ids[i], codec.types[i])
	}
	indexes.Lock()
	defer indexes.Unlock()
	indexes.tick++
	x := indexes.m[id.String()]
	if x == nil {
		x = newKeyIndex(codec, limitBytes)
		indexes.m[id.String()] = x
	}
	if l := limitBytes / IndexEntryBytes; l != x.limit {
		// Another budget (another sink's config): judged afresh at the next sync.
		x.mu.Lock()
		x.limit = l
		x.reset()
		x.mu.Unlock()
	}
	x.lastUse = indexes.tick
	// Bound the process: drop least recently used indexes past the budget.
	var total int64
	keys := make([]string, 0, len(indexes.m))
	for k, o := range indexes.m {
		total += o.sizeHint()
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(indexes.m[a].lastUse, indexes.m[b].lastUse) })
	for _, k := range keys {
		if total <= limitBytes/IndexEntryBytes {
			break
		}
		if o := indexes.m[k]; o != x {
			total -= o.sizeHint()
			delete(indexes.m, k)
		}
	}
	return x
}

func newKeyIndex(codec *keyCodec, limitBytes int64) *KeyIndex {
	x := &KeyIndex{codec: codec, seed: maphash.MakeSeed(), limit: limitBytes / IndexEntryBytes}
	width := 0
	x.exact = true
	for _, t := range codec.types {
		switch t.(type) {
		case ibg.BooleanType:
			width++
		case ibg.Int32Type, ibg.DateType:
			width += 4
		case ibg.Int64Type, ibg.TimeType, ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType:
			width += 8
		default:
			x.exact = false
		}
	}
	x.exact = x.exact && width <= 8
	x.fingerprint = x.hash
	return x
}

// hash is the fingerprint of an encoded key: the key itself when it fits 8 bytes
// (left-aligned, so equal widths keep it injective), else a 64-bit hash.
func (x *KeyIndex) hash(enc []byte) uint64 {
	if x.exact {
		var b [8]byte
		copy(b[:], enc)
		return binary.BigEndian.Uint64(b[:])
	}
	return maphash.Bytes(x.seed, enc)
}

// sizeHint is the number of entries held, read without the index's lock (an
// estimate for the process budget).
func (x *KeyIndex) sizeHint() int64 {
	if !x.mu.TryLock() {
		return x.limit / 2
	}
	defer x.mu.Unlock()
	return int64(len(x.main) + len(x.delta))
}

// Entries returns the number of rows indexed (including rows of files no longer
// live, until they are compacted away).
func (x *KeyIndex) Entries() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.main) + len(x.delta)
}

// Bytes returns the memory the index holds: its entry arrays (by capacity) and its
// table of data files.
func (x *KeyIndex) Bytes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := int64(cap(x.main)+cap(x.delta)) * IndexEntryBytes
	for _, f := range x.files {
		n += int64(len(f.path)) + 48
	}
	return n
}

// sync brings the index to tbl's current snapshot, unless the index already
// follows a newer snapshot of which tbl, loaded earlier, does not know (another
// shard's fresher load): then the index answers for its own snapshot. It returns
// the data files read.
func (x *KeyIndex) sync(ctx context.Context, tbl *table.Table) ([]string, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		x.reset()
		x.tasks = map[string]table.FileScanTask{}
		return nil, nil
	}
	if snap.SnapshotID == x.snapID && x.tasks != nil {
		return nil, nil
	}
	if x.tasks != nil && snap.SequenceNumber < x.seq && tbl.Metadata().SnapshotByID(x.snapID) == nil {
		return nil, nil // tbl is older than the index
	}
	tasks, err := tbl.Scan(table.WithSelectedFields(x.codec.names...)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	byPath := make(map[string]table.FileScanTask, len(tasks))
	var rows int64
	for _, t := range tasks {
		byPath[t.File.FilePath()] = t
		rows += t.File.Count()
		if t.File.Count() >= 1<<32 {
			rows = x.limit + 1 // positions do not fit the location
		}
	}
	if rows > x.limit {
		x.reset()
		x.disabled = true
		x.snapID, x.seq, x.tasks = snap.SnapshotID, snap.SequenceNumber, byPath
		return nil, nil
	}
	if x.disabled {
		x.reset()
	}
	x.snapID, x.seq, x.tasks = snap.SnapshotID, snap.SequenceNumber, byPath
	for path, o := range x.ordinal {
		if _, ok := byPath[path]; !ok {
			x.files[o].live = false
			x.dead += x.files[o].entries
			delete(x.ordinal, path)
			delete(x.deleted, path)
		}
	}
	var added []table.FileScanTask
	for _, p := range sortedPaths(byPath) {
		if _, ok := x.ordinal[p]; !ok {
			added = append(added, byPath[p])
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	if err := x.add(ctx, fs, added); err != nil {
		x.reset() // partly added: start over next time
		return nil, err
	}
	read := make([]string, len(added))
	for i, t := range added {
		read[i] = t.File.FilePath()
	}
	return read, nil
}

// reset empties the index.
func (x *KeyIndex) reset() {
	x.disabled = false
	x.snapID, x.seq, x.tasks = 0, 0, nil
	x.files, x.ordinal, x.deleted = nil, map[string]uint32{}, map[string]deletedRows{}
	x.main, x.delta, x.dead = nil, nil, 0
}

// add reads the key columns of the data files of tasks, in parallel, and indexes
// their live rows.
func (x *KeyIndex) add(ctx context.Context, fs iceio.IO, tasks []table.FileScanTask) error {
	if len(tasks) == 0 {
		return nil
	}
	if x.ordinal == nil {
		x.ordinal, x.deleted = map[string]uint32{}, map[string]deletedRows{}
	}
	base := uint32(len(x.files))
	if uint64(base)+uint64(len(tasks)) >= 1<<32 {
		x.compact()
		base = uint32(len(x.files))
	}
	// Each file's entries are read and sorted by one goroutine (a file written in key
	// order is checked, not sorted), then the sorted runs are merged.
	parts := make([][]indexEntry, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, t := range tasks {
		g.Go(func() error {
			var err error
			parts[i], err = x.readFile(gctx, fs, t, uint64(base)+uint64(i))
			sortEntries(parts[i])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, t := range tasks {
		x.ordinal[t.File.FilePath()] = base + uint32(i)
		x.files = append(x.files, indexFile{path: t.File.FilePath(), live: true, entries: int64(len(parts[i]))})
	}
	if len(x.main) == 0 && len(x.delta) == 0 && x.dead == 0 {
		x.main, x.delta = coldMerge(parts) // a cold start: nothing to renumber
		return nil
	}
	x.delta = mergeEntries(x.delta, mergeRuns(parts), nil)
	if len(x.delta) > len(x.main)/4 || x.dead > int64(len(x.main)+len(x.delta))/4 {
		x.compact()
	}
	return nil
}

// compact merges the delta into the main array, dropping entries of files no
// longer live and renumbering the live files.
func (x *KeyIndex) compact() {
	renum := make([]uint64, len(x.files))
	var files []indexFile
	for o, f := range x.files {
		if f.live {
			renum[o] = uint64(len(files))
			x.ordinal[f.path] = uint32(len(files))
			files = append(files, f)
		} else {
			renum[o] = 1<<32 - 1
		}
	}
	keep := func(e *indexEntry) bool {
		o := renum[e.loc>>32]
		if o == 1<<32-1 {
			return false
		}
		e.loc = o<<32 | e.loc&(1<<32-1)
		return true
	}
	x.main = mergeEntries(x.main, x.delta, keep)
	x.delta, x.files, x.dead = nil, files, 0
}

// sortEntries sorts es by fingerprint. Entries read from a file written in key
// order (exact keys) are found sorted in one pass; others (random keys, hashed
// fingerprints) are radix sorted.
func sortEntries(es []indexEntry) {
	cmpFP := func(a, b indexEntry) int { return cmp.Compare(a.fp, b.fp) }
	switch {
	case slices.IsSortedFunc(es, cmpFP):
	case len(es) < 1024:
		slices.SortFunc(es, cmpFP)
	default:
		radixSort(es)
	}
}

// radixSort sorts es by fingerprint, stably: a least significant digit radix sort,
// one byte a pass, skipping the bytes every fingerprint shares (the high bytes of
// small integer keys). It takes a buffer of len(es) entries.
func radixSort(es []indexEntry) {
	var counts [8][256]int
	for _, e := range es {
		for b := range 8 {
			counts[b][byte(e.fp>>(8*b))]++
		}
	}
	src, dst := es, make([]indexEntry, len(es))
	for b := range 8 {
		c := &counts[b]
		shift := 8 * b
		if c[byte(es[0].fp>>shift)] == len(es) {
			continue // every fingerprint has this byte
		}
		var next [256]int
		sum := 0
		for d := range 256 {
			next[d] = sum
			sum += c[d]
		}
		for _, e := range src {
			d := byte(e.fp >> shift)
			dst[next[d]] = e
			next[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &es[0] {
		copy(es, src)
	}
}

// mergeRuns merges sorted runs into one sorted array: pairwise, level by level,
// between two arrays of the total size (log2(len(runs)) passes, two allocations).
// A single run is returned as it is.
func mergeRuns(runs [][]indexEntry) []indexEntry {
	runs = slices.DeleteFunc(slices.Clone(runs), func(r []indexEntry) bool { return len(r) == 0 })
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return runs[0]
	}
	bounds := []int{0} // run i is src[bounds[i]:bounds[i+1]]
	var n int
	for _, r := range runs {
		n += len(r)
		bounds = append(bounds, n)
	}
	src, dst := make([]indexEntry, n), make([]indexEntry, n)
	for i, r := range runs {
		copy(src[bounds[i]:], r)
	}
	for len(bounds) > 2 {
		next := []int{0}
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			if i+2 == len(bounds) { // an odd run out: carried to the next level
				copy(dst[lo:mid], src[lo:mid])
				next = append(next, mid)
				continue
			}
			hi := bounds[i+2]
			mergeInto(dst[lo:hi], src[lo:mid], src[mid:hi])
			next = append(next, hi)
		}
		bounds = next
		src, dst = dst, src
	}
	return src
}

// coldMerge merges the sorted runs of a cold start into the two arrays lookups
// search: the shortest runs, up to a quarter of the entries, into delta (a table's many
// small files, such as one per CDC commit), the others into main. Each array takes
// log2 of its own run count in passes, so the long runs of the large files are copied
// fewer times than one merge of every run would copy them (BenchmarkMergeRuns).
func coldMerge(runs [][]indexEntry) (main, delta []indexEntry) {
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b []indexEntry) int { return cmp.Compare(len(a), len(b)) })
	k, n := 0, 0 // sorted[:k] are the short runs
	for k < len(sorted) && n+len(sorted[k]) <= total/4 {
		n += len(sorted[k])
		k++
	}
	return mergeRuns(sorted[k:]), mergeRuns(sorted[:k])
}

// mergeEntries merges two sorted arrays into a new one, keeping (and rewriting)
// the entries keep accepts (all when nil).
func mergeEntries(a, b []indexEntry, keep func(*indexEntry) bool) []indexEntry {
	if keep == nil {
		return mergeAll(a, b)
	}
	out := make([]indexEntry, 0, len(a)+len(b))
	push := func(e indexEntry) {
		if keep == nil || keep(&e) {
			out = append(out, e)
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].fp <= b[j].fp {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		push(a[i])
	}
	for ; j < len(b); j++ {
		push(b[j])
	}
	return slices.Clip(out)
}

// mergeAll merges two sorted arrays into a new one.
func mergeAll(a, b []indexEntry) []indexEntry {
	out := make([]indexEntry, len(a)+len(b))
	mergeInto(out, a, b)
	return out
}

// mergeInto merges the sorted arrays a and b into out, of their total length.
func mergeInto(out, a, b []indexEntry) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if a[i].fp <= b[j].fp {
			out[k] = a[i]
			i++
		} else {
			out[k] = b[j]
			j++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

// readFile returns the index entries of the live rows of task's data file, whose
// ordinal is ord.
func (x *KeyIndex) readFile(ctx context.Context, fs iceio.IO, t table.FileScanTask, ord uint64) ([]indexEntry, error) {
	path := t.File.FilePath()
	deleted, err := deletedPositions(fs, t)
	if err != nil {
		return nil, err
	}
	out := make([]indexEntry, 0, max(0, t.File.Count()))
	// live reports whether the row at pos is not deleted: one bit a row, set where
	// the row is kept, instead of a bitmap lookup per row.
	live := func(int64) bool { return true }
	if deleted != nil {
		keep := deleted.KeepMaskBytes(t.File.Count())
		live = func(pos int64) bool { return pos >= int64(len(keep))*8 || keep[pos>>3]&(1<<(pos&7)) != 0 }
	}
	if _, long := x.codec.types[0].(ibg.Int64Type); long && len(x.codec.types) == 1 && x.exact {
		// One long column, its own fingerprint: read straight from the pages.
		err := readInt64Key(ctx, fs, path, x.codec, func(vals []int64, defs []int16, maxDef int16, base int64) error {
			if defs == nil {
				for j, v := range vals {
					if pos := base + int64(j); live(pos) {
						out = append(out, indexEntry{fp: uint64(v) ^ 1<<63, loc: ord<<32 | uint64(pos)})
					}
				}
				return nil
			}
			k := 0
			for j, d := range defs {
				if d != maxDef {
					continue // a null key: not indexed
				}
				if pos := base + int64(j); live(pos) {
					out = append(out, indexEntry{fp: uint64(vals[k]) ^ 1<<63, loc: ord<<32 | uint64(pos)})
				}
				k++
			}
			return nil
		})
		if !errors.Is(err, errNotInt64) {
			return out, err
		}
		out = out[:0]
	}
	err = readKeyColumns(ctx, fs, path, x.codec, func(cols []arrow.Array, encs []arrowKeyFn, base int64) error {
		if a, ok := cols[0].(*array.Int64); ok && len(cols) == 1 && x.exact {
			nulls := a.NullN() > 0
			for j, v := range a.Int64Values() {
				pos := base + int64(j)
				if (!nulls || a.IsValid(j)) && (deleted == nil || live(pos)) {
					out = append(out, indexEntry{fp: uint64(v) ^ 1<<63, loc: ord<<32 | uint64(pos)})
				}
			}
			return nil
		}
		var buf []byte
	rows:
		for j := range cols[0].Len() {
			pos := base + int64(j)
			if !live(pos) {
				continue
			}
			buf = buf[:0]
			for i, enc := range encs {
				if cols[i].IsNull(j) {
					continue rows
				}
				buf = enc(buf, j)
			}
			out = append(out, indexEntry{fp: x.fingerprint(buf), loc: ord<<32 | uint64(pos)})
		}
		return nil
	})
	return out, err
}

// find calls fn with the location of each entry whose fingerprint is fp. Lookups
// come in ascending fingerprint order (see resolve): cur holds, for main and delta,
// where the last one ended, and each search gallops forward from there, so a batch of
// lookups walks each array once instead of binary searching it from the top each
// time (cache misses in a table's worth of entries).
func (x *KeyIndex) find(cur *[2]int, fp uint64, fn func(loc uint64)) {
	for a, es := range [2][]indexEntry{x.main, x.delta} {
		i := gallop(es, cur[a], fp)
		cur[a] = i
		for ; i < len(es) && es[i].fp == fp; i++ {
			fn(es[i].loc)
		}
	}
}

// gallop returns the first index at or after from whose fingerprint is at least fp:
// an exponential search forward from from, then a binary search within the last step.
func gallop(es []indexEntry, from int, fp uint64) int {
	if from >= len(es) || es[from].fp >= fp {
		return from
	}
	lo, step := from, 1 // es[lo].fp < fp
	for lo+step < len(es) && es[lo+step].fp < fp {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(es))
	i, _ := slices.BinarySearchFunc(es[lo+1:hi], fp, func(e indexEntry, fp uint64) int { return cmp.Compare(e.fp, fp) })
	return lo + 1 + i
}

// deletedOf returns the deleted positions of the live data file at path (nil:
// none), read once per set of delete files.
func (x *KeyIndex) deletedOf(fs iceio.IO, path string) (*dv.RoaringPositionBitmap, error) {
	t := x.tasks[path]
	ident := deleteIdentity(t)
	if d, ok := x.deleted[path]; ok && d.ident == ident {
		return d.bm, nil
	}
	bm, err := deletedPositions(fs, t)
	if err != nil {
		return nil, err
	}
	x.deleted[path] = deletedRows{ident: ident, bm: bm}
	return bm, nil
}

// resolve resolves the keys of ks with the index brought up to tbl (see sync). It
// returns ok false when the table is over the index's budget.
func (x *KeyIndex) resolve(ctx context.Context, tbl *table.Table, ks *keySet) (res *Resolution, ok bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	read, err := x.sync(ctx, tbl)
	if err != nil {
		return nil, false, err
	}
	if len(x.warmed) > 0 {
		read = slices.Concat(x.warmed, read)
		x.warmed = nil
	}
	if x.disabled {
		return nil, false, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, err
	}
	type hit struct {
		ord uint32
		pos int64
		key int32
	}
	var hits []hit
	var ambiguous []int32
	// Deleted positions by file ordinal, looked up once per file per resolution.
	deleted := make([]*dv.RoaringPositionBitmap, len(x.files))
	loaded := make([]bool, len(x.files))
	// The keys are looked up in fingerprint order (see find).
	type probe struct {
		fp uint64
		k  int32
	}
	probes := make([]probe, len(ks.keys))
	var enc []byte
	for k := range ks.keys {
		enc = append(enc[:0], ks.enc[k]...)
		probes[k] = probe{x.fingerprint(enc), int32(k)}
	}
	slices.SortFunc(probes, func(a, b probe) int { return cmp.Or(cmp.Compare(a.fp, b.fp), cmp.Compare(a.k, b.k)) })
	var cur [2]int
	for _, p := range probes {
		k := p.k
		found := 0
		var ferr error
		x.find(&cur, p.fp, func(loc uint64) {
			ord, pos := uint32(loc>>32), int64(loc&(1<<32-1))
			f := x.files[ord]
			if !f.live || ferr != nil {
				return
			}
			if !loaded[ord] {
				deleted[ord], ferr = x.deletedOf(fs, f.path)
				loaded[ord] = true
				if ferr != nil {
					return
				}
			}
			bm := deleted[ord]
			if bm != nil && bm.Contains(uint64(pos)) {
				return
			}
			found++
			hits = append(hits, hit{ord, pos, int32(k)})
		})
		if ferr != nil {
			return nil, false, ferr
		}
		if found > 1 && !x.exact {
			ambiguous = append(ambiguous, int32(k))
		}
	}
	files := map[string]*FileHits{}
	add := func(path string, pos int64, key int32) {
		h := files[path]
		if h == nil {
			h = &FileHits{Path: path, Deletes: deleteIdentity(x.tasks[path])}
			files[path] = h
		}
		h.Positions = append(h.Positions, pos)
		h.KeyIndexes = append(h.KeyIndexes, key)
	}
	check := map[int32]bool{}
	for _, k := range ambiguous {
		check[k] = true
	}
	verify := map[string]bool{}
	for _, h := range hits {
		if check[h.key] {
			verify[x.files[h.ord].path] = true
			continue
		}
		add(x.files[h.ord].path, h.pos, h.key)
	}
	if len(ambiguous) > 0 {
		// A fingerprint shared by several live rows: read those files for the keys.
		sub := &keySet{codec: ks.codec, index: map[string]int32{}}
		for _, k := range ambiguous {
			sub.index[ks.enc[k]] = k
		}
		for _, p := range sortedKeys(verify) {
			h, err := scanFile(ctx, fs, x.tasks[p], sub)
			if err != nil {
				return nil, false, err
			}
			for i, pos := range h.Positions {
				add(p, pos, h.KeyIndexes[i])
			}
		}
	}
	res = &Resolution{SnapshotID: x.snapID, Keys: ks.keys, Scanned: read, tasks: map[string]table.FileScanTask{}}
	for _, p := range sortedKeys(files) {
		h := files[p]
		sortHits(h)
		res.Files = append(res.Files, *h)
		res.tasks[p] = x.tasks[p]
	}
	return res, true, nil
}

// warm brings the index up to tbl's snapshot in a new goroutine, unless another
// goroutine holds the index (it is being synced or used).
func (x *KeyIndex) warm(tbl *table.Table) {
	if !x.mu.TryLock() {
		return
	}
	go func() {
		defer x.mu.Unlock()
		// An error is left to the next resolution, which syncs again and reports it.
		if read, err := x.sync(context.Background(), tbl); err == nil {
			x.warmed = append(x.warmed, read...)
		}
	}()
}

// tasksFor returns the planned tasks of the data files of hits when the index
// follows snapshot snapID and holds them all.
func (x *KeyIndex) tasksFor(snapID int64, hits []FileHits) (map[string]table.FileScanTask, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tasks == nil || x.snapID != snapID || x.disabled {
		return nil, false
	}
	out := make(map[string]table.FileScanTask, len(hits))
	for _, h := range hits {
		t, ok := x.tasks[h.Path]
		if !ok {
			return nil, false
		}
		out[h.Path] = t
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
