package keyblob

import (
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"sync/atomic"
)

// Ascending builds the index of a data file whose keys ascend in row order
// (ties allowed: its positions are implicit) from its key column as read in
// parts, each a range of rows read in order, the parts in any order and
// concurrently (one Ascending each): each part encodes the blocks it holds
// whole as their keys come, so that it keeps no more than its encoded blocks
// and the keys of the two blocks it may share with the parts before and after
// it. JoinAscending makes the index of the parts.
type Ascending struct {
	base, next int64   // the part's first row, and the row after the last added
	head       []int64 // keys of the rows before the part's first block boundary
	cur        []int64 // keys of the block being filled, from a block boundary on
	blocks     []byte  // the whole blocks, encoded
	dir        []dirEntry
	last       int64 // the last key added
	bs         int64
}

// dirEntry is a block's directory entry; off counts from the part's blocks.
type dirEntry struct {
	first, last int64
	off         int
}

// NewAscending starts a part at row base.
func NewAscending(base int64) *Ascending {
	return &Ascending{base: base, next: base, bs: DefaultBlockSize}
}

// Add adds the keys of the rows from base on, which must follow the rows added
// before. It reports false when they do not follow, or the keys descend: the
// file then gets no index from these parts.
func (a *Ascending) Add(base int64, keys []int64) bool {
	if base != a.next {
		return false
	}
	boundary := (a.base + a.bs - 1) / a.bs * a.bs
	for _, k := range keys {
		if a.next > a.base && k < a.last {
			return false
		}
		a.last = k
		if a.next < boundary {
			a.head = append(a.head, k)
		} else {
			a.cur = append(a.cur, k)
			if int64(len(a.cur)) == a.bs {
				a.dir = append(a.dir, dirEntry{first: a.cur[0], last: k, off: len(a.blocks)})
				a.blocks = appendBlock(a.blocks, head[uint32](a.cur, nil), a.cur, []uint32(nil))
				a.cur = a.cur[:0]
			}
		}
		a.next++
	}
	return true
}

// Size returns the bytes of the blocks a has encoded.
func (a *Ascending) Size() int { return len(a.blocks) }

// JoinAscending returns the index of a file of rows rows from its parts (nil
// parts are ignored), or false when the parts do not cover the rows exactly
// or their keys descend where one part meets the next.
func JoinAscending(parts []*Ascending, rows int64) ([]byte, bool) {
	ps := slices.DeleteFunc(slices.Clone(parts), func(a *Ascending) bool { return a == nil })
	slices.SortFunc(ps, func(a, b *Ascending) int { return cmp.Compare(a.base, b.base) })
	var (
		dir     []dirEntry
		body    []byte
		pending []int64 // keys of a block the parts share, from a block boundary on
		row     int64
		last    int64
	)
	bs := int64(DefaultBlockSize)
	flush := func() {
		if len(pending) > 0 {
			dir = append(dir, dirEntry{first: pending[0], last: pending[len(pending)-1], off: len(body)})
			body = appendBlock(body, head[uint32](pending, nil), pending, []uint32(nil))
			pending = pending[:0]
		}
	}
	for _, a := range ps {
		if a.base != row || a.next == a.base {
			return nil, false
		}
		first := a.last
		switch {
		case len(a.head) > 0:
			first = a.head[0]
		case len(a.dir) > 0:
			first = a.dir[0].first
		case len(a.cur) > 0:
			first = a.cur[0]
		}
		if row > 0 && first < last {
			return nil, false
		}
		pending = append(pending, a.head...)
		if a.next >= (a.base+bs-1)/bs*bs {
			// The part reached a block boundary: pending is a whole block.
			if int64(len(pending)) != bs && len(pending) > 0 {
				return nil, false
			}
			flush()
			for _, e := range a.dir {
				dir = append(dir, dirEntry{first: e.first, last: e.last, off: len(body) + e.off})
			}
			body = append(body, a.blocks...)
			pending = append(pending, a.cur...)
		}
		row, last = a.next, a.last
	}
	if row != rows {
		return nil, false
	}
	flush()
	return assemble(rows, bs, dir, body), true
}

// assemble lays out the index of rows entries, positions implicit, from its
// blocks' directory entries and encoded blocks.
func assemble(rows, bs int64, dir []dirEntry, body []byte) []byte {
	le := binary.LittleEndian
	start := headerLen + dirEntryLen*len(dir)
	b := make([]byte, start, start+len(body)+trailerLen)
	copy(b, magic)
	le.PutUint16(b[4:], version)
	le.PutUint16(b[6:], flagImplicit)
	le.PutUint64(b[8:], uint64(rows))
	le.PutUint32(b[16:], uint32(bs))
	le.PutUint32(b[20:], uint32(len(dir)))
	for i, e := range dir {
		d := b[headerLen+dirEntryLen*i:]
		le.PutUint64(d, uint64(e.first))
		le.PutUint64(d[8:], uint64(e.last))
		le.PutUint64(d[16:], uint64(start+e.off))
	}
	b = append(b, body...)
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Spans builds the index of a data file of ascending keys from its key column
// as read in spans: ranges of rows read concurrently, one part each. It gives up
// (Finish returns nil) when a part's keys do not follow or descend, on Fail, or
// when the encoded blocks pass limit bytes.
type Spans struct {
	rows        int64
	parts       []*Ascending
	failed      atomic.Bool
	size, limit atomic.Int64
}

// NewSpans starts the index of a file of rows rows read in at most spans
// spans, of at most limit bytes.
func NewSpans(rows int64, spans int, limit int64) *Spans {
	b := &Spans{rows: rows, parts: make([]*Ascending, max(spans, 1))}
	b.limit.Store(limit)
	return b
}

// Add adds the keys of span's rows from base on. Calls for one span must not
// be concurrent; calls for different spans may be.
func (b *Spans) Add(span int, base int64, keys []int64) {
	if b.failed.Load() {
		return
	}
	p := b.parts[span]
	if p == nil {
		p = NewAscending(base)
		b.parts[span] = p
	}
	before := p.Size()
	if !p.Add(base, keys) || b.size.Add(int64(p.Size()-before)) > b.limit.Load() {
		b.failed.Store(true)
	}
}

// Fail gives the index up (a row the index cannot hold, such as a null key).
func (b *Spans) Fail() { b.failed.Store(true) }

// Finish returns the index, or nil when it was given up or its parts do not
// cover the rows.
func (b *Spans) Finish() []byte {
	if b.failed.Load() {
		return nil
	}
	blob, ok := JoinAscending(b.parts, b.rows)
	if !ok || int64(len(blob)) > b.limit.Load() {
		return nil
	}
	return blob
}
