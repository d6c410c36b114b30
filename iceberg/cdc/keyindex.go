package cdc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"golang.org/x/sync/errgroup"

	"github.com/icebeam/icebeam/iceberg/internal/keyrun"
	"github.com/icebeam/icebeam/iceberg/internal/pqspan"
)

// IndexEntryBytes is the memory one indexed row takes in a KeyIndex: a 64-bit key
// fingerprint and a 64-bit location (data file ordinal, row position).
const IndexEntryBytes = keyrun.EntryBytes

// KeyIndex maps the keys of a table's live rows to their data file and row
// position, so that resolving a window's keys costs lookups, not reads of every
// data file's key columns. Data files are immutable: the index, built once from the
// key columns of the live data files of a snapshot, follows the table by reading
// only the data files each later snapshot adds (the sink's own and other
// writers'), forgetting those it removes (a rewrite or compaction), and reading
// the deletion vectors of the files whose keys it reports, by the delete files that
// apply to them (their bitmaps are cached until those change).
//
// A data file's key columns are read when a resolution's keys may be in it: when
// its manifest bounds on the key columns hold one of the keys (keyRanges), or when
// Warm builds the whole index in the background. Until then the file is pending.
// A cold worker whose first windows touch a few key ranges of a table compacted
// in key order (write.executeGroup: files of disjoint key ranges) reads those
// files only.
//
// One index serves every shard of a table in a worker process (see indexFor): a
// data file's key columns are read once per process, whatever the number of
// shards. A restarted worker rebuilds it from the live data files on its first
// resolution. A batch pipeline's worker, which resolves one window, stops
// building it when one scan resolves the window's keys: see Expected.
//
// The index is partitioned by the hash that assigns keys to shards (Shard(key,
// parts), parts being num_shards when shards_per_partition does not restrict
// it, else 1): a key's partition is a function of the key alone, so any
// worker can resolve any key. Partitions are held in memory up to the budget
// (bytes / IndexEntryBytes entries); those past it are written to a local spill
// file as sorted runs with sparse fences in memory, where a lookup reads one 4
// KiB block per run. A cold build keeps the partitions that fit in memory; the
// partitions of keys the worker resolves (claimed, see want) then take the
// place of those it does not, which go to the spill file. Memory thus follows
// the shards a worker holds, a worker that is given another shard (Beam moved
// it) loads that partition from its spill file without reading the table
// again, and a table larger than the budget costs block reads per key instead
// of key-column reads of the table per window. (A cold build that wrote every
// partition to the spill file, to load back those resolved, cost a 50M-row
// streaming start 0.8 GB written and read again: about 1.5 s of its first
// window at a 1 GB budget.)
//
// Each indexed row takes IndexEntryBytes: the key's fingerprint and its location.
// Keys whose encoding fits 8 bytes (one integer, date, time or timestamp column, or
// several narrow ones) are their own fingerprint, so lookups are exact. Longer keys
// (strings, UUIDs, composites) are fingerprinted with a 64-bit hash whose top bits
// are replaced by the key's partition: a fingerprint matching more than one live
// row is checked against the data files (a real duplicate and a collision are told
// apart), and a key absent from the table matches one other live row of its
// partition with probability about rows/2^64 per lookup (5e-11 for a billion-row
// table), in which case that row would be deleted. Set the budget to 0 to resolve
// every key by reading the data files instead.
type KeyIndex struct {
	mu       sync.Mutex
	codec    *keyCodec
	exact    bool // encoded keys fit 8 bytes: the fingerprint is the key
	width    int  // bytes of an exact key's encoding
	parts    int  // partitions, by Shard(key, parts)
	partBits int  // bits of a partition number (in a hashed fingerprint's top bits)
	seed     maphash.Seed
	limit    int64 // entries held in memory
	disabled bool  // a data file too large for a location: not indexed

	snapID, seq int64
	files       []indexFile       // by ordinal, never renumbered (spilled runs hold ordinals)
	ordinal     map[string]uint32 // live files by path
	tasks       map[string]table.FileScanTask
	pending     map[string]table.FileScanTask // live files not read yet, by path
	part        []indexPart                   // by partition
	held, total int64                         // entries in memory, and in memory and spilled
	dead        int64                         // entries of files no longer live
	spill       *keyrun.SpillFile             // nil until a partition is spilled
	deleted     map[string]deletedRows
	lastUse     int64
	// warmed are the data files a warm-up (Resolver.Warm) read, warmedBytes their
	// key columns' size and warmedTime its time, reported with the next resolution's.
	warmed      []string
	warmedBytes int64
	warmedTime  time.Duration

	// halted stops a warm-up after the batch it is reading (see halt).
	halted atomic.Bool

	// fingerprint may be replaced by tests (collisions).
	fingerprint func(enc []byte) uint64
}

type indexEntry = keyrun.Entry

// indexPart is one partition of a KeyIndex: in memory (main and delta, sorted by
// fingerprint) or in the spill file (runs).
type indexPart struct {
	mem         bool
	claimed     bool // a resolution of the worker wanted it (see want)
	main, delta []indexEntry
	pend        [][]indexEntry // sorted runs added in memory, merged by mergePending
	runs        []keyrun.SpillRun
}

