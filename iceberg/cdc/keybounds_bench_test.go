package cdc

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkColdKeyIndexSorted compares a cold worker's key index on a 1,000,000-row
// table in ten files whose ids are shuffled across them (as CDC writes leave a table)
// with the same rows in ten files of disjoint, sorted id ranges (as compaction
// writes them), in the same run: the whole build (Warm), a first window of 10,000
// keys among the newest 5% of ids (recent rows, which CDC updates most) and one of
// 10,000 random keys. It reports each layout's seconds and key-column bytes read per
// operation and the sorted/unsorted ratios.
func BenchmarkColdKeyIndexSorted(b *testing.B) {
	const n = 1_000_000
	rows := cityRows(n)
	sorted := newFixture(b, nil, "cold_sorted")
	sorted.seed(b, rows, n/10)
	rand.New(rand.NewPCG(3, 4)).Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	unsorted := newFixture(b, nil, "cold_unsorted")
	unsorted.seed(b, rows, n/10)
	rng := rand.New(rand.NewPCG(5, 6))
	recent, random := make([][]any, 10_000), make([][]any, 10_000)
	for i := range recent {
		recent[i] = []any{int64(n - rng.IntN(n/20))}
		random[i] = []any{int64(1 + rng.IntN(n))}
	}
	for _, tc := range []struct {
		name string
		keys [][]any // nil: the whole build
	}{{"build", nil}, {"recent_10k", recent}, {"random_10k", random}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var secs, bytes [2]float64
			for range b.N {
				for i, f := range []*fixture{sorted, unsorted} {
					d, read := coldIndex(b, f, tc.keys)
					secs[i] += d.Seconds()
					bytes[i] += float64(read)
				}
			}
			b.ReportMetric(secs[0]/float64(b.N), "s/op-sorted")
			b.ReportMetric(secs[1]/float64(b.N), "s/op-unsorted")
			b.ReportMetric(secs[0]/secs[1], "time-sorted/unsorted")
			b.ReportMetric(bytes[0]/float64(b.N), "key-B/op-sorted")
			b.ReportMetric(bytes[1]/float64(b.N), "key-B/op-unsorted")
		})
	}
}

// coldIndex times a fresh key index of f's table: its whole build when keys is nil,
// else a first resolution of keys. It returns the time and the key-column bytes read.
func coldIndex(b *testing.B, f *fixture, keys [][]any) (time.Duration, int64) {
	b.Helper()
	ctx := context.Background()
	tbl := f.table(b)
	codec, err := newKeyCodec(tbl.Schema(), []string{"id"})
	if err != nil {
		b.Fatal(err)
	}
	x := newKeyIndex(codec, 1<<30, 1)
	start := time.Now()
	if keys == nil {
		if err := x.sync(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		_, read, err := x.load(ctx, tbl, nil, 0)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), read
	}
	ks, err := newKeySet(codec, keys)
	if err != nil {
		b.Fatal(err)
	}
	res, ok, err := x.resolve(ctx, tbl, ks, true)
	if err != nil || !ok || res.Found() != len(ks.keys) {
		b.Fatalf("found %d of %d keys (%v, %v)", res.Found(), len(ks.keys), ok, err)
	}
	return time.Since(start), res.KeyBytes
}
