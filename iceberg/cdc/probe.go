package cdc

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

// ExpectedKeyBytes is the memory an expected key is counted for (its values,
// encoding and lookup entry) against the key index budget.
const ExpectedKeyBytes = 128

// Expected are the keys a worker's shards are about to resolve against a table
// at one snapshot: a batch pipeline's one window, whose changes the worker has
// parsed. A cold worker builds its key index from every key of the table
// (KeyIndex) to resolve the next windows cheaply, but a batch pipeline has no
// next window: when every key a shard resolves is expected, the first
// resolution reads the key columns of the data files that may hold one of them
// (by their bounds, see keyRanges) once, for all the expected keys, and each
// shard's resolution is then a lookup in what that one scan found. Building the
// index of a 50M-row table costs sorting, partitioning and spilling 50M entries;
// the scan only probes them against the expected keys.
//
// The scan stops a warm-up of the key index (Resolver.Warm, started by the
// parse stage for the workers whose shards' keys another worker parsed). Shards
// whose keys are not all expected (parsed by another worker, or a window
// resolved at another snapshot) resolve with the key index as before, and the
// scan's result serves resolutions at the snapshot it read only. The keys are
// held up to the budget of the key index (ExpectedKeyBytes each), counting the
// keys expected in every table of the process; past it the key index resolves
// them (Add reports it).
type Expected struct {
	mu     sync.Mutex
	limit  int
	ks     *keySet // the expected keys (single is set by the scan; order unused)
	over   bool    // more keys than the limit: the key index resolves them
	probed bool    // the scan ran, at snapID (-1: none, over): Add starts a new set
	snapID int64

	// The scan's result: the live positions of the expected keys.
	hits    []FileHits // KeyIndexes index ks.keys
	scanned []string
	tasks   map[string]table.FileScanTask
	read    int64
	took    time.Duration
}

// expectations are the process's expected keys, by table and key columns, and
// their number across tables: a set goes past its limit when the keys expected
// in all tables reach it.
var expectations = struct {
	sync.Mutex
	m    map[string]*Expected
	keys atomic.Int64
}{m: map[string]*Expected{}}

// Expect returns the worker's expected keys of tbl for r's key columns, made on
// first use. It is nil without a key index budget (every resolution reads the
// candidate data files then).
func (r Resolver) Expect(tbl *table.Table) (*Expected, error) {
	if r.IndexBytes <= 0 {
		return nil, nil
	}
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		return nil, err
	}
	return expectedFor(tbl, codec, int(min(r.IndexBytes/ExpectedKeyBytes, 1<<31-1)), true), nil
}

// expectedFor returns the process's Expected of tbl's keys (codec), made with
// limit keys when create is set.
func expectedFor(tbl *table.Table, codec *keyCodec, limit int, create bool) *Expected {
	id := tableKeyID(tbl, codec)
	expectations.Lock()
	defer expectations.Unlock()
	e := expectations.m[id]
	if e == nil && create {
		e = &Expected{limit: limit}
		e.restart(codec)
		expectations.m[id] = e
	}
	return e
}

func (e *Expected) restart(codec *keyCodec) {
	if e.ks != nil {
		expectations.keys.Add(-int64(len(e.ks.enc)))
	}
	e.ks = &keySet{codec: codec, index: map[string]int32{}}
	e.over, e.probed, e.snapID = false, false, 0
	e.hits, e.scanned, e.tasks, e.read, e.took = nil, nil, nil, 0, 0
}

// KeyBatch holds encoded keys (Parser.AppendKey) for one Expected.Add: a parse
// stage collects the keys of many rows and adds them under one lock.
type KeyBatch struct {
	buf  []byte
	ends []int
}

// Append adds the encoded key enc (copied).
func (b *KeyBatch) Append(enc []byte) {
	b.buf = append(b.buf, enc...)
	b.ends = append(b.ends, len(b.buf))
}

// Len is the number of keys in b.
func (b *KeyBatch) Len() int { return len(b.ends) }

// Reset empties b, keeping its memory.
func (b *KeyBatch) Reset() { b.buf, b.ends = b.buf[:0], b.ends[:0] }

// Add expects the keys of b, encoded as Parser.AppendKey encodes them. Once a
// scan has served resolutions, the next Add starts a new set (the next batch run
// of a process). It returns true when the keys have just gone past the limit:
// from then on the worker's key index resolves them, as without expected keys.
// The keys' values are decoded when the scan needs them.
func (e *Expected) Add(b *KeyBatch) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.probed {
		e.restart(e.ks.codec)
	}
	if e.over {
		return false
	}
	start := 0
	for _, end := range b.ends {
		enc := b.buf[start:end]
		start = end
		if _, ok := e.ks.index[string(enc)]; ok {
			continue
		}
		if len(e.ks.enc) >= e.limit || expectations.keys.Load() >= int64(e.limit) {
			e.over = true
			expectations.keys.Add(-int64(len(e.ks.enc)))
			e.ks = &keySet{codec: e.ks.codec, index: map[string]int32{}}
			return true
		}
		expectations.keys.Add(1)
		s := string(enc)
		e.ks.index[s] = int32(len(e.ks.enc))
		e.ks.enc = append(e.ks.enc, s)
	}
	return false
}

// decode sets the values of ks's keys from their encodings.
func (ks *keySet) decode() error {
	n := len(ks.codec.types)
	vals := make([]any, 0, len(ks.enc)*n)
	ks.keys = make([][]any, len(ks.enc))
	var err error
	for i, enc := range ks.enc {
		at := len(vals)
		if vals, err = ks.codec.decode(vals, []byte(enc)); err != nil {
			return err
		}
		ks.keys[i] = vals[at:len(vals):len(vals)]
	}
	return nil
}

