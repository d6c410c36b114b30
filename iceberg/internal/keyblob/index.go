package keyblob

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sort"
)

// ErrCorrupt is wrapped by every error about a malformed key index.
var ErrCorrupt = errors.New("keyblob: corrupt key index")

// Index is an opened key index; it reads the blob it was opened on, which the
// caller must not change. An Index is not safe for concurrent use.
type Index struct {
	b        []byte
	rows     int64
	bs       int
	nb       int
	implicit bool
	dir      []byte // the directory

	// The last decoded block: its number (-1 for none) and its keys.
	cur  int
	keys []int64

	decoded int // blocks decoded, for tests
}

// corrupt returns an ErrCorrupt error with a message.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Open checks b (magic, version, sizes, directory, checksum) and returns its
// index; it decodes no block.
func Open(b []byte) (*Index, error) {
	le := binary.LittleEndian
	if len(b) < headerLen+trailerLen {
		return nil, corrupt("%d bytes, shorter than a header", len(b))
	}
	if string(b[:4]) != magic {
		return nil, corrupt("magic %q, want %q", b[:4], magic)
	}
	if v := le.Uint16(b[4:]); v != version {
		return nil, corrupt("version %d, want %d", v, version)
	}
	flags := le.Uint16(b[6:])
	if flags&^flagImplicit != 0 {
		return nil, corrupt("unknown flags %#x", flags)
	}
	rows, bs, nb := le.Uint64(b[8:]), uint64(le.Uint32(b[16:])), uint64(le.Uint32(b[20:]))
	if bs == 0 {
		return nil, corrupt("block size 0")
	}
	if rows > 1<<62 || nb != (rows+bs-1)/bs {
		return nil, corrupt("%d blocks of %d entries for %d rows", nb, bs, rows)
	}
	dirEnd := headerLen + dirEntryLen*nb
	if dirEnd+trailerLen > uint64(len(b)) {
		return nil, corrupt("directory of %d blocks past the end (%d bytes)", nb, len(b))
	}
	body := len(b) - trailerLen
	if sum, want := crc32.Checksum(b[:body], castagnoli), le.Uint32(b[body:]); sum != want {
		return nil, corrupt("checksum %#08x, want %#08x", sum, want)
	}
	x := &Index{b: b[:body], rows: int64(rows), bs: int(bs), nb: int(nb), implicit: flags&flagImplicit != 0,
		dir: b[headerLen:dirEnd], cur: -1}
	prev, prevLast := dirEnd, int64(0)
	for i := range x.nb {
		first, last, off := x.first(i), x.last(i), x.offset(i)
		switch {
		case off < prev || off > uint64(body) || i == 0 && off != dirEnd:
			return nil, corrupt("block %d: offset %d out of order or past the end (%d bytes)", i, off, len(b))
		case first > last:
			return nil, corrupt("block %d: first key %d above its last %d", i, first, last)
		case i > 0 && first < prevLast:
			return nil, corrupt("block %d: first key %d below block %d's last %d", i, first, i-1, prevLast)
		}
		prev, prevLast = off, last
	}
	if nb == 0 && dirEnd != uint64(body) {
		return nil, corrupt("%d bytes after an empty directory", uint64(body)-dirEnd)
	}
	return x, nil
}

// Rows returns the number of entries: the data file's rows. A reader should
// check it against the data file's record count before trusting the index.
func (x *Index) Rows() int64 { return x.rows }

func (x *Index) first(i int) int64 {
	return int64(binary.LittleEndian.Uint64(x.dir[dirEntryLen*i:]))
}

func (x *Index) last(i int) int64 {
	return int64(binary.LittleEndian.Uint64(x.dir[dirEntryLen*i+8:]))
}

func (x *Index) offset(i int) uint64 {
	return binary.LittleEndian.Uint64(x.dir[dirEntryLen*i+16:])
}