func (p *indexPart) entries() int64 {
	n := int64(len(p.main) + len(p.delta))
	for _, r := range p.pend {
		n += int64(len(r))
	}
	for _, r := range p.runs {
		n += int64(r.N)
	}
	return n
}

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

// indexes are the process's key indexes, by table UUID, key columns and
// partitions.
var indexes = struct {
	sync.Mutex
	m    map[string]*KeyIndex
	tick int64
}{m: map[string]*KeyIndex{}}

// indexFor returns the process's key index of tbl's keys (codec) in parts
// partitions, made on first use with a budget of limitBytes. When the indexes of
// all tables together hold more than the largest budget in memory, the least
// recently used others are dropped.
func indexFor(tbl *table.Table, codec *keyCodec, limitBytes int64, parts int) *KeyIndex {
	id := fmt.Sprintf("%s\x00parts:%d", tableKeyID(tbl, codec), parts)
	indexes.Lock()
	defer indexes.Unlock()
	indexes.tick++
	x := indexes.m[id]
	if x == nil {
		x = newKeyIndex(codec, limitBytes, parts)
		indexes.m[id] = x
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
		if o := indexes.m[k]; o != x && o.mu.TryLock() {
			total -= o.held
			o.reset() // closes its spill file
			o.mu.Unlock()
			delete(indexes.m, k)
		}
	}
	return x
}

// tableKeyID identifies tbl's keys (codec) in the process: the table's UUID and
// the key columns' names, ids and types.
func tableKeyID(tbl *table.Table, codec *keyCodec) string {
	var id strings.Builder
	id.WriteString(tbl.Metadata().TableUUID().String())
	for i, n := range codec.names {
		fmt.Fprintf(&id, "\x00%s:%d:%s", n, codec.ids[i], codec.types[i])
	}
	return id.String()
}

func newKeyIndex(codec *keyCodec, limitBytes int64, parts int) *KeyIndex {
	x := &KeyIndex{codec: codec, seed: maphash.MakeSeed(), limit: limitBytes / IndexEntryBytes, parts: max(parts, 1)}
	x.partBits = bits.Len(uint(x.parts - 1))
	x.exact = true
	for _, t := range codec.types {
		switch t.(type) {
		case ibg.BooleanType:
			x.width++
		case ibg.DateType:
			x.width += 4
		case ibg.Int32Type, ibg.Int64Type, ibg.TimeType, ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType:
			x.width += 8
		default:
			x.exact = false
		}
	}
	x.exact = x.exact && x.width <= 8
	x.fingerprint = x.hash
	x.reset()
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

// fp is the indexed fingerprint of an encoded key: fingerprint, with the key's
// partition in the top bits when the key is hashed.
func (x *KeyIndex) fp(enc []byte) uint64 {
	h := x.fingerprint(enc)
	if x.exact || x.parts == 1 {
		return h
	}
	return uint64(Shard(enc, x.parts))<<(64-x.partBits) | h>>x.partBits
}

// partOf is the partition of an entry's fingerprint fp.
func (x *KeyIndex) partOf(fp uint64) int {
	switch {
	case x.parts == 1:
		return 0
	case x.exact: // Shard of the key's encoding, its first width bytes
		return int(hashTop(fp, x.width) % uint64(x.parts))
	}
	return int(fp >> (64 - x.partBits))
}

// sizeHint is the number of entries held in memory, read without the index's
// lock (an estimate for the process budget).
func (x *KeyIndex) sizeHint() int64 {
	if !x.mu.TryLock() {
		return x.limit / 2
	}
	defer x.mu.Unlock()
	return x.held
}

// Entries returns the number of rows indexed, in memory and spilled (including
// rows of files no longer live, until they are compacted away).
func (x *KeyIndex) Entries() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return int(x.total)
}

// Bytes returns the memory the index holds: its entry arrays (by capacity), the
// fences of its spilled runs and its table of data files.
func (x *KeyIndex) Bytes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var n int64
	for _, p := range x.part {
		n += int64(cap(p.main)+cap(p.delta)) * IndexEntryBytes
		for _, r := range p.runs {
			n += int64(cap(r.Fences)) * 8
		}
	}
	for _, f := range x.files {
		n += int64(len(f.path)) + 48
	}
	return n
}

// Held returns the number of rows indexed in memory.
func (x *KeyIndex) Held() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.held
}

