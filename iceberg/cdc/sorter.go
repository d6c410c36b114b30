package cdc

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
)

// Record is one change in a Sorter: the encoded key, the sequence number, the kind
// and the packed row (row.AppendBody with the Parser's schema).
type Record struct {
	Key  []byte
	Seq  int64
	Kind Kind
	Row  []byte
}

// Compare orders records by (key bytewise, sequence number, kind).
func Compare(a, b *Record) int {
	if c := bytes.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if a.Seq != b.Seq {
		if a.Seq < b.Seq {
			return -1
		}
		return 1
	}
	return int(a.Kind) - int(b.Kind)
}

const (
	arenaChunk = 1 << 20 // bytes per arena chunk
	entrySize  = 48      // bytes accounted per in-memory record besides its data
	spillBuf   = 256 << 10
	mergeBuf   = 64 << 10
)

// entry is a record held in memory: its key and row live in the arena.
type entry struct {
	// prefix is the key's first 8 bytes, big-endian, zero-padded: entries whose
	// prefixes differ order as their keys do without reading the arena.
	prefix     uint64
	chunk, off uint32
	klen, rlen uint32
	seq        int64
	kind       Kind
}

// keyPrefix returns entry.prefix of key.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// Sorter sorts one shard's changes by (key, sequence number, kind) with at most
// about MemoryLimit bytes of records in memory: when the buffer is full its records
// are sorted and spilled as a run to a temp file, and Sorted merges the runs with
// what is still in memory. Add copies its arguments. A Sorter is not safe for
// concurrent use; Close removes its temp files.
type Sorter struct {
	limit     int64
	tmpDir    string
	dir       string   // created on first spill
	chunks    [][]byte // arena; chunks[:nchunks] are in use, the rest kept for reuse
	nchunks   int
	chunkSize int
	entries   []entry
	used      int64
	runs      []string
	added     int64
	spills    int
	spilled   int64
	sorting   bool
	closed    bool
}

// NewSorter returns a sorter that keeps at most memoryLimit bytes of records in
// memory (at least 1 MiB is used) and spills to temp files under tmpDir (empty:
// os.TempDir()).
func NewSorter(memoryLimit int64, tmpDir string) *Sorter {
	if memoryLimit < 1<<20 {
		memoryLimit = 1 << 20
	}
	return &Sorter{limit: memoryLimit, tmpDir: tmpDir, chunkSize: int(min(arenaChunk, memoryLimit/16))}
}

// NewSorterMB returns a sorter with a limit of sorterMemoryMB mebibytes (the
// sorter_memory_mb key) spilling under os.TempDir().
func NewSorterMB(sorterMemoryMB int) *Sorter { return NewSorter(int64(sorterMemoryMB)<<20, "") }

// Len returns the number of records added.
func (s *Sorter) Len() int64 { return s.added }

// Spills returns the number of runs spilled to disk so far.
func (s *Sorter) Spills() int { return s.spills }

// SpilledBytes returns the bytes of the runs spilled to disk so far.
func (s *Sorter) SpilledBytes() int64 { return s.spilled }

// Add adds one record. It may spill the buffer to disk.
func (s *Sorter) Add(key []byte, seq int64, kind Kind, packedRow []byte) error {
	if s.sorting || s.closed {
		return errors.New("iceberg: cdc sort: Add after Sorted or Close")
	}
	n := len(key) + len(packedRow)
	if s.used+int64(n)+entrySize > s.limit && len(s.entries) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	ci := s.nchunks - 1
	if ci < 0 || len(s.chunks[ci])+n > cap(s.chunks[ci]) {
		ci++
		if ci < len(s.chunks) {
			s.chunks[ci] = s.chunks[ci][:0]
		} else {
			s.chunks = append(s.chunks, make([]byte, 0, max(s.chunkSize, n)))
		}
		s.nchunks = ci + 1
		s.used += int64(cap(s.chunks[ci])) - int64(n) // a chunk is counted whole
	}
	c := s.chunks[ci]
	off := len(c)
	c = append(c, key...)
	c = append(c, packedRow...)
	s.chunks[ci] = c
	s.entries = append(s.entries, entry{prefix: keyPrefix(key), chunk: uint32(ci), off: uint32(off), klen: uint32(len(key)),
		rlen: uint32(len(packedRow)), seq: seq, kind: kind})
	s.used += int64(n) + entrySize
	s.added++
	return nil
}

func (s *Sorter) record(e *entry, r *Record) {
	c := s.chunks[e.chunk]
	r.Key = c[e.off : e.off+e.klen : e.off+e.klen]
	r.Row = c[e.off+e.klen : e.off+e.klen+e.rlen : e.off+e.klen+e.rlen]
	r.Seq, r.Kind = e.seq, e.kind
}

func (s *Sorter) sortEntries() {
	var a, b Record
	slices.SortFunc(s.entries, func(x, y entry) int {
		if x.prefix != y.prefix {
			return cmp.Compare(x.prefix, y.prefix)
		}
		s.record(&x, &a)
		s.record(&y, &b)
		return Compare(&a, &b)
	})
}

