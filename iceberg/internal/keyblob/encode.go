package keyblob

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"slices"
)

const (
	magic          = "IBKI"
	version        = 1
	flagImplicit   = 1 // positions implicit: entry e is at row position e
	headerLen      = 24
	dirEntryLen    = 24
	trailerLen     = 4
	blockHeaderLen = 9 // key width, minimum delta
	posHeaderLen   = 9 // position width, minimum position

	// DefaultBlockSize is the block size Encode uses: entries a block.
	DefaultBlockSize = 512
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the key index of an int64 key column: keys[i] is the key at
// row position i of the data file. Duplicate keys are allowed (every position
// is kept). When keys ascend (ties allowed) the positions are implicit and
// Encode copies nothing; otherwise it sorts a copy of the keys with their
// positions, 12 bytes a row (16 past 2^32 rows) plus a scratch buffer as large
// as the largest group of keys sharing their high bits.
func Encode(keys []int64) []byte { return encode(keys, DefaultBlockSize) }

// encode is Encode with a block size (bs > 0).
func encode(keys []int64, bs int) []byte {
	if slices.IsSorted(keys) {
		return build[uint32](keys, nil, bs)
	}
	if uint64(len(keys)) <= 1<<32 {
		sk, pos := sortByKey[uint32](keys)
		return build(sk, pos, bs)
	}
	sk, pos := sortByKey[uint64](keys)
	return build(sk, pos, bs)
}

// posType is the type of the positions Encode sorts with the keys.
type posType interface{ uint32 | uint64 }

// build encodes the entries (keys[e], pos[e]) sorted by key then position; pos
// nil means positions implicit (pos[e] = e).
func build[P posType](keys []int64, pos []P, bs int) []byte {
	n := len(keys)
	nb := (n + bs - 1) / bs
	heads := make([]blockHead, nb)
	size := headerLen + dirEntryLen*nb + trailerLen
	for i := range heads {
		lo, hi := i*bs, min((i+1)*bs, n)
		var ps []P
		if pos != nil {
			ps = pos[lo:hi]
		}
		heads[i] = head(keys[lo:hi], ps)
		size += heads[i].size(hi-lo, pos != nil)
	}
	b := make([]byte, headerLen+dirEntryLen*nb, size)
	copy(b, magic)
	le := binary.LittleEndian
	le.PutUint16(b[4:], version)
	if pos == nil {
		le.PutUint16(b[6:], flagImplicit)
	}
	le.PutUint64(b[8:], uint64(n))
	le.PutUint32(b[16:], uint32(bs))
	le.PutUint32(b[20:], uint32(nb))
	for i, h := range heads {
		lo, hi := i*bs, min((i+1)*bs, n)
		d := b[headerLen+dirEntryLen*i:]
		le.PutUint64(d, uint64(keys[lo]))
		le.PutUint64(d[8:], uint64(keys[hi-1]))
		le.PutUint64(d[16:], uint64(len(b)))
		var ps []P
		if pos != nil {
			ps = pos[lo:hi]
		}
		b = appendBlock(b, h, keys[lo:hi], ps)
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// blockHead is a block's header: the widths and minimums of its key deltas
// and positions.
type blockHead struct {
	kw, pw     uint
	minD, minP uint64
}

// head returns the header of the block of the entries (ks[j], ps[j]); ps nil
// means positions implicit.
func head[P posType](ks []int64, ps []P) blockHead {
	minD, maxD := ^uint64(0), uint64(0)
	for j := 1; j < len(ks); j++ {
		d := uint64(ks[j]) - uint64(ks[j-1])
		minD, maxD = min(minD, d), max(maxD, d)
	}
	if len(ks) < 2 {
		minD, maxD = 0, 0
	}
	h := blockHead{kw: uint(bits.Len64(maxD - minD)), minD: minD}
	if ps != nil {
		h.minP = uint64(slices.Min(ps))
		h.pw = uint(bits.Len64(uint64(slices.Max(ps)) - h.minP))
	}
	return h
}

// size returns the byte length of a block of n entries with this header.
func (h blockHead) size(n int, explicit bool) int {
	if !explicit {
		return blockHeaderLen + packedLen(n-1, h.kw)
	}
	return blockHeaderLen + posHeaderLen + packedLen(n-1, h.kw) + packedLen(n, h.pw)
}

// appendBlock appends the block of the entries (ks[j], ps[j]) with header h.
func appendBlock[P posType](b []byte, h blockHead, ks []int64, ps []P) []byte {
	b = append(b, byte(h.kw))
	b = binary.LittleEndian.AppendUint64(b, h.minD)
	if ps != nil {
		b = append(b, byte(h.pw))
		b = binary.LittleEndian.AppendUint64(b, h.minP)
	}
	p := packer{dst: b}
	if h.kw > 0 {
		for j := 1; j < len(ks); j++ {
			p.put(uint64(ks[j])-uint64(ks[j-1])-h.minD, h.kw)
		}
	}
	p.dst = p.flush()
	if h.pw > 0 {
		for _, v := range ps {
			p.put(uint64(v)-h.minP, h.pw)
		}
	}
	return p.flush()
}