// sync brings the index to tbl's current snapshot, unless the index already
// follows a newer snapshot of which tbl, loaded earlier, does not know (another
// shard's fresher load): then the index answers for its own snapshot. Files the
// snapshot added become pending; none is read (see load).
func (x *KeyIndex) sync(ctx context.Context, tbl *table.Table) error {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		x.reset()
		x.tasks = map[string]table.FileScanTask{}
		return nil
	}
	if snap.SnapshotID == x.snapID && x.tasks != nil {
		return nil
	}
	if x.tasks != nil && snap.SequenceNumber < x.seq && tbl.Metadata().SnapshotByID(x.snapID) == nil {
		return nil // tbl is older than the index
	}
	tasks, err := tbl.Scan(table.WithSelectedFields(x.codec.names...)).PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	byPath := make(map[string]table.FileScanTask, len(tasks))
	big := false
	for _, t := range tasks {
		byPath[t.File.FilePath()] = t
		big = big || t.File.Count() >= 1<<32 // positions do not fit the location
	}
	if big || x.disabled {
		x.reset()
		x.disabled = big
	}
	x.snapID, x.seq, x.tasks = snap.SnapshotID, snap.SequenceNumber, byPath
	if big {
		return nil
	}
	for path, o := range x.ordinal {
		if _, ok := byPath[path]; !ok {
			x.files[o].live = false
			x.files[o].path = "" // its entries are skipped, then compacted away
			x.dead += x.files[o].entries
			delete(x.ordinal, path)
			delete(x.deleted, path)
		}
	}
	for path := range x.pending {
		if _, ok := byPath[path]; !ok {
			delete(x.pending, path)
		}
	}
	for p, t := range byPath {
		if _, ok := x.ordinal[p]; !ok {
			x.pending[p] = t
		}
	}
	if x.dead > x.total/4 {
		if err := x.compact(); err != nil {
			x.reset()
			return err
		}
	}
	return nil
}

// load reads pending files: those whose bounds may hold one of ks's keys (see
// keyRanges), or all when ks is nil, the first of them up to about maxRows rows
// when maxRows > 0. It returns the paths read and their key columns' stored size.
func (x *KeyIndex) load(ctx context.Context, tbl *table.Table, ks *keySet, maxRows int64) ([]string, int64, error) {
	var ranges *keyRanges
	if ks != nil {
		ranges = newKeyRanges(ks)
	}
	var read []table.FileScanTask
	var rows int64
	for _, p := range sortedPaths(x.pending) {
		if maxRows > 0 && len(read) > 0 && rows+x.pending[p].File.Count() > maxRows {
			break
		}
		if t := x.pending[p]; ranges == nil || ranges.mayHold(t.File) {
			read = append(read, t)
			rows += t.File.Count()
		}
	}
	if len(read) == 0 {
		return nil, 0, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, 0, err
	}
	n, err := x.add(ctx, fs, read)
	if err != nil {
		x.reset() // partly added: start over next time
		return nil, n, err
	}
	paths := make([]string, len(read))
	for i, t := range read {
		paths[i] = t.File.FilePath()
		delete(x.pending, paths[i])
	}
	return paths, n, nil
}

// reset empties the index (and drops its spill file). Every partition starts in
// memory, unclaimed (see want).
func (x *KeyIndex) reset() {
	x.disabled = false
	x.snapID, x.seq, x.tasks = 0, 0, nil
	x.files, x.ordinal, x.deleted = nil, map[string]uint32{}, map[string]deletedRows{}
	x.pending = map[string]table.FileScanTask{}
	x.part = make([]indexPart, x.parts)
	for q := range x.part {
		x.part[q].mem = true
	}
	x.held, x.total, x.dead = 0, 0, 0
	x.spill.Close()
	x.spill = nil
}

// minIndexBatch is the fewest rows add reads before routing their entries.
var minIndexBatch int64 = 1 << 20

// add reads the key columns of the data files of tasks, in parallel, and indexes
// their live rows. Files are read in batches of about half the budget's rows (at
// least a million), whose entries go to their partitions while the next batch is
// read; a file of more rows than that is read alone, its entries going to their
// partitions a batch at a time (addLarge). Beyond the budget, about two batches
// and their routed copies are in memory, whatever the table's size: with batches
// of the whole budget, a 50M-row streaming start peaked at 1.36-1.60 GB RSS for a
// 256 MB budget, with half of it at 0.81-0.84 GB, the build as fast (a quarter
// made it 2x slower: more spilled runs to merge). It returns the key columns'
// stored size.
func (x *KeyIndex) add(ctx context.Context, fs iceio.IO, tasks []table.FileScanTask) (int64, error) {
	if uint64(len(x.files))+uint64(len(tasks)) >= 1<<32-1 {
		x.reset() // ordinals exhausted (never in practice): start over
	}
	batch := max(x.limit/2, minIndexBatch)
	var read int64
	var reading chan *batchRead // the batch being read, added after the next starts
	settle := func() error {
		if reading == nil {
			return nil
		}
		b := <-reading
		reading = nil
		read += b.read
		if b.err != nil {
			return b.err
		}
		return x.addRead(b)
	}
	next := uint32(len(x.files)) // the ordinal of the next file read
	for lo := 0; lo < len(tasks); {
		hi, rows := lo, int64(0)
		for hi < len(tasks) && (hi == lo || rows+tasks[hi].File.Count() <= batch) {
			rows += tasks[hi].File.Count()
			hi++
		}
		if rows > batch {
			if err := settle(); err != nil {
				return read, err
			}
			n, err := x.addLarge(ctx, fs, tasks[lo], int(batch))
			read += n
			if err != nil {
				return read, err
			}
			next++
			lo = hi
			continue
		}
		c := make(chan *batchRead, 1)
		go func(tasks []table.FileScanTask, base uint32) { c <- x.readBatch(ctx, fs, tasks, base) }(tasks[lo:hi], next)
		next += uint32(hi - lo)
		if err := settle(); err != nil {
			<-c // the next batch's goroutines end before the caller resets the index
			return read, err
		}
		reading = c
		lo = hi
	}
	if err := settle(); err != nil {
		return read, err
	}
	x.mergePending()
	return read, nil
}

