package keyblob

import (
	"math/bits"
	"slices"
)

// sortByKey returns a copy of keys sorted ascending and, for each, its index
// in keys; equal keys keep their index order. A first radix pass scatters the
// keys by their high bits into at most 2,048 groups, each then radix
// sorted on its remaining bits (skipping the bytes its keys share).
func sortByKey[P posType](keys []int64) ([]int64, []P) {
	n := len(keys)
	sk, pos := make([]int64, n), make([]P, n)
	if n == 0 {
		return sk, pos
	}
	const sign = 1 << 63
	umin, umax := ^uint64(0), uint64(0)
	for _, k := range keys {
		u := uint64(k) ^ sign
		umin, umax = min(umin, u), max(umax, u)
	}
	width := bits.Len64(umax - umin)
	// At most 2,048 groups (the scatter writes to few places at once), of
	// some 25k entries at 50M rows (a group's passes run in cache).
	top := min(max(bits.Len(uint(n))-14, 1), 11, width)
	shift := uint(width - top)
	count := make([]int, 1<<top+1)
	for _, k := range keys {
		count[(uint64(k)^sign-umin)>>shift+1]++
	}
	largest := 0
	for g := 1; g < len(count); g++ {
		largest = max(largest, count[g])
		count[g] += count[g-1]
	}
	next := slices.Clone(count[:1<<top])
	for i, k := range keys {
		g := (uint64(k) ^ sign - umin) >> shift
		sk[next[g]], pos[next[g]] = k, P(i)
		next[g]++
	}
	if shift == 0 {
		return sk, pos
	}
	kt, pt := make([]int64, largest), make([]P, largest)
	for g := 0; g < 1<<top; g++ {
		lo, hi := count[g], count[g+1]
		sortLow(sk[lo:hi], pos[lo:hi], kt, pt, umin, shift)
	}
	return sk, pos
}

// sortLow sorts ks (with ps) stably by key. Every key's v = (key ^ 1<<63) - base
// has the same bits above the low `width` ones; kt and pt are scratch at least
// as long as ks.
func sortLow[P posType](ks []int64, ps []P, kt []int64, pt []P, base uint64, width uint) {
	const sign = 1 << 63
	n := len(ks)
	if n < 2 {
		return
	}
	if n <= 32 {
		for i := 1; i < n; i++ {
			k, p := ks[i], ps[i]
			j := i
			for ; j > 0 && ks[j-1] > k; j-- {
				ks[j], ps[j] = ks[j-1], ps[j-1]
			}
			ks[j], ps[j] = k, p
		}
		return
	}
	passes := int(width+7) / 8
	var count [8][256]int
	for _, k := range ks {
		u := uint64(k) ^ sign - base
		for d := range passes {
			count[d][byte(u>>(8*d))]++
		}
	}
	src, srp, dst, dsp := ks, ps, kt[:n], pt[:n]
	for d := range passes {
		c := &count[d]
		if c[byte((uint64(src[0])^sign-base)>>(8*d))] == n {
			continue // every key has this byte
		}
		off := 0
		for v := range c {
			c[v], off = off, off+c[v]
		}
		for i, k := range src {
			v := byte((uint64(k) ^ sign - base) >> (8 * d))
			dst[c[v]], dsp[c[v]] = k, srp[i]
			c[v]++
		}
		src, srp, dst, dsp = dst, dsp, src, srp
	}
	if &src[0] != &ks[0] {
		copy(ks, src)
		copy(ps, srp)
	}
}
