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

// BenchmarkColdKeysOneFile compares a cold resolution of 10,000 keys in a table of
// one 2,000,000-row data file of 20 row groups, with the rows in id order (as an
// append of increasing ids, or a compaction sorted by the key, leaves them) and
// shuffled, in the same run: keys among the newest 5% of ids (recent rows, which
// CDC updates most) and random keys. A row group whose id statistics hold none of
// the keys is not read (keySet.outside), so recent keys in the ordered file read
// one row group of 20; random keys read every row group of either file. It reports
// each layout's seconds and key-column bytes read per operation.
func BenchmarkColdKeysOneFile(b *testing.B) {
	const n = 2_000_000
	rows := cityRows(n)
	props := tableProps(map[string]string{"write.parquet.row-group-limit": "100000"})
	ordered := newFixture(b, nil, "one_ordered", props)
	ordered.seed(b, rows, n)
	rand.New(rand.NewPCG(3, 4)).Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	shuffled := newFixture(b, nil, "one_shuffled", props)
	shuffled.seed(b, rows, n)
	rng := rand.New(rand.NewPCG(5, 6))
	recent, random := make([][]any, 10_000), make([][]any, 10_000)
	for i := range recent {
		recent[i] = []any{int64(n - rng.IntN(n/20))}
		random[i] = []any{int64(1 + rng.IntN(n))}
	}
	for _, tc := range []struct {
		name string
		keys [][]any
	}{{"recent_10k", recent}, {"random_10k", random}} {
		b.Run(tc.name, func(b *testing.B) {
			var secs, bytes [2]float64
			for range b.N {
				for i, f := range []*fixture{ordered, shuffled} {
					start := time.Now()
					res, err := Resolver{KeyColumns: []string{"id"}}.Resolve(context.Background(), f.table(b), tc.keys)
					if err != nil || res.Found() != len(res.Keys) {
						b.Fatalf("found %d keys (%v)", res.Found(), err)
					}
					secs[i] += time.Since(start).Seconds()
					bytes[i] += float64(res.KeyBytes)
				}
			}
			b.ReportMetric(secs[0]/float64(b.N), "s/op-ordered")
			b.ReportMetric(secs[1]/float64(b.N), "s/op-shuffled")
			b.ReportMetric(secs[0]/secs[1], "time-ordered/shuffled")
			b.ReportMetric(bytes[0]/float64(b.N), "key-B/op-ordered")
			b.ReportMetric(bytes[1]/float64(b.N), "key-B/op-shuffled")
		})
	}
}