// batchRead is a batch of data files read by readBatch, to be added by addRead.
type batchRead struct {
	tasks  []table.FileScanTask
	base   uint32             // the first file's ordinal
	routed [][][][]indexEntry // by file: route's result (by partition, sorted runs)
	read   int64              // key columns' stored size
	err    error
}

// readBatch reads the files of tasks, whose ordinals start at base, in parallel:
// each file's entries are read, sorted (a file written in key order is checked,
// not sorted) and routed to their partitions by one goroutine. It reads only the
// index's fixed fields (codec, fingerprint, partitions), so it may run while
// another batch is added.
func (x *KeyIndex) readBatch(ctx context.Context, fs iceio.IO, tasks []table.FileScanTask, base uint32) *batchRead {
	b := &batchRead{tasks: tasks, base: base, routed: make([][][][]indexEntry, len(tasks))}
	reads := make([]int64, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	par := spansPerFile(tasks) // a file of a large share of the rows is split
	for i, t := range tasks {
		g.Go(func() error {
			es, err := x.readFile(gctx, fs, t, uint64(base)+uint64(i), &reads[i], par[i], 0, nil)
			if err != nil {
				return err
			}
			keyrun.Sort(es)
			b.routed[i] = x.route([][]indexEntry{es})
			return nil
		})
	}
	b.err = g.Wait()
	for _, n := range reads {
		b.read += n
	}
	return b
}

// addRead registers the files of b, which must be the next ordinals, and adds
// their entries to their partitions.
func (x *KeyIndex) addRead(b *batchRead) error {
	if b.base != uint32(len(x.files)) {
		return fmt.Errorf("key index: a batch of files read as ordinals from %d added at %d", b.base, len(x.files))
	}
	for i, t := range b.tasks {
		var n int64
		for _, runs := range b.routed[i] {
			for _, r := range runs {
				n += int64(len(r))
			}
		}
		x.ordinal[t.File.FilePath()] = b.base + uint32(i)
		x.files = append(x.files, indexFile{path: t.File.FilePath(), live: true, entries: n})
	}
	for q := range x.parts {
		var runs [][]indexEntry
		for _, f := range b.routed {
			runs = append(runs, f[q]...)
		}
		if err := x.addRuns(q, runs); err != nil {
			return err
		}
	}
	return nil
}

// addLarge indexes the live rows of one data file of more than chunk rows: its
// entries are sorted and go to their partitions chunk rows at a time (each chunk a
// sorted run), so that a file of 50M rows holds about chunk entries in memory
// beyond the budget, not 50M. On an error the index holds part of the file: the
// caller resets it (see load).
func (x *KeyIndex) addLarge(ctx context.Context, fs iceio.IO, t table.FileScanTask, chunk int) (int64, error) {
	ord := uint32(len(x.files))
	x.ordinal[t.File.FilePath()] = ord
	x.files = append(x.files, indexFile{path: t.File.FilePath(), live: true})
	var read int64
	var mu sync.Mutex
	// flush runs on the goroutines reading the file's spans: they sort and route
	// their chunks at once, adding them one at a time. A chunk routed to several
	// partitions is copied (scatter): its array is read into again.
	flush := func(es []indexEntry) ([]indexEntry, error) {
		keyrun.Sort(es)
		routed := x.route([][]indexEntry{es})
		mu.Lock()
		defer mu.Unlock()
		x.files[ord].entries += int64(len(es))
		for q, runs := range routed {
			if err := x.addRuns(q, runs); err != nil {
				return nil, err
			}
		}
		if x.parts > 1 && x.exact {
			return es[:0], nil
		}
		return nil, nil
	}
	rest, err := x.readFile(ctx, fs, t, uint64(ord), &read, runtime.GOMAXPROCS(0), chunk, flush)
	if err == nil {
		_, err = flush(rest)
	}
	return read, err
}

// route splits sorted runs by partition: the result's element q holds the
// sorted runs of partition q.
func (x *KeyIndex) route(runs [][]indexEntry) [][][]indexEntry {
	out := make([][][]indexEntry, x.parts)
	if x.parts == 1 {
		out[0] = runs
		return out
	}
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		if !x.exact { // the partition is in the top bits: contiguous slices
			for lo := 0; lo < len(r); {
				q := x.partOf(r[lo].FP)
				hi := lo + sort.Search(len(r)-lo, func(i int) bool { return x.partOf(r[lo+i].FP) > q })
				out[q] = append(out[q], r[lo:hi])
				lo = hi
			}
			continue
		}
		// Exact keys: a stable counting scatter keeps each partition's entries sorted.
		for q, es := range x.scatter(r) {
			if len(es) > 0 {
				out[q] = append(out[q], es)
			}
		}
	}
	return out
}

