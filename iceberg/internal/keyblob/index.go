package keyblob

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	next, prevLast := dirEnd, int64(0)
	for i := range x.nb {
		first, last, off := x.first(i), x.last(i), x.offset(i)
		switch {
		case off != next:
			return nil, corrupt("block %d: offset %d, want %d", i, off, next)
		case first > last:
			return nil, corrupt("block %d: first key %d above its last %d", i, first, last)
		case i > 0 && first < prevLast:
			return nil, corrupt("block %d: first key %d below block %d's last %d", i, first, i-1, prevLast)
		}
		end, err := x.blockEnd(i)
		if err != nil {
			return nil, err
		}
		next, prevLast = end, last
	}
	if next != uint64(body) {
		return nil, corrupt("blocks end at %d, the trailer starts at %d", next, body)
	}
	return x, nil
}

// Rows returns the number of entries: the data file's rows.
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

// entries returns block i's entry count.
func (x *Index) entries(i int) int {
	if i == x.nb-1 {
		return int(x.rows - int64(i)*int64(x.bs))
	}
	return x.bs
}

// blockEnd returns where block i ends, from its header, checking that its
// header lies in the blob and its widths are at most 64.
func (x *Index) blockEnd(i int) (uint64, error) {
	off := x.offset(i)
	hl := uint64(blockHeaderLen)
	if !x.implicit {
		hl += posHeaderLen
	}
	if off > uint64(len(x.b)) || uint64(len(x.b))-off < hl {
		return 0, corrupt("block %d: offset %d past the end", i, off)
	}
	h := x.b[off:]
	kw, pw := uint(h[0]), uint(0)
	if !x.implicit {
		pw = uint(h[blockHeaderLen])
	}
	if kw > 64 || pw > 64 {
		return 0, corrupt("block %d: key width %d, position width %d", i, kw, pw)
	}
	n := x.entries(i)
	return off + hl + uint64(packedLen(n-1, kw)+packedLen(n, pw)), nil
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

// block returns the fields of block i (checked by Open).
func (x *Index) block(i int) block {
	le := binary.LittleEndian
	off := x.offset(i)
	h := x.b[off:]
	bl := block{n: x.entries(i), start: i * x.bs, first: x.first(i), kw: uint(h[0]), minD: le.Uint64(h[1:])}
	h = h[blockHeaderLen:]
	if !x.implicit {
		bl.pw, bl.minP = uint(h[0]), le.Uint64(h[1:])
		h = h[posHeaderLen:]
	}
	kl := packedLen(bl.n-1, bl.kw)
	bl.deltas, bl.pos = h[:kl], h[kl:kl+packedLen(bl.n, bl.pw)]
	return bl
}

// position returns the row position of entry j of bl.
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

// decode returns the keys of block i, decoding it unless it is the last one
// decoded; it checks that they end at the directory's last key.
func (x *Index) decode(i int, bl *block) ([]int64, error) {
	if x.cur == i {
		return x.keys, nil
	}
	x.decoded++
	ks := x.keys[:0]
	if cap(ks) < bl.n {
		ks = make([]int64, 0, x.bs)
	}
	ks = ks[:bl.n]
	k := uint64(bl.first)
	ks[0] = int64(k)
	a, w, m := bl.deltas, bl.kw, mask(bl.kw)
	if fast := max(0, min(bl.n-1, (len(a)-9)*8/int(w))); fast > 0 {
		// Values that end 9 bytes or more before the area's end: one unaligned load.
		bit := uint(0)
		for j := 1; j <= fast; j++ {
			i, s := bit>>3, bit&7
			v := binary.LittleEndian.Uint64(a[i:]) >> s
			if s+w > 64 {
				v |= uint64(a[i+8]) << (64 - s)
			}
			k += v&m + bl.minD
			ks[j] = int64(k)
			bit += w
		}
		for j := fast + 1; j < bl.n; j++ {
			k += get(a, j-1, w) + bl.minD
			ks[j] = int64(k)
		}
	} else {
		for j := 1; j < bl.n; j++ {
			k += get(a, j-1, w) + bl.minD
			ks[j] = int64(k)
		}
	}
	if ks[bl.n-1] != x.last(i) {
		x.cur = -1
		return nil, corrupt("block %d: keys end at %d, the directory says %d", i, ks[bl.n-1], x.last(i))
	}
	x.cur, x.keys = i, ks
	return ks, nil
}

// match calls fn(pos) for every entry of block i holding key p, in position
// order.
func (x *Index) match(i int, p int64, fn func(pos int64)) error {
	bl := x.block(i)
	var lo, hi int // the entries holding p
	if bl.kw == 0 {
		// k[j] = first + j*minD: no decoding.
		if last := uint64(bl.first) + uint64(bl.n-1)*bl.minD; int64(last) != x.last(i) {
			return corrupt("block %d: keys end at %d, the directory says %d", i, int64(last), x.last(i))
		}
		d := uint64(p) - uint64(bl.first)
		switch {
		case bl.minD == 0:
			lo, hi = 0, bl.n
		case d%bl.minD != 0:
			return nil
		default:
			lo = int(d / bl.minD)
			hi = lo + 1
		}
	} else {
		ks, err := x.decode(i, &bl)
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
// read, and of those only the ones whose keys are not arithmetic are decoded.
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
		bl := x.block(i)
		var ks []int64
		if bl.kw > 0 {
			var err error
			if ks, err = x.decode(i, &bl); err != nil {
				return err
			}
		} else if last := uint64(bl.first) + uint64(bl.n-1)*bl.minD; int64(last) != x.last(i) {
			return corrupt("block %d: keys end at %d, the directory says %d", i, int64(last), x.last(i))
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