// block is a view of one block's fields.
type block struct {
	n, start   int // entries, and the first one's number
	first      int64
	kw, pw     uint
	minD, minP uint64
	deltas     []byte
	pos        []byte
}

// block returns the fields of block i, checking that they fill the bytes up
// to the next block (Open checked the offsets' order).
func (x *Index) block(i int) (block, error) {
	le := binary.LittleEndian
	off, end := x.offset(i), uint64(len(x.b))
	if i+1 < x.nb {
		end = x.offset(i + 1)
	}
	h := x.b[off:end]
	bl := block{n: x.bs, start: i * x.bs, first: x.first(i)}
	if i == x.nb-1 {
		bl.n = int(x.rows - int64(bl.start))
	}
	hl := blockHeaderLen
	if !x.implicit {
		hl += posHeaderLen
	}
	if len(h) < hl {
		return bl, corrupt("block %d: %d bytes, shorter than its header", i, len(h))
	}
	bl.kw, bl.minD = uint(h[0]), le.Uint64(h[1:])
	if !x.implicit {
		bl.pw, bl.minP = uint(h[blockHeaderLen]), le.Uint64(h[blockHeaderLen+1:])
	}
	if bl.kw > 64 || bl.pw > 64 {
		return bl, corrupt("block %d: key width %d, position width %d", i, bl.kw, bl.pw)
	}
	h = h[hl:]
	kl, pl := packedLen(bl.n-1, bl.kw), packedLen(bl.n, bl.pw)
	if len(h) != kl+pl {
		return bl, corrupt("block %d: %d bytes of values, want %d", i, len(h), kl+pl)
	}
	bl.deltas, bl.pos = h[:kl], h[kl:]
	if bl.kw == 0 {
		if last := uint64(bl.first) + uint64(bl.n-1)*bl.minD; int64(last) != x.last(i) {
			return bl, corrupt("block %d: keys end at %d, the directory says %d", i, int64(last), x.last(i))
		}
	}
	return bl, nil
}

// position returns the row position of entry j of block i.
func (x *Index) position(i int, bl *block, j int) (int64, error) {
	if x.implicit {
		return int64(bl.start + j), nil
	}
	var p uint64
	if bl.pw > 0 {
		p = get(bl.pos, j, bl.pw)
	}
	p += bl.minP
	if p >= uint64(x.rows) {
		return 0, corrupt("block %d: position %d past the %d rows", i, p, x.rows)
	}
	return int64(p), nil
}

// keysTo returns the keys of block i (key width > 0) from its first up to one
// above p, or all of them: it decodes the block incrementally, keeping the keys
// decoded of the last block asked for. Whole, the keys must end at the
// directory's last key.
func (x *Index) keysTo(i int, bl *block, p int64) ([]int64, error) {
	ks := x.keys
	if x.cur != i {
		x.decoded++
		if cap(ks) < bl.n {
			ks = make([]int64, 0, bl.n)
		}
		ks = append(ks[:0], bl.first)
		x.cur = i
	}
	if n := len(ks); n == bl.n || ks[n-1] > p {
		return ks, nil
	}
	k := uint64(ks[len(ks)-1])
	a, w, m := bl.deltas, bl.kw, mask(bl.kw)
	// Value j-1 for j below fast ends 9 bytes or more before a's end: one
	// unaligned load reads it.
	fast := min(bl.n, (len(a)-9)*8/int(w)+1)
	j := len(ks)
	for ; j < bl.n && int64(k) <= p; j++ {
		var v uint64
		if j < fast {
			bit := uint(j-1) * w
			o, s := bit>>3, bit&7
			v = binary.LittleEndian.Uint64(a[o:]) >> s
			if s+w > 64 {
				v |= uint64(a[o+8]) << (64 - s)
			}
			v &= m
		} else {
			v = get(a, j-1, w)
		}
		k += v + bl.minD
		ks = append(ks, int64(k))
	}
	x.keys = ks
	if j == bl.n && ks[j-1] != x.last(i) {
		x.cur = -1
		return nil, corrupt("block %d: keys end at %d, the directory says %d", i, ks[j-1], x.last(i))
	}
	return ks, nil
}