// scatter copies the entries of r (exact keys) into an array per partition,
// keeping their order within each (an array each, so that a partition's entries
// are freed when it is merged or spilled, whatever the others hold). The
// partitions are hashed (the costly part: a hash and a division per entry) and
// the entries copied by GOMAXPROCS goroutines, each over a slice of r, writing to
// disjoint places of the arrays.
func (x *KeyIndex) scatter(r []indexEntry) [][]indexEntry {
	workers := 1
	if len(r) >= 1<<16 {
		workers = runtime.GOMAXPROCS(0)
	}
	step := (len(r) + workers - 1) / workers
	qs := make([]uint32, len(r))
	counts := make([][]int, workers) // by worker, by partition
	var wg sync.WaitGroup
	for w := range workers {
		counts[w] = make([]int, x.parts)
		wg.Go(func() {
			lo, hi := min(w*step, len(r)), min((w+1)*step, len(r))
			for i := lo; i < hi; i++ {
				q := x.partOf(r[i].FP)
				qs[i] = uint32(q)
				counts[w][q]++
			}
		})
	}
	wg.Wait()
	// Worker w's entries of partition q go after those of workers before w in q.
	out := make([][]indexEntry, x.parts)
	next := make([][]int, workers)
	for w := range next {
		next[w] = make([]int, x.parts)
	}
	for q := range x.parts {
		at := 0
		for w := range workers {
			next[w][q] = at
			at += counts[w][q]
		}
		out[q] = make([]indexEntry, at)
	}
	for w := range workers {
		wg.Go(func() {
			lo, hi := min(w*step, len(r)), min((w+1)*step, len(r))
			nw := next[w]
			for i := lo; i < hi; i++ {
				q := qs[i]
				out[q][nw[q]] = r[i]
				nw[q]++
			}
		})
	}
	wg.Wait()
	return out
}

// addRuns adds sorted runs of entries to partition q: to its arrays when it is in
// memory and stays within the budget, else to its spilled runs.
func (x *KeyIndex) addRuns(q int, runs [][]indexEntry) error {
	var n int64
	for _, r := range runs {
		n += int64(len(r))
	}
	if n == 0 {
		return nil
	}
	x.total += n
	p := &x.part[q]
	if p.mem && x.held+n > x.limit && p.claimed {
		if err := x.makeRoom(n); err != nil { // unclaimed partitions give way
			return err
		}
	}
	if p.mem && x.held+n > x.limit {
		// Past the budget: the partition goes to disk with its new entries.
		if err := x.evict(q); err != nil {
			return err
		}
	}
	if p.mem {
		x.held += n
		for _, r := range runs {
			if len(r) > 0 {
				p.pend = append(p.pend, r)
			}
		}
		return nil
	}
	return x.spillRun(q, keyrun.MergeRuns(runs))
}

// mergePending merges the runs added to the partitions in memory (pend) into their
// arrays, the partitions in parallel: a file's chunks, added as they are read,
// are merged once, not once per chunk (a 50M-row file at a 1 GB budget:
// merging chunk by chunk was a fifth of its build).
func (x *KeyIndex) mergePending() {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for q := range x.part {
		if len(x.part[q].pend) > 0 {
			g.Go(func() error { x.part[q].mergePending(); return nil })
		}
	}
	_ = g.Wait() // never an error
}

// mergePending merges p's pending runs into its arrays.
func (p *indexPart) mergePending() {
	if len(p.pend) == 0 {
		return
	}
	if len(p.main) == 0 && len(p.delta) == 0 {
		p.main, p.delta = keyrun.ColdMerge(p.pend) // nothing to merge with
	} else {
		p.delta = keyrun.Merge(p.delta, keyrun.MergeRuns(p.pend), nil)
		if len(p.delta) > len(p.main)/4 {
			p.main, p.delta = keyrun.Merge(p.main, p.delta, nil), nil
		}
	}
	p.pend = nil
}

// spillRun writes es as a new run of partition q, merging its shortest runs when
// it has too many.
func (x *KeyIndex) spillRun(q int, es []indexEntry) error {
	if x.spill == nil {
		var err error
		if x.spill, err = keyrun.NewSpillFile(); err != nil {
			return err
		}
	}
	p := &x.part[q]
	r, err := x.spill.Write(es)
	if err != nil {
		return err
	}
	p.runs = append(p.runs, r)
	for len(p.runs) > keyrun.MaxRuns {
		slices.SortFunc(p.runs, func(a, b keyrun.SpillRun) int { return cmp.Compare(b.N, a.N) })
		i := keyrun.TieredPair(p.runs)
		two := p.runs[i : i+2]
		es, err := x.spill.ReadAll(two, nil)
		if err != nil {
			return err
		}
		x.spill.Drop(two)
		if r, err = x.spill.Write(es); err != nil {
			return err
		}
		p.runs = append(slices.Delete(p.runs, i, i+2), r)
	}
	return x.rewriteSpill()
}

