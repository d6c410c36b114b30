package cdc

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
)

// joinTag starts a join packet where a change packet has its schema id (an int32).
const joinTag = 1 << 40

const joinMarker, joinHits = 1, 2 // the kinds of join packets

// IsJoinPacket reports whether p is a key join packet, not a packet of changes.
func IsJoinPacket(p []byte) bool {
	id, n := binary.Uvarint(p)
	return n > 0 && id == joinTag
}

// AppendPacketKeys appends to dst the keys of change packet p of shard as one
// element of the key set (Resolver.JoinKeys): shard, then keys with their length.
func AppendPacketKeys(dst []byte, shard int, p []byte) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(shard))
	_, err := ReadPacket(p, func(key []byte, _ int64, _ Kind, _ []byte) error {
		dst = appendLen(dst, key)
		return nil
	})
	return dst, err
}

func appendLen(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// JoinKeys is the key set of a batch run, for the key join (package
// write/keyjoin), which reads each candidate data file's key columns once per
// run, whatever the workers: Plan, Groups, ScanFiles, and JoinMarker for what a
// shard gets.
type JoinKeys struct {
	ks     *keySet
	shards []int32 // by key: the shard it was parsed in
	snapID int64   // tasks are of this snapshot
	tasks  map[string]table.FileScanTask
}

// JoinKeys returns the key set of tbl's key columns made of the elements of keys
// (AppendPacketKeys), or nil when they are more than the key index budget holds
// (IndexBytes / ExpectedKeyBytes) or a key is in two shards (the sharding changed
// during the run): the shards then resolve them as without the join.
func (r0 Resolver) JoinKeys(tbl *table.Table, keys func(*[]byte) bool) (*JoinKeys, error) {
	codec, err := newKeyCodec(tbl.Schema(), r0.KeyColumns)
	if err != nil {
		return nil, err
	}
	j := &JoinKeys{ks: &keySet{codec: codec, index: map[string]int32{}}}
	for b := []byte(nil); keys(&b); {
		r := joinReader{p: b}
		for shard := int32(r.uvarint()); len(r.p) > 0; {
			enc := r.str()
			k, ok := j.ks.index[enc]
			if ok && j.shards[k] != shard || !ok && int64(len(j.shards)) >= r0.IndexBytes/ExpectedKeyBytes {
				return nil, r.err
			} else if !ok {
				j.ks.index[enc] = int32(len(j.ks.enc))
				j.ks.enc = append(j.ks.enc, enc)
				j.shards = append(j.shards, shard)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	if err := j.ks.decode(); err != nil {
		return nil, err
	}
	j.ks.setSingle()
	return j, nil
}

// Plan returns tbl's current snapshot id (0 without one), the data files whose
// key column bounds may hold one of the keys (see keyRanges), sorted: the
// candidates, each to be read once (ScanFiles), and the shards that have keys.
func (j *JoinKeys) Plan(ctx context.Context, tbl *table.Table) (snapID int64, files []string, shards []int, err error) {
	for _, s := range j.shards {
		shards = append(shards, int(s))
	}
	slices.Sort(shards)
	if s := tbl.CurrentSnapshot(); s != nil {
		snapID, err = s.SnapshotID, j.plan(ctx, tbl, s.SnapshotID)
		files = sortedKeys(j.tasks)
	}
	return snapID, files, slices.Compact(shards), err
}

// plan plans tbl's snapshot snapID, keeping the candidate files' tasks.
func (j *JoinKeys) plan(ctx context.Context, tbl *table.Table, snapID int64) error {
	if j.tasks != nil && j.snapID == snapID {
		return nil
	}
	planned, err := tbl.Scan(table.WithSnapshotID(snapID), table.WithSelectedFields(j.ks.codec.names...)).PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	ranges := newKeyRanges(j.ks)
	j.tasks, j.snapID = map[string]table.FileScanTask{}, snapID
	if fs, err := tbl.FS(ctx); err == nil {
		j.ks.useBlobs(fs, tbl, true)
	}
	for _, t := range planned {
		if ranges.mayHold(t.File) {
			j.tasks[t.File.FilePath()] = t
		}
	}
	return nil
}

// JoinMarker tells a shard that the join resolved its keys at snapshot snapID
// from the candidate files scanned (Plan): a key without hits is not in the table.
func JoinMarker(snapID int64, scanned []string) []byte {
	p := binary.AppendUvarint(append(binary.AppendUvarint(nil, joinTag), joinMarker), uint64(snapID))
	for _, s := range scanned {
		p = appendLen(p, []byte(s))
	}
	return p
}

// joinGroupRows is about the rows of candidate files one work item of the join
// reads (Groups): enough that a table's files are read together, in parallel
// spans (scanFiles), rather than one item after the other on a worker; few
// enough that a large table's files spread over the workers (a 1B-row table: 30
// items). On one worker, 50M rows in 25 files, 10,000 changes: 1.0 s with items
// of 8M rows, 0.82 s with 32M, 0.86 s for the worker's own scan.
var joinGroupRows int64 = 32 << 20 // a variable for tests

// Groups packs the candidate files (Plan) into groups of about joinGroupRows
// rows, at most limit: the largest files first, each into the open group while
// it fits (a file past joinGroupRows alone), past limit groups into the group of
// the fewest rows. They are the work items of the join, each read by one worker
// (ScanFiles).
func (j *JoinKeys) Groups(files []string, limit int) [][]string {
	order := slices.Clone(files)
	rows := func(f string) int64 { return j.tasks[f].File.Count() }
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(rows(b), rows(a)) })
	var groups [][]string
	var sums []int64
	for _, f := range order {
		switch last := len(groups) - 1; {
		case last >= 0 && sums[last]+rows(f) <= joinGroupRows:
			groups[last], sums[last] = append(groups[last], f), sums[last]+rows(f)
		case len(groups) < max(limit, 1):
			groups, sums = append(groups, []string{f}), append(sums, rows(f))
		default:
			g := slices.Index(sums, slices.Min(sums))
			groups[g], sums[g] = append(groups[g], f), sums[g]+rows(f)
		}
	}
	for _, g := range groups {
		slices.Sort(g)
	}
	return groups
}

// Scanned is what JoinKeys.ScanFiles read and found.
type Scanned struct {
	// Hits are the join packets by shard (one a file with hits of the shard's keys).
	Hits map[int][][]byte
	// Bytes counts the stored bytes read: key column chunks and key index blobs.
	Bytes int64
	// FromBlobs counts the files resolved by their key index blob (package keyblob)
	// instead of their key column.
	FromBlobs int
	// Blobs are the key index blobs built of the large files whose key column was
	// read (their keys ascending in row order), for the caller to attach to the
	// table (keyblob.Write).
	Blobs []keyblob.Blob
}

// ScanFiles reads the key columns of candidate data files paths of tbl's snapshot
// snapID together (in spans, GOMAXPROCS goroutines shared among them by their
// rows; row groups whose statistics hold no key are skipped; deleted positions
// are not hits), or the key index blob of a file that has one, and returns their
// hits as join packets by shard, with the blobs it built of large files.
func (j *JoinKeys) ScanFiles(ctx context.Context, tbl *table.Table, snapID int64, paths []string) (Scanned, error) {
	var out Scanned
	if err := j.plan(ctx, tbl, snapID); err != nil {
		return out, err
	}
	tasks := make([]table.FileScanTask, len(paths))
	for i, path := range paths {
		t, ok := j.tasks[path]
		if !ok {
			return out, fmt.Errorf("data file %s is not a candidate of snapshot %d", path, snapID)
		}
		tasks[i] = t
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	found, read, err := scanFiles(ctx, fs, tasks, j.ks)
	if out.Bytes = read; err != nil {
		return out, err
	}
	hits := map[int][][]byte{}
	for i, h := range found {
		t, path := tasks[i], paths[i]
		if h.FromBlob {
			out.FromBlobs++
		}
		if h.Blob != nil {
			out.Blobs = append(out.Blobs, keyblob.Blob{DataFile: path, Rows: t.File.Count(), Data: h.Blob})
		}
		byShard := map[int][]byte{}
		for k, key := range h.KeyIndexes {
			shard := int(j.shards[key])
			p, ok := byShard[shard]
			if !ok {
				p = binary.AppendUvarint(append(binary.AppendUvarint(nil, joinTag), joinHits), uint64(snapID))
				p = appendLen(appendLen(p, []byte(path)), []byte(h.Deletes))
				if p = append(p, 0); t.FirstRowID != nil {
					p[len(p)-1] = 1
					p = binary.AppendUvarint(p, uint64(*t.FirstRowID))
				}
			}
			byShard[shard] = binary.AppendUvarint(appendLen(p, []byte(j.ks.enc[key])), uint64(h.Positions[k]))
		}
		for _, shard := range slices.Sorted(maps.Keys(byShard)) {
			hits[shard] = append(hits[shard], byShard[shard])
		}
	}
	out.Hits = hits
	return out, nil
}

// KeyField is the field id of the key column of the key index blobs ScanFiles
// uses and builds (of one long key column; 0 for other keys).
func (j *JoinKeys) KeyField() int {
	if j.ks.single == nil {
		return 0
	}
	return j.ks.codec.ids[0]
}

// joined is what a shard window received of the join: marker, hits by file.
type joined struct {
	marked  bool
	snapID  int64
	scanned []string
	files   map[string]*joinedFile
}

type joinedFile struct {
	deletes  string
	firstRow *int64
	keys     []string
	pos      []int64
}

// add reads the join packet p.
func (j *joined) add(p []byte) error {
	r := joinReader{p: p}
	r.uvarint() // joinTag
	kind, snap := byte(r.uvarint()), int64(r.uvarint())
	if j.files == nil {
		j.files, j.snapID = map[string]*joinedFile{}, snap
	} else if snap != j.snapID {
		return fmt.Errorf("%w: key join packets of snapshots %d and %d", ErrCorruptPacket, j.snapID, snap)
	}
	if kind == joinMarker {
		for j.marked = true; len(r.p) > 0; {
			j.scanned = append(j.scanned, r.str())
		}
		return r.err
	}
	path := r.str()
	f := j.files[path]
	if f == nil {
		f = &joinedFile{}
		j.files[path] = f
	}
	if f.deletes = r.str(); r.uvarint() == 1 {
		first := int64(r.uvarint())
		f.firstRow = &first
	}
	for len(r.p) > 0 {
		f.keys = append(f.keys, r.str())
		f.pos = append(f.pos, int64(r.uvarint()))
	}
	return r.err
}

// joinReader reads a join packet or key list; past an error (err), zeros.
type joinReader struct {
	p   []byte
	err error
}

func (r *joinReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.p)
	return r.advance(v, n)
}

func (r *joinReader) advance(v uint64, n int) uint64 {
	if n <= 0 || n > len(r.p) {
		r.err, r.p = ErrCorruptPacket, nil
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *joinReader) str() string {
	l := r.uvarint()
	if uint64(len(r.p)) < l {
		return string(r.p[:r.advance(0, -1)])
	}
	s := string(r.p[:l])
	r.p = r.p[l:]
	return s
}

// resolution returns the Resolution of keys (none equal) from the join's hits.
func (j *joined) resolution(tbl *table.Table, keyCols []string, keys [][]any) (*Resolution, error) {
	codec, err := newKeyCodec(tbl.Schema(), keyCols)
	if err != nil {
		return nil, err
	}
	ks, err := newKeySet(codec, keys)
	if err != nil {
		return nil, err
	}
	res := &Resolution{SnapshotID: j.snapID, Keys: ks.keys, Scanned: j.scanned, rowIDBase: map[string]*int64{}}
	for _, path := range sortedKeys(j.files) {
		f := j.files[path]
		h := FileHits{Path: path, Deletes: f.deletes}
		for i, enc := range f.keys {
			if k, ok := ks.index[enc]; ok {
				h.Positions = append(h.Positions, f.pos[i])
				h.KeyIndexes = append(h.KeyIndexes, k)
			}
		}
		if len(h.Positions) > 0 {
			sortHits(&h)
			res.Files = append(res.Files, h)
			res.rowIDBase[path] = f.firstRow
		}
	}
	return res, nil
}