// match calls fn(pos) for every entry of block i holding key p, in position
// order.
func (x *Index) match(i int, p int64, fn func(pos int64)) error {
	bl, err := x.block(i)
	if err != nil {
		return err
	}
	var lo, hi int // the entries holding p
	if bl.kw == 0 {
		// k[j] = first + j*minD: no decoding.
		d := uint64(p) - uint64(bl.first)
		switch {
		case bl.minD == 0:
			lo, hi = 0, bl.n
		case d%bl.minD != 0 || d/bl.minD >= uint64(bl.n):
			return nil
		default:
			lo = int(d / bl.minD)
			hi = lo + 1
		}
	} else {
		ks, err := x.keysTo(i, &bl, p)
		if err != nil {
			return err
		}
		lo = sort.Search(len(ks), func(j int) bool { return ks[j] >= p })
		for hi = lo; hi < len(ks) && ks[hi] == p; hi++ {
		}
	}
	for j := lo; j < hi; j++ {
		pos, err := x.position(i, &bl, j)
		if err != nil {
			return err
		}
		fn(pos)
	}
	return nil
}

// Lookup calls fn(i, pos) for every row position pos holding probes[i], in
// probe order, then position order. probes must be sorted ascending
// (duplicates allowed). Only the blocks whose key range holds a probe are
// read; a block whose keys are arithmetic (key width 0) is not decoded, and
// the others only up to their last probe.
func (x *Index) Lookup(probes []int64, fn func(i int, pos int64)) error {
	var prev []int64 // the positions of the previous probe
	b := 0           // no probe from here on is in a block before b
	for i, p := range probes {
		if i > 0 {
			switch {
			case p < probes[i-1]:
				return fmt.Errorf("keyblob: probe %d (%d) below probe %d (%d): probes must ascend", i, p, i-1, probes[i-1])
			case p == probes[i-1]:
				for _, pos := range prev {
					fn(i, pos)
				}
				continue
			}
		}
		prev = prev[:0]
		// The first block whose last key is p or above.
		b += sort.Search(x.nb-b, func(j int) bool { return x.last(b+j) >= p })
		for j := b; j < x.nb && x.first(j) <= p; j++ {
			err := x.match(j, p, func(pos int64) {
				prev = append(prev, pos)
				fn(i, pos)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// All calls fn for every entry (key, pos), in key order then position order:
// a full decode.
func (x *Index) All(fn func(key, pos int64)) error {
	for i := range x.nb {
		bl, err := x.block(i)
		if err != nil {
			return err
		}
		var ks []int64
		if bl.kw > 0 {
			if ks, err = x.keysTo(i, &bl, math.MaxInt64); err != nil {
				return err
			}
		}
		for j := range bl.n {
			k := bl.first + int64(uint64(j)*bl.minD)
			if ks != nil {
				k = ks[j]
			}
			pos, err := x.position(i, &bl, j)
			if err != nil {
				return err
			}
			fn(k, pos)
		}
	}
	return nil
}

// Hits returns the row positions holding probes (sorted ascending, as Lookup)
// that keep accepts, in position order, each with the index of its probe.
func (x *Index) Hits(probes []int64, keep func(pos int64) bool) (pos []int64, probe []int, err error) {
	type hit struct {
		pos   int64
		probe int
	}
	var hits []hit
	err = x.Lookup(probes, func(i int, p int64) {
		if keep(p) {
			hits = append(hits, hit{p, i})
		}
	})
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.pos, b.pos) })
	for _, h := range hits {
		pos, probe = append(pos, h.pos), append(probe, h.probe)
	}
	return pos, probe, err
}