// rewriteSpill copies the live runs to a new spill file when most of the file is
// space of dropped runs.
func (x *KeyIndex) rewriteSpill() error {
	if x.spill == nil || x.spill.Size < 64<<20 || x.spill.Live*2 > x.spill.Size {
		return nil
	}
	fresh, err := keyrun.NewSpillFile()
	if err != nil {
		return err
	}
	for q := range x.part {
		for i, r := range x.part[q].runs {
			es, err := x.spill.Read(make([]indexEntry, 0, r.N), r, 0, r.N)
			if err == nil {
				x.part[q].runs[i], err = fresh.Write(es)
			}
			if err != nil {
				fresh.Close()
				return err
			}
		}
	}
	x.spill.Close()
	x.spill = fresh
	return nil
}

// evict writes partition q, in memory, to the spill file as one run.
func (x *KeyIndex) evict(q int) error {
	p := &x.part[q]
	p.mergePending()
	es := keyrun.Merge(p.main, p.delta, nil)
	x.held -= int64(len(p.main) + len(p.delta))
	p.mem, p.main, p.delta = false, nil, nil
	if len(es) == 0 {
		return nil
	}
	return x.spillRun(q, es)
}

// makeRoom evicts unclaimed partitions held in memory, the largest first, until n
// more entries fit the budget or none is left.
func (x *KeyIndex) makeRoom(n int64) error {
	for x.held+n > x.limit {
		v := -1
		for q := range x.part {
			if p := &x.part[q]; p.mem && !p.claimed && p.entries() > 0 && (v < 0 || p.entries() > x.part[v].entries()) {
				v = q
			}
		}
		if v < 0 {
			return nil
		}
		if err := x.evict(v); err != nil {
			return err
		}
	}
	return nil
}

// want claims partition q for the worker's resolutions and brings it into memory
// when it fits the budget, unclaimed partitions giving way (makeRoom): from its
// spilled runs, or, when nothing of it is indexed yet, by marking it so that the
// entries the index reads next stay in memory.
func (x *KeyIndex) want(q int) error {
	p := &x.part[q]
	p.claimed = true
	if p.mem {
		return nil
	}
	n := p.entries()
	if x.held+n > x.limit {
		if err := x.makeRoom(n); err != nil {
			return err
		}
	}
	if x.held+n > x.limit {
		return nil // looked up on disk
	}
	if len(p.runs) > 0 {
		es, err := x.spill.ReadAll(p.runs, nil)
		if err != nil {
			return err
		}
		x.spill.Drop(p.runs)
		p.runs, p.main = nil, es
	}
	p.mem = true
	x.held += n
	return nil
}

// live accepts the entries of live files.
func (x *KeyIndex) live(e *indexEntry) bool { return x.files[e.Loc>>32].live }

// compact drops the entries of files no longer live from every partition.
func (x *KeyIndex) compact() error {
	x.held, x.total = 0, 0
	for q := range x.part {
		p := &x.part[q]
		if p.mem {
			p.main, p.delta = keyrun.Merge(p.main, p.delta, x.live), nil
			x.held += int64(len(p.main))
			x.total += int64(len(p.main))
			continue
		}
		if len(p.runs) == 0 {
			continue
		}
		es, err := x.spill.ReadAll(p.runs, x.live)
		if err != nil {
			return err
		}
		x.spill.Drop(p.runs)
		p.runs = nil
		x.total += int64(len(es))
		if len(es) > 0 {
			r, err := x.spill.Write(es)
			if err != nil {
				return err
			}
			p.runs = []keyrun.SpillRun{r}
		}
	}
	x.dead = 0
	return x.rewriteSpill()
}

