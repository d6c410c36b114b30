package keyrun

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeRuns: sorted runs of any length (empty ones too), overlapping or
// disjoint, merge into the sorted multiset of their entries, duplicates kept.
func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for c := range 12 {
		// Overlapping runs, then disjoint ones in descending order (files compacted
		// in key order; a run's last fingerprint may equal the next one's first).
		n, disjoint := []int{0, 1, 2, 3, 7, 16}[c%6], c >= 6
		var runs [][]Entry
		var all []Entry
		for i := range n {
			run := make([]Entry, rng.IntN(50)*(i%3))
			base := 0
			if disjoint {
				base = (n - i) * 39
			}
			for j := range run {
				run[j] = Entry{FP: uint64(base + rng.IntN(40)), Loc: uint64(i)<<32 | uint64(j)}
			}
			Sort(run)
			runs = append(runs, run)
			all = append(all, run...)
		}
		got := MergeRuns(runs)
		if len(got) != len(all) || !slices.IsSortedFunc(got, func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) }) {
			t.Fatalf("%d runs: merged %d of %d entries, sorted %v", n, len(got), len(all), slices.IsSortedFunc(got, func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) }))
		}
		byLoc := func(a, b Entry) int { return cmp.Or(cmp.Compare(a.FP, b.FP), cmp.Compare(a.Loc, b.Loc)) }
		slices.SortFunc(got, byLoc)
		slices.SortFunc(all, byLoc)
		if !slices.Equal(got, all) {
			t.Fatalf("%d runs: merged entries differ from the runs'", n)
		}
		// A cold start's two arrays: each sorted, together the runs' entries, the
		// delta no more than a quarter of them.
		main, delta := ColdMerge(runs)
		sorted := func(es []Entry) bool {
			return slices.IsSortedFunc(es, func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) })
		}
		both := slices.SortedFunc(slices.Values(append(slices.Clone(main), delta...)), byLoc)
		if !sorted(main) || !sorted(delta) || !slices.Equal(both, all) || len(delta) > len(all)/4 {
			t.Fatalf("%d runs: cold merge main %d, delta %d entries (sorted %v %v) of %d", n, len(main), len(delta), sorted(main), sorted(delta), len(all))
		}
	}
}

// TestRadixSort: Sort (a radix sort past 1024 entries) orders entries by fingerprint as a stable sort does
// (equal fingerprints keep their order), for random fingerprints, fingerprints that
// share their high bytes (small integers), and a single repeated one.
func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for name, fp := range map[string]func() uint64{
		"random":  rng.Uint64,
		"small":   func() uint64 { return uint64(rng.IntN(5000)) ^ 1<<63 },
		"one key": func() uint64 { return 42 },
	} {
		es := make([]Entry, 20_000)
		for i := range es {
			es[i] = Entry{FP: fp(), Loc: uint64(i)}
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) })
		Sort(es)
		if !slices.Equal(es, want) {
			t.Errorf("%s: radix sorted entries differ from a stable sort", name)
		}
	}
}

// BenchmarkMergeRuns merges the runs of a table after 30 CDC batches: 4 large files
// of 205,000 live keys and 30 of 8,000 (random ids), as bench_merge.sh leaves it.
func BenchmarkMergeRuns(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var runs [][]Entry
	for i := range 34 {
		n := 8_000
		if i%9 == 0 { // spread the large ones among the small
			n = 205_000
		}
		run := make([]Entry, n)
		for j := range run {
			run[j] = Entry{FP: rng.Uint64(), Loc: uint64(i)<<32 | uint64(j)}
		}
		Sort(run)
		runs = append(runs, run)
	}
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			MergeRuns(runs)
		}
	})
	b.Run("cold", func(b *testing.B) { // main and delta, as a cold start builds them
		b.ReportAllocs()
		for b.Loop() {
			ColdMerge(runs)
		}
	})
}

// BenchmarkSortEntries sorts the entries of one file of 1,000,000 rows: "compacted",
// integer keys below 1.2M in 289 sorted runs (a compaction's output of many CDC
// files, as bench_merge.sh --maintain leaves it), and "hashed", random 64-bit
// fingerprints (string or UUID keys).
func BenchmarkSortEntries(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 1_000_000
	compacted := make([]Entry, n)
	for i := range compacted {
		compacted[i] = Entry{FP: uint64(rng.IntN(1_200_000)) ^ 1<<63, Loc: uint64(i)}
	}
	for lo := 0; lo < n; lo += n / 289 {
		run := compacted[lo:min(lo+n/289, n)]
		slices.SortFunc(run, func(a, b Entry) int { return cmp.Compare(a.FP, b.FP) })
	}
	hashed := make([]Entry, n)
	for i := range hashed {
		hashed[i] = Entry{FP: rng.Uint64(), Loc: uint64(i)}
	}
	for name, src := range map[string][]Entry{"compacted": compacted, "hashed": hashed} {
		b.Run(name, func(b *testing.B) {
			es := make([]Entry, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(es, src)
				Sort(es)
			}
		})
	}
}

// TestGallop: Gallop finds, from any starting point at or before it, the first entry
// whose fingerprint is at least fp, as a binary search of the whole array does.
func TestGallop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	es := make([]Entry, 5000)
	for i := range es {
		es[i] = Entry{FP: uint64(rng.IntN(3000)), Loc: uint64(i)}
	}
	Sort(es)
	lower := func(fp uint64) int {
		i, _ := slices.BinarySearchFunc(es, fp, func(e Entry, fp uint64) int { return cmp.Compare(e.FP, fp) })
		return i
	}
	for range 2000 {
		fp := uint64(rng.IntN(3100))
		want := lower(fp)
		from := rng.IntN(want + 1)
		if got := Gallop(es, from, fp); got != want {
			t.Fatalf("Gallop(from %d, fp %d) = %d, want %d", from, fp, got, want)
		}
	}
}