// spill writes the sorted buffer as a run and empties the buffer, keeping its
// memory for reuse.
func (s *Sorter) spill() (err error) {
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp(s.tmpDir, "icebeam-cdc-sort-"); err != nil {
			return fmt.Errorf("iceberg: cdc sort: spill: %w", err)
		}
	}
	s.sortEntries()
	path := filepath.Join(s.dir, fmt.Sprintf("run-%05d", len(s.runs)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("iceberg: cdc sort: spill: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("iceberg: cdc sort: spill: %w", cerr)
		}
	}()
	w := bufio.NewWriterSize(f, spillBuf)
	var hdr [3*binary.MaxVarintLen64 + 1]byte
	var r Record
	for i := range s.entries {
		s.record(&s.entries[i], &r)
		n := binary.PutUvarint(hdr[:], uint64(len(r.Key)))
		n += binary.PutVarint(hdr[n:], r.Seq)
		hdr[n] = byte(r.Kind)
		n++
		n += binary.PutUvarint(hdr[n:], uint64(len(r.Row)))
		w.Write(hdr[:n])
		w.Write(r.Key)
		w.Write(r.Row)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("iceberg: cdc sort: spill: %w", err)
	}
	if st, err := f.Stat(); err == nil {
		s.spilled += st.Size()
	}
	s.runs = append(s.runs, path)
	s.spills++
	s.entries = s.entries[:0]
	s.nchunks = 0
	s.used = 0
	return nil
}

// cursor is one sorted source of the merge.
type cursor interface {
	next() (bool, error)
	rec() *Record
}

type memCursor struct {
	s *Sorter
	i int
	r Record
}

func (c *memCursor) next() (bool, error) {
	if c.i >= len(c.s.entries) {
		return false, nil
	}
	c.s.record(&c.s.entries[c.i], &c.r)
	c.i++
	return true, nil
}
func (c *memCursor) rec() *Record { return &c.r }

type fileCursor struct {
	f   *os.File
	br  *bufio.Reader
	r   Record
	buf []byte
}

func (c *fileCursor) next() (bool, error) {
	klen, err := binary.ReadUvarint(c.br)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	seq, err := binary.ReadVarint(c.br)
	if err != nil {
		return false, err
	}
	kind, err := c.br.ReadByte()
	if err != nil {
		return false, err
	}
	rlen, err := binary.ReadUvarint(c.br)
	if err != nil {
		return false, err
	}
	n := int(klen + rlen)
	if cap(c.buf) < n {
		c.buf = make([]byte, n, max(n, 2*cap(c.buf)))
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.br, c.buf); err != nil {
		return false, fmt.Errorf("truncated run: %w", err)
	}
	c.r = Record{Key: c.buf[:klen:klen], Seq: seq, Kind: Kind(kind), Row: c.buf[klen:]}
	return true, nil
}
func (c *fileCursor) rec() *Record { return &c.r }

type cursorHeap []cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return Compare(h[i].rec(), h[j].rec()) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Sorted yields every record in (key, sequence number, kind) order, merging the
// spilled runs with the records still in memory. A yielded Record's slices are
// only valid until the next step: copy what you keep. After Sorted, Add fails; call
// Sorted once.
func (s *Sorter) Sorted() iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		if s.closed {
			yield(nil, errors.New("iceberg: cdc sort: Sorted after Close"))
			return
		}
		if s.sorting {
			yield(nil, errors.New("iceberg: cdc sort: Sorted called twice"))
			return
		}
		s.sorting = true
		s.sortEntries()
		if len(s.runs) == 0 { // everything fit in memory
			c := memCursor{s: s}
			for {
				ok, _ := c.next()
				if !ok || !yield(c.rec(), nil) {
					return
				}
			}
		}
		h := make(cursorHeap, 0, len(s.runs)+1)
		var files []*os.File
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		add := func(c cursor) bool {
			ok, err := c.next()
			if err != nil {
				yield(nil, fmt.Errorf("iceberg: cdc sort: merge: %w", err))
				return false
			}
			if ok {
				h = append(h, c)
			}
			return true
		}
		for _, p := range s.runs {
			f, err := os.Open(p)
			if err != nil {
				yield(nil, fmt.Errorf("iceberg: cdc sort: merge: %w", err))
				return
			}
			files = append(files, f)
			if !add(&fileCursor{f: f, br: bufio.NewReaderSize(f, mergeBuf)}) {
				return
			}
		}
		if !add(&memCursor{s: s}) {
			return
		}
		heap.Init(&h)
		for len(h) > 0 {
			top := h[0]
			if !yield(top.rec(), nil) {
				return
			}
			ok, err := top.next()
			if err != nil {
				yield(nil, fmt.Errorf("iceberg: cdc sort: merge: %w", err))
				return
			}
			if ok {
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
		}
	}
}

// Close releases the buffer and removes the spilled runs. It is safe to call more
// than once.
func (s *Sorter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.chunks, s.entries = nil, nil
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("iceberg: cdc sort: %w", err)
		}
	}
	return nil
}