// readFile returns the index entries of the live rows of task's data file, whose
// ordinal is ord, adding the key columns' stored size to *read. A single key
// column is read by up to par goroutines (see readInt64Key); the entries are in
// no particular order.
//
// With flush, readFile hands flush its entries each time they reach about chunk
// (after a page or batch of rows) and returns the rest; flush may keep the slice,
// or return it (emptied) to be filled again. Flush may be called by several
// goroutines at once (one a span).
func (x *KeyIndex) readFile(ctx context.Context, fs iceio.IO, t table.FileScanTask, ord uint64, read *int64, par, chunk int, flush func([]indexEntry) ([]indexEntry, error)) ([]indexEntry, error) {
	path := t.File.FilePath()
	deleted, err := deletedPositions(fs, t)
	if err != nil {
		return nil, err
	}
	par = max(par, 1)
	// The entries of each span of a direct read: its share of the file's rows, or
	// with flush of chunk entries.
	size := max(0, t.File.Count()) / int64(par)
	if flush != nil {
		chunk = max(chunk/par, 1)
		size = min(size+1, int64(chunk))
	}
	outs := make([][]indexEntry, par)
	for i := range outs {
		outs[i] = make([]indexEntry, 0, size)
	}
	var flushed atomic.Bool
	// room makes room for n more entries of a span: with flush, a full buffer is
	// flushed and replaced rather than grown (growing copied each 256 MB chunk once
	// more: a quarter of a 50M-row build's time).
	room := func(span, n int) error {
		if flush == nil || len(outs[span])+n <= cap(outs[span]) || len(outs[span]) == 0 {
			return nil
		}
		flushed.Store(true)
		spare, err := flush(outs[span])
		if outs[span] = spare; cap(spare) < int(size) {
			outs[span] = make([]indexEntry, 0, size)
		}
		return err
	}
	rest := func(err error) ([]indexEntry, error) {
		if len(outs) == 1 {
			return outs[0], err
		}
		return slices.Concat(outs...), err
	}
	// live reports whether the row at pos is not deleted: one bit a row, set where
	// the row is kept, instead of a bitmap lookup per row.
	live := func(int64) bool { return true }
	if deleted != nil {
		keep := deleted.KeepMaskBytes(t.File.Count())
		live = func(pos int64) bool { return pos >= int64(len(keep))*8 || keep[pos>>3]&(1<<(pos&7)) != 0 }
	}
	// One long column (its own fingerprint), or one string or binary column: read
	// straight from the pages, unless the column is stored otherwise.
	err = pqspan.ErrNotDirect
	if _, long := x.codec.types[0].(ibg.Int64Type); long && len(x.codec.types) == 1 && x.exact {
		err = readInt64Key(ctx, fs, path, x.codec, read, par, nil, func(span int, vals []int64, defs []int16, maxDef int16, base int64) error {
			if err := room(span, len(vals)); err != nil {
				return err
			}
			out := outs[span]
			if defs == nil {
				for j, v := range vals {
					if pos := base + int64(j); live(pos) {
						out = append(out, indexEntry{FP: uint64(v) ^ 1<<63, Loc: ord<<32 | uint64(pos)})
					}
				}
			} else {
				k := 0
				for j, d := range defs {
					if d != maxDef {
						continue // a null key: not indexed
					}
					if pos := base + int64(j); live(pos) {
						out = append(out, indexEntry{FP: uint64(vals[k]) ^ 1<<63, Loc: ord<<32 | uint64(pos)})
					}
					k++
				}
			}
			outs[span] = out
			return nil
		})
	} else if len(x.codec.types) == 1 && isBytesType(x.codec.types[0]) {
		bufs := make([][]byte, par)
		err = readByteArrayKey(ctx, fs, path, x.codec, read, par, nil, func(span int, vals []parquet.ByteArray, defs []int16, maxDef int16, base int64) error {
			if err := room(span, len(vals)); err != nil {
				return err
			}
			pqspan.EachValue(vals, defs, maxDef, base, func(v parquet.ByteArray, pos int64) {
				if live(pos) {
					bufs[span] = appendEscaped(bufs[span][:0], v)
					outs[span] = append(outs[span], indexEntry{FP: x.fp(bufs[span]), Loc: ord<<32 | uint64(pos)})
				}
			})
			return nil
		})
	}
	if !errors.Is(err, pqspan.ErrNotDirect) {
		return rest(err)
	}
	if flushed.Load() { // never: the column's type is checked before its first page
		return nil, fmt.Errorf("%s: key column %q not read directly after part of it was", path, x.codec.names[0])
	}
	out := outs[0][:0]
	emitOne := func() error {
		if flush == nil || len(out) < chunk {
			return nil
		}
		spare, err := flush(out)
		if out = spare; cap(spare) < int(size) {
			out = make([]indexEntry, 0, size)
		}
		return err
	}
	err = readKeyColumns(ctx, fs, path, x.codec, read, func(cols []arrow.Array, encs []arrowKeyFn, base int64) error {
		if a, ok := cols[0].(*array.Int64); ok && len(cols) == 1 && x.exact {
			nulls := a.NullN() > 0
			for j, v := range a.Int64Values() {
				pos := base + int64(j)
				if (!nulls || a.IsValid(j)) && (deleted == nil || live(pos)) {
					out = append(out, indexEntry{FP: uint64(v) ^ 1<<63, Loc: ord<<32 | uint64(pos)})
				}
			}
			return emitOne()
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
			out = append(out, indexEntry{FP: x.fp(buf), Loc: ord<<32 | uint64(pos)})
		}
		return emitOne()
	})
	return out, err
}

// lookups is the state of one resolution's lookups: per partition, where the last
// one ended in each in-memory array and spilled run (probes come in ascending
// fingerprint order, see resolve).
type lookups struct {
	mem  [][2]int
	runs [][]keyrun.RunCursor
	read int64 // spilled bytes read
}

