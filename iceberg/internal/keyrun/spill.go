package keyrun

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"
)

// FenceStep is the number of entries of a spilled run between two fences: a
// lookup reads one block of FenceStep entries (4 KiB), and the fences in memory
// cost 8 bytes per FenceStep entries (1/512 of the run).
const FenceStep = 256

// MaxRuns is the number of runs a spilled partition keeps before two of them
// are merged (TieredPair: each entry is rewritten about log2(runs) times).
const MaxRuns = 8

// SpillFile holds, on local disk, the sorted runs of key index partitions that
// are not in memory (see cdc.KeyIndex). The file is unlinked as soon as it is made:
// it lives until the index closes it or the process exits, and leaves nothing
// behind a crash.
type SpillFile struct {
	f    *os.File
	Size int64 // bytes written; runs are appended at the end
	Live int64 // bytes of runs still referenced
}

// SpillRun is one sorted run of index entries in a SpillFile.
type SpillRun struct {
	Off    int64
	N      int
	Fences []uint64 // fp of entries 0, FenceStep, 2*FenceStep, ...
}

// EntryBytes is the size of an Entry in memory and in a spill file.
const EntryBytes = 16

// NewSpillFile makes a spill file in the temporary folder.
func NewSpillFile() (*SpillFile, error) {
	f, err := os.CreateTemp("", "icebeam-keyindex-*")
	if err != nil {
		return nil, fmt.Errorf("key index spill: %w", err)
	}
	_ = os.Remove(f.Name()) // open files stay readable; nothing is left behind
	return &SpillFile{f: f}, nil
}

// Close closes the file (nil does nothing).
func (s *SpillFile) Close() {
	if s != nil {
		_ = s.f.Close()
	}
}

// Write appends the sorted entries es as a run.
func (s *SpillFile) Write(es []Entry) (SpillRun, error) {
	r := SpillRun{Off: s.Size, N: len(es)}
	const chunk = 1 << 16
	buf := make([]byte, 0, min(len(es), chunk)*EntryBytes)
	for lo := 0; lo < len(es); lo += chunk {
		buf = buf[:0]
		for _, e := range es[lo:min(lo+chunk, len(es))] {
			buf = binary.LittleEndian.AppendUint64(buf, e.FP)
			buf = binary.LittleEndian.AppendUint64(buf, e.Loc)
		}
		if _, err := s.f.WriteAt(buf, s.Size); err != nil {
			return SpillRun{}, fmt.Errorf("key index spill: %w", err)
		}
		s.Size += int64(len(buf))
	}
	for i := 0; i < len(es); i += FenceStep {
		r.Fences = append(r.Fences, es[i].FP)
	}
	s.Live += int64(len(es)) * EntryBytes
	return r, nil
}

// Read returns entries [lo, hi) of run r, appended to dst.
func (s *SpillFile) Read(dst []Entry, r SpillRun, lo, hi int) ([]Entry, error) {
	buf := make([]byte, (hi-lo)*EntryBytes)
	if _, err := s.f.ReadAt(buf, r.Off+int64(lo)*EntryBytes); err != nil {
		return nil, fmt.Errorf("key index spill: %w", err)
	}
	for i := 0; i < len(buf); i += EntryBytes {
		dst = append(dst, Entry{FP: binary.LittleEndian.Uint64(buf[i:]), Loc: binary.LittleEndian.Uint64(buf[i+8:])})
	}
	return dst, nil
}

// ReadAll returns the entries of the runs merged into one sorted array, keeping
// (and rewriting) those keep accepts (all when nil).
func (s *SpillFile) ReadAll(runs []SpillRun, keep func(*Entry) bool) ([]Entry, error) {
	parts := make([][]Entry, len(runs))
	for i, r := range runs {
		var err error
		if parts[i], err = s.Read(make([]Entry, 0, r.N), r, 0, r.N); err != nil {
			return nil, err
		}
		if keep != nil {
			parts[i] = slices.DeleteFunc(parts[i], func(e Entry) bool { return !keep(&e) })
		}
	}
	return MergeRuns(parts), nil
}

// Drop forgets runs (their space is reclaimed by the next rewrite of the file).
func (s *SpillFile) Drop(runs []SpillRun) {
	for _, r := range runs {
		s.Live -= int64(r.N) * EntryBytes
	}
}

// RunCursor is where the last lookup in one run ended: the block it read.
type RunCursor struct {
	blk int
	es  []Entry
}

// Find calls fn with the location of each entry of r whose fingerprint is fp,
// reading the block the fences point at (and the next ones while they hold fp).
func (s *SpillFile) Find(r *SpillRun, c *RunCursor, fp uint64, fn func(loc uint64)) (int64, error) {
	if r.N == 0 || fp < r.Fences[0] {
		return 0, nil
	}
	// The first block whose fence is at least fp may be preceded by entries equal
	// to fp at the end of the block before.
	blk := max(sort.Search(len(r.Fences), func(i int) bool { return r.Fences[i] >= fp })-1, 0)
	var read int64
	for ; blk < len(r.Fences); blk++ {
		if c.es == nil || c.blk != blk {
			lo := blk * FenceStep
			hi := min(lo+FenceStep, r.N)
			var err error
			if c.es, err = s.Read(c.es[:0], *r, lo, hi); err != nil {
				return read, err
			}
			c.blk = blk
			read += int64(hi-lo) * EntryBytes
		}
		i, _ := slices.BinarySearchFunc(c.es, fp, func(e Entry, fp uint64) int { return cmp.Compare(e.FP, fp) })
		for ; i < len(c.es); i++ {
			if c.es[i].FP != fp {
				return read, nil
			}
			fn(c.es[i].Loc)
		}
	}
	return read, nil
}

// TieredPair returns i, the runs (sorted by length, longest first) to merge
// being i and i+1: the shortest pair of neighbours within 4x of each other's
// length, else the two shortest. Merging the two shortest merged each window's
// small run (a CDC commit's new file) with a run of the cold build, rewriting
// megabytes per spilled partition per window, until the spill file's dead space
// forced a rewrite of the whole file (50M rows, default budget: a 1.4-1.7 s
// window about once a minute).
func TieredPair(runs []SpillRun) int {
	for i := len(runs) - 2; i >= 0; i-- {
		if runs[i].N <= 4*max(runs[i+1].N, 1) {
			return i
		}
	}
	return len(runs) - 2
}
