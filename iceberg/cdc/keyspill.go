package cdc

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/icebeam/icebeam/iceberg/internal/keyrun"
)

// fenceStep is the number of entries of a spilled run between two fences: a
// lookup reads one block of fenceStep entries (4 KiB), and the fences in memory
// cost 8 bytes per fenceStep entries (1/512 of the run).
const fenceStep = 256

// maxRuns is the number of runs a spilled partition keeps before two of them
// are merged (tieredPair: each entry is rewritten about log2(runs) times).
const maxRuns = 8

// spillFile holds, on local disk, the sorted runs of key index partitions that
// are not in memory (see KeyIndex). The file is unlinked as soon as it is made:
// it lives until the index closes it or the process exits, and leaves nothing
// behind a crash.
type spillFile struct {
	f    *os.File
	size int64 // bytes written; runs are appended at the end
	live int64 // bytes of runs still referenced
}

// spillRun is one sorted run of index entries in a spillFile.
type spillRun struct {
	off    int64
	n      int
	fences []uint64 // fp of entries 0, fenceStep, 2*fenceStep, ...
}

func newSpillFile() (*spillFile, error) {
	f, err := os.CreateTemp("", "icebeam-keyindex-*")
	if err != nil {
		return nil, fmt.Errorf("key index spill: %w", err)
	}
	_ = os.Remove(f.Name()) // open files stay readable; nothing is left behind
	return &spillFile{f: f}, nil
}

func (s *spillFile) close() {
	if s != nil {
		_ = s.f.Close()
	}
}

// write appends the sorted entries es as a run.
func (s *spillFile) write(es []indexEntry) (spillRun, error) {
	r := spillRun{off: s.size, n: len(es)}
	const chunk = 1 << 16
	buf := make([]byte, 0, min(len(es), chunk)*IndexEntryBytes)
	for lo := 0; lo < len(es); lo += chunk {
		buf = buf[:0]
		for _, e := range es[lo:min(lo+chunk, len(es))] {
			buf = binary.LittleEndian.AppendUint64(buf, e.FP)
			buf = binary.LittleEndian.AppendUint64(buf, e.Loc)
		}
		if _, err := s.f.WriteAt(buf, s.size); err != nil {
			return spillRun{}, fmt.Errorf("key index spill: %w", err)
		}
		s.size += int64(len(buf))
	}
	for i := 0; i < len(es); i += fenceStep {
		r.fences = append(r.fences, es[i].FP)
	}
	s.live += int64(len(es)) * IndexEntryBytes
	return r, nil
}

// read returns entries [lo, hi) of run r, appended to dst.
func (s *spillFile) read(dst []indexEntry, r spillRun, lo, hi int) ([]indexEntry, error) {
	buf := make([]byte, (hi-lo)*IndexEntryBytes)
	if _, err := s.f.ReadAt(buf, r.off+int64(lo)*IndexEntryBytes); err != nil {
		return nil, fmt.Errorf("key index spill: %w", err)
	}
	for i := 0; i < len(buf); i += IndexEntryBytes {
		dst = append(dst, indexEntry{FP: binary.LittleEndian.Uint64(buf[i:]), Loc: binary.LittleEndian.Uint64(buf[i+8:])})
	}
	return dst, nil
}

// readAll returns the entries of the runs merged into one sorted array, keeping
// (and rewriting) those keep accepts (all when nil).
func (s *spillFile) readAll(runs []spillRun, keep func(*indexEntry) bool) ([]indexEntry, error) {
	parts := make([][]indexEntry, len(runs))
	for i, r := range runs {
		var err error
		if parts[i], err = s.read(make([]indexEntry, 0, r.n), r, 0, r.n); err != nil {
			return nil, err
		}
		if keep != nil {
			parts[i] = slices.DeleteFunc(parts[i], func(e indexEntry) bool { return !keep(&e) })
		}
	}
	return keyrun.MergeRuns(parts), nil
}

// drop forgets runs (their space is reclaimed by the next rewrite of the file).
func (s *spillFile) drop(runs []spillRun) {
	for _, r := range runs {
		s.live -= int64(r.n) * IndexEntryBytes
	}
}

// runCursor is where the last lookup in one run ended: the block it read.
type runCursor struct {
	blk int
	es  []indexEntry
}

// find calls fn with the location of each entry of r whose fingerprint is fp,
// reading the block the fences point at (and the next ones while they hold fp).
func (s *spillFile) find(r *spillRun, c *runCursor, fp uint64, fn func(loc uint64)) (int64, error) {
	if r.n == 0 || fp < r.fences[0] {
		return 0, nil
	}
	// The first block whose fence is at least fp may be preceded by entries equal
	// to fp at the end of the block before.
	blk := max(sort.Search(len(r.fences), func(i int) bool { return r.fences[i] >= fp })-1, 0)
	var read int64
	for ; blk < len(r.fences); blk++ {
		if c.es == nil || c.blk != blk {
			lo := blk * fenceStep
			hi := min(lo+fenceStep, r.n)
			var err error
			if c.es, err = s.read(c.es[:0], *r, lo, hi); err != nil {
				return read, err
			}
			c.blk = blk
			read += int64(hi-lo) * IndexEntryBytes
		}
		i, _ := slices.BinarySearchFunc(c.es, fp, func(e indexEntry, fp uint64) int { return cmp.Compare(e.FP, fp) })
		for ; i < len(c.es); i++ {
			if c.es[i].FP != fp {
				return read, nil
			}
			fn(c.es[i].Loc)
		}
	}
	return read, nil
}
