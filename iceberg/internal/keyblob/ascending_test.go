package keyblob

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestJoinAscending builds the index of ascending keys from parts cut at
// random rows (block boundaries or not, parts shorter than a block), added in
// random batches and joined in any order: it must equal Encode's, byte for byte.
// Parts that leave a gap, overlap, or whose keys descend where they meet give
// no index.
func TestJoinAscending(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 511, 512, 513, 1024, 5000, 20000} {
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = int64(i) * 3
			if i > 0 && r.IntN(4) == 0 {
				keys[i] = keys[i-1] // ties
			}
		}
		want := Encode(keys)
		for trial := range 20 {
			cuts := []int{0, n}
			for range r.IntN(6) {
				cuts = append(cuts, r.IntN(n+1))
			}
			if trial%3 == 0 {
				cuts = append(cuts, min(n, DefaultBlockSize), min(n, DefaultBlockSize*2+1))
			}
			slices.Sort(cuts)
			cuts = slices.Compact(cuts)
			var parts []*Ascending
			for i := 0; i+1 < len(cuts); i++ {
				a := NewAscending(int64(cuts[i]))
				for lo := cuts[i]; lo < cuts[i+1]; {
					hi := min(cuts[i+1], lo+1+r.IntN(700))
					if !a.Add(int64(lo), keys[lo:hi]) {
						t.Fatalf("n=%d: add of ascending keys refused", n)
					}
					lo = hi
				}
				parts = append(parts, a)
			}
			r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
			got, ok := JoinAscending(append(parts, nil), int64(n))
			if !ok || !slices.Equal(got, want) {
				t.Fatalf("n=%d cuts %v: joined index differs from Encode's (ok=%v)", n, cuts, ok)
			}
			if _, ok := JoinAscending(parts, int64(n+1)); ok {
				t.Fatalf("n=%d: parts short of the rows joined", n)
			}
			if len(parts) > 1 {
				if _, ok := JoinAscending(parts[1:], int64(n)); ok {
					t.Fatalf("n=%d cuts %v: parts with a gap joined", n, cuts)
				}
			}
		}
	}
	// Descending keys within a part, and where two parts meet.
	a := NewAscending(0)
	if a.Add(0, []int64{1, 2, 3, 2}) {
		t.Fatal("descending keys added")
	}
	p0, p1 := NewAscending(0), NewAscending(3)
	p0.Add(0, []int64{5, 6, 7})
	p1.Add(3, []int64{6, 8})
	if _, ok := JoinAscending([]*Ascending{p0, p1}, 5); ok {
		t.Fatal("parts whose keys descend where they meet joined")
	}
	if NewAscending(0).Add(1, []int64{1}) {
		t.Fatal("rows not following the part's added")
	}
}