// find calls fn with the location of each entry whose fingerprint is fp: in its
// partition's arrays, galloping forward from where the last lookup ended (so a
// batch of lookups walks each array once instead of binary searching it from the
// top each time: cache misses in a table's worth of entries), or in its spilled
// runs, one block each.
func (x *KeyIndex) find(l *lookups, fp uint64, fn func(loc uint64)) error {
	q := x.partOf(fp)
	p := &x.part[q]
	if p.mem {
		cur := &l.mem[q]
		for a, es := range [2][]indexEntry{p.main, p.delta} {
			i := keyrun.Gallop(es, cur[a], fp)
			cur[a] = i
			for ; i < len(es) && es[i].FP == fp; i++ {
				fn(es[i].Loc)
			}
		}
		return nil
	}
	if len(l.runs[q]) != len(p.runs) {
		l.runs[q] = make([]keyrun.RunCursor, len(p.runs))
	}
	for i := range p.runs {
		n, err := x.spill.Find(&p.runs[i], &l.runs[q][i], fp, fn)
		l.read += n
		if err != nil {
			return err
		}
	}
	return nil
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
// returns ok false when the table cannot be indexed. With load, the partitions of
// the keys come into memory as the budget allows (a shard's resolution); without,
// spilled partitions are looked up where they are (the committer's refresh).
func (x *KeyIndex) resolve(ctx context.Context, tbl *table.Table, ks *keySet, load bool) (res *Resolution, ok bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// The keys are looked up in fingerprint order (see find).
	type probe struct {
		fp uint64
		k  int32
	}
	probes := make([]probe, len(ks.keys))
	var enc []byte
	for k := range ks.keys {
		enc = append(enc[:0], ks.enc[k]...)
		probes[k] = probe{x.fp(enc), int32(k)}
	}
	slices.SortFunc(probes, func(a, b probe) int { return cmp.Or(cmp.Compare(a.fp, b.fp), cmp.Compare(a.k, b.k)) })
	start := time.Now()
	if err := x.sync(ctx, tbl); err != nil {
		return nil, false, err
	}
	if x.disabled {
		return nil, false, nil
	}
	if load {
		// Partitions wanted before the load keep the entries it reads in memory.
		for i, p := range probes {
			if q := x.partOf(p.fp); i == 0 || q != x.partOf(probes[i-1].fp) {
				if err := x.want(q); err != nil {
					return nil, false, err
				}
			}
		}
	}
	read, readBytes, err := x.load(ctx, tbl, ks, 0)
	if err != nil {
		return nil, false, err
	}
	built := time.Since(start) + x.warmedTime
	if len(x.warmed) > 0 {
		read = slices.Concat(x.warmed, read)
		readBytes += x.warmedBytes
	}
	x.warmed, x.warmedBytes, x.warmedTime = nil, 0, 0
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
	l := &lookups{mem: make([][2]int, x.parts), runs: make([][]keyrun.RunCursor, x.parts)}
	for _, p := range probes {
		k := p.k
		found := 0
		var ferr error
		err := x.find(l, p.fp, func(loc uint64) {
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
		if ferr = cmp.Or(err, ferr); ferr != nil {
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
			h, err := scanFile(ctx, fs, x.tasks[p], sub, &readBytes, runtime.GOMAXPROCS(0))
			if err != nil {
				return nil, false, err
			}
			for i, pos := range h.Positions {
				add(p, pos, h.KeyIndexes[i])
			}
		}
	}
	res = &Resolution{SnapshotID: x.snapID, Keys: ks.keys, Scanned: read, FilesRead: len(read), KeyBytes: readBytes, SpillBytes: l.read,
		IndexTime: built, tasks: map[string]table.FileScanTask{}}
	for _, p := range sortedKeys(files) {
		h := files[p]
		sortHits(h)
		res.Files = append(res.Files, *h)
		res.tasks[p] = x.tasks[p]
	}
	return res, true, nil
}

// warmBatchRows is about the number of rows a warm-up reads before it lets a
// waiting resolution use the index (which then reads the files of its own keys
// first).
var warmBatchRows int64 = 1 << 20 // a variable for tests

// warm brings the index up to tbl's snapshot in a new goroutine, unless another
// goroutine holds the index (it is being synced or used): it reads every pending
// file, warmBatchRows rows at a time, releasing the index between batches.
func (x *KeyIndex) warm(tbl *table.Table) {
	if !x.mu.TryLock() {
		return
	}
	x.halted.Store(false)
	go func() {
		// An error is left to the next resolution, which syncs again and reports it.
		ctx := context.Background()
		start := time.Now()
		if err := x.sync(ctx, tbl); err != nil || x.disabled {
			x.mu.Unlock()
			return
		}
		for {
			read, n, err := x.load(ctx, tbl, nil, warmBatchRows)
			x.warmed = append(x.warmed, read...)
			x.warmedBytes += n
			x.warmedTime += time.Since(start)
			done := err != nil || len(x.pending) == 0 || x.halted.Load()
			x.mu.Unlock()
			if done {
				return
			}
			x.mu.Lock()
			start = time.Now()
		}
	}()
}

// halt stops a warm-up after the batch it is reading, leaving the files it has
// not read pending (a later resolution reads them).
func (x *KeyIndex) halt() { x.halted.Store(true) }

// tasksFor returns the planned tasks of the data files of hits when the index
// follows snapshot snapID and holds them all.
func (x *KeyIndex) tasksFor(snapID int64, hits []FileHits) (map[string]table.FileScanTask, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tasks == nil || x.snapID != snapID || x.disabled {
		return nil, false
	}
	return tasksOf(x.tasks, hits)
}

// tasksOf returns the tasks of the data files of hits, false when one is not in
// tasks.
func tasksOf(tasks map[string]table.FileScanTask, hits []FileHits) (map[string]table.FileScanTask, bool) {
	out := make(map[string]table.FileScanTask, len(hits))
	for _, h := range hits {
		t, ok := tasks[h.Path]
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
