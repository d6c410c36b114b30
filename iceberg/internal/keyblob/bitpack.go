package keyblob

import "encoding/binary"

// packer appends values of a fixed bit width to a byte slice, least
// significant bit first (see the package doc).
type packer struct {
	dst   []byte
	acc   uint64 // bits not yet appended, the first one lowest
	nbits uint   // how many of acc's bits are pending, < 64
}

// put appends the low w bits of v (v < 2^w).
func (p *packer) put(v uint64, w uint) {
	if w == 0 {
		return
	}
	p.acc |= v << p.nbits
	if p.nbits+w < 64 {
		p.nbits += w
		return
	}
	p.dst = binary.LittleEndian.AppendUint64(p.dst, p.acc)
	p.acc = v >> (64 - p.nbits) // 0 when nbits is 0 (Go's shift by 64)
	p.nbits = p.nbits + w - 64
}

// flush appends the pending bits, the last byte padded with zeros.
func (p *packer) flush() []byte {
	for ; p.nbits > 0; p.nbits -= min(p.nbits, 8) {
		p.dst = append(p.dst, byte(p.acc))
		p.acc >>= 8
	}
	return p.dst
}

// packedLen is the byte length of n values of w bits.
func packedLen(n int, w uint) int { return int((uint64(n)*uint64(w) + 7) / 8) }

// mask is the low w bits set.
func mask(w uint) uint64 { return ^uint64(0) >> (64 - w) }

// get returns value j of width w (1..64) from a, which holds at least j+1 values.
func get(a []byte, j int, w uint) uint64 {
	bit := uint64(j) * uint64(w)
	i, s := bit>>3, uint(bit&7)
	var lo uint64
	if i+8 <= uint64(len(a)) {
		lo = binary.LittleEndian.Uint64(a[i:])
	} else {
		for k := uint64(0); i+k < uint64(len(a)); k++ {
			lo |= uint64(a[i+k]) << (8 * k)
		}
	}
	v := lo >> s
	if s+w > 64 {
		v |= uint64(a[i+8]) << (64 - s)
	}
	return v & mask(w)
}