// resolve returns ks's resolution from the scan of the expected keys at tbl's
// current snapshot (scanning on the first call), or false when a key of ks is not
// expected or the scan was made at another snapshot.
func (e *Expected) resolve(ctx context.Context, tbl *table.Table, ks *keySet, scanning func()) (*Resolution, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	snapID := int64(0)
	if s := tbl.CurrentSnapshot(); s != nil {
		snapID = s.SnapshotID
	}
	if e.over {
		e.probed, e.snapID = true, -1 // done: the next Add starts a new set
	}
	if e.probed && e.snapID != snapID {
		return nil, false, nil
	}
	to := make([]int32, len(e.ks.enc)) // expected key -> key of ks
	for i := range to {
		to[i] = -1
	}
	for k, enc := range ks.enc {
		i, ok := e.ks.index[enc]
		if !ok {
			return nil, false, nil
		}
		to[i] = int32(k)
	}
	res := &Resolution{SnapshotID: snapID, Keys: ks.keys, tasks: map[string]table.FileScanTask{}}
	if !e.probed {
		scanning()
		if err := e.scan(ctx, tbl); err != nil {
			return nil, false, err
		}
		e.probed, e.snapID = true, snapID
		res.FilesRead, res.KeyBytes, res.IndexTime = len(e.scanned), e.read, e.took
	}
	res.Scanned = e.scanned
	for _, h := range e.hits {
		f := FileHits{Path: h.Path, Deletes: h.Deletes}
		for j, i := range h.KeyIndexes {
			if k := to[i]; k >= 0 {
				f.Positions = append(f.Positions, h.Positions[j])
				f.KeyIndexes = append(f.KeyIndexes, k)
			}
		}
		if len(f.Positions) > 0 {
			res.Files = append(res.Files, f)
			res.tasks[f.Path] = e.tasks[f.Path]
		}
	}
	return res, true, nil
}

// scan finds the live positions of the expected keys in tbl's current snapshot:
// it reads the key columns of the data files whose bounds may hold one of them,
// GOMAXPROCS files at a time.
func (e *Expected) scan(ctx context.Context, tbl *table.Table) error {
	start := time.Now()
	if err := e.ks.decode(); err != nil {
		return err
	}
	e.ks.setSingle()
	e.tasks = map[string]table.FileScanTask{}
	if tbl.CurrentSnapshot() == nil || len(e.ks.keys) == 0 {
		e.took = time.Since(start)
		return nil
	}
	planned, err := tbl.Scan(table.WithSelectedFields(e.ks.codec.names...)).PlanFiles(ctx)
	if err != nil {
		return err
	}
	ranges := newKeyRanges(e.ks)
	var tasks []table.FileScanTask
	for _, t := range planned {
		if ranges.mayHold(t.File) {
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int { return strings.Compare(a.File.FilePath(), b.File.FilePath()) })
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	e.ks.useBlobs(fs, tbl, false)
	hits, read, err := scanFiles(ctx, fs, tasks, e.ks)
	if err != nil {
		return err
	}
	for i, t := range tasks {
		p := t.File.FilePath()
		e.tasks[p] = t
		e.scanned = append(e.scanned, p)
		if len(hits[i].Positions) > 0 {
			e.hits = append(e.hits, hits[i])
		}
	}
	e.read, e.took = read, time.Since(start)
	return nil
}

// Scanned returns the data files the scan of the expected keys read, and whether
// it has run (a resolution was served by it) since the last set began.
func (e *Expected) Scanned() ([]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ok := e.probed && !e.over
	if !ok {
		return nil, false
	}
	return slices.Clone(e.scanned), true
}

// tasksFor returns the planned tasks of the data files of hits when the scan was
// made at snapshot snapID and read them all.
func (e *Expected) tasksFor(snapID int64, hits []FileHits) (map[string]table.FileScanTask, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.probed || e.snapID != snapID {
		return nil, false
	}
	return tasksOf(e.tasks, hits)
}

// scanFiles reads the key columns of the data files of tasks, GOMAXPROCS at a
// time (a file holding a large share of the rows is split, see spansPerFile), and
// returns each one's live positions of ks's keys (by task) and the key columns'
// stored size.
func scanFiles(ctx context.Context, fs iceio.IO, tasks []table.FileScanTask, ks *keySet) ([]FileHits, int64, error) {
	hits := make([]FileHits, len(tasks))
	reads := make([]int64, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	par := spansPerFile(tasks)
	for i, t := range tasks {
		g.Go(func() error {
			var err error
			hits[i], err = scanFile(gctx, fs, t, ks, &reads[i], par[i])
			return err
		})
	}
	err := g.Wait()
	var read int64
	for _, n := range reads {
		read += n
	}
	return hits, read, err
}

// spansPerFile returns the goroutines that read the key column of each of the
// files of tasks (pqspan.Spans): GOMAXPROCS shared among the files in proportion
// to their rows, at least one each, so that one large file among small ones (a
// compacted file and the small files of the commits since) is read by every
// processor, not by one while the others finish the small files.
func spansPerFile(tasks []table.FileScanTask) []int {
	procs := int64(runtime.GOMAXPROCS(0))
	var total int64
	for _, t := range tasks {
		total += max(t.File.Count(), 1)
	}
	out := make([]int, len(tasks))
	for i, t := range tasks {
		out[i] = int(max((procs*max(t.File.Count(), 1)+total/2)/max(total, 1), 1))
	}
	return out
}
