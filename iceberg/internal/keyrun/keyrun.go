// Package keyrun holds sorted runs of key index entries (a key's 64-bit
// fingerprint and its location): sorting, merging and searching them. The key
// index of package cdc keeps each partition as such runs, in memory and in its
// spill file.
package keyrun

import (
	"cmp"
	"slices"
)

// Entry is one indexed row: its key's fingerprint and its location (data file
// ordinal and row position).
type Entry struct{ FP, Loc uint64 }

// Sort sorts es by fingerprint. Entries read from a file written in key
// order (exact keys) are found sorted in one pass; others (random keys, hashed
// fingerprints) are radix sorted.
func Sort(es []Entry) {
	cmpFP := func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) }
	switch {
	case slices.IsSortedFunc(es, cmpFP):
	case len(es) < 1024:
		slices.SortFunc(es, cmpFP)
	default:
		radixSort(es)
	}
}

// radixSort sorts es by fingerprint, stably: a least significant digit radix sort,
// one byte a pass, skipping the bytes every fingerprint shares (the high bytes of
// small integer keys). It takes a buffer of len(es) entries.
func radixSort(es []Entry) {
	var counts [8][256]int
	for _, e := range es {
		for b := range 8 {
			counts[b][byte(e.FP>>(8*b))]++
		}
	}
	src, dst := es, make([]Entry, len(es))
	for b := range 8 {
		c := &counts[b]
		shift := 8 * b
		if c[byte(es[0].FP>>shift)] == len(es) {
			continue // every fingerprint has this byte
		}
		var next [256]int
		sum := 0
		for d := range 256 {
			next[d] = sum
			sum += c[d]
		}
		for _, e := range src {
			d := byte(e.FP >> shift)
			dst[next[d]] = e
			next[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &es[0] {
		copy(es, src)
	}
}

// MergeRuns merges sorted runs into one sorted array: pairwise, level by level,
// between two arrays of the total size (log2(len(runs)) passes, two allocations).
// A single run is returned as it is; disjoint runs are concatenated (concatDisjoint).
func MergeRuns(runs [][]Entry) []Entry {
	runs = slices.DeleteFunc(slices.Clone(runs), func(r []Entry) bool { return len(r) == 0 })
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return runs[0]
	}
	if out, ok := concatDisjoint(runs); ok {
		return out
	}
	bounds := []int{0} // run i is src[bounds[i]:bounds[i+1]]
	var n int
	for _, r := range runs {
		n += len(r)
		bounds = append(bounds, n)
	}
	src, dst := make([]Entry, n), make([]Entry, n)
	for i, r := range runs {
		copy(src[bounds[i]:], r)
	}
	for len(bounds) > 2 {
		next := []int{0}
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			if i+2 == len(bounds) { // an odd run out: carried to the next level
				copy(dst[lo:mid], src[lo:mid])
				next = append(next, mid)
				continue
			}
			hi := bounds[i+2]
			mergeInto(dst[lo:hi], src[lo:mid], src[mid:hi])
			next = append(next, hi)
		}
		bounds = next
		src, dst = dst, src
	}
	return src
}

// concatDisjoint returns the sorted runs concatenated in the order of their
// first fingerprints when none overlaps the next (the files of a table compacted
// in key order, exact keys): one copy instead of a merge pass per level.
func concatDisjoint(runs [][]Entry) ([]Entry, bool) {
	order := slices.Clone(runs)
	slices.SortFunc(order, func(a, b []Entry) int { return cmp.Compare(a[0].FP, b[0].FP) })
	n := len(order[0])
	for i := 1; i < len(order); i++ {
		if order[i-1][len(order[i-1])-1].FP > order[i][0].FP {
			return nil, false
		}
		n += len(order[i])
	}
	out := make([]Entry, 0, n)
	for _, r := range order {
		out = append(out, r...)
	}
	return out, true
}

// ColdMerge merges the sorted runs of a cold start into the two arrays lookups
// search: the shortest runs, up to a quarter of the entries, into delta (a table's many
// small files, such as one per CDC commit), the others into main. Each array takes
// log2 of its own run count in passes, so the long runs of the large files are copied
// fewer times than one merge of every run would copy them (BenchmarkMergeRuns).
func ColdMerge(runs [][]Entry) (main, delta []Entry) {
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b []Entry) int { return cmp.Compare(len(a), len(b)) })
	k, n := 0, 0 // sorted[:k] are the short runs
	for k < len(sorted) && n+len(sorted[k]) <= total/4 {
		n += len(sorted[k])
		k++
	}
	return MergeRuns(sorted[k:]), MergeRuns(sorted[:k])
}

// Merge merges two sorted arrays into a new one, keeping (and rewriting)
// the entries keep accepts (all when nil).
func Merge(a, b []Entry, keep func(*Entry) bool) []Entry {
	if keep == nil {
		return mergeAll(a, b)
	}
	out := make([]Entry, 0, len(a)+len(b))
	push := func(e Entry) {
		if keep == nil || keep(&e) {
			out = append(out, e)
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].FP <= b[j].FP {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		push(a[i])
	}
	for ; j < len(b); j++ {
		push(b[j])
	}
	return slices.Clip(out)
}

// mergeAll merges two sorted arrays into a new one.
func mergeAll(a, b []Entry) []Entry {
	out := make([]Entry, len(a)+len(b))
	mergeInto(out, a, b)
	return out
}

// mergeInto merges the sorted arrays a and b into out, of their total length.
func mergeInto(out, a, b []Entry) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if a[i].FP <= b[j].FP {
			out[k] = a[i]
			i++
		} else {
			out[k] = b[j]
			j++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

// Gallop returns the first index at or after from whose fingerprint is at least FP:
// an exponential search forward from from, then a binary search within the last step.
func Gallop(es []Entry, from int, fp uint64) int {
	if from >= len(es) || es[from].FP >= fp {
		return from
	}
	lo, step := from, 1 // es[lo].FP < fp
	for lo+step < len(es) && es[lo+step].FP < fp {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(es))
	i, _ := slices.BinarySearchFunc(es[lo+1:hi], fp, func(e Entry, fp uint64) int { return cmp.Compare(e.FP, fp) })
	return lo + 1 + i
}
