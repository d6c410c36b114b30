package cdc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// peakHeap samples runtime.MemStats.HeapInuse until stop is called and returns the
// peak seen.
func peakHeap() (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkSorter2M sorts 2,000,000 changes (8-byte keys, 48-byte rows) with a
// 64 MiB limit and reports the peak HeapInuse.
func BenchmarkSorter2M(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		runtime.GC()
		stop := peakHeap()
		s := NewSorterMB(64)
		rng := rand.New(rand.NewPCG(1, 1))
		key := make([]byte, 8)
		body := make([]byte, 48)
		for i := range 2_000_000 {
			binary.BigEndian.PutUint64(key, rng.Uint64()%1_000_000)
			binary.LittleEndian.PutUint64(body, uint64(i))
			if err := s.Add(key, int64(i), Kind(1+i%4), body); err != nil {
				b.Fatal(err)
			}
		}
		n := 0
		for _, err := range s.Sorted() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		spills := s.Spills()
		s.Close()
		peak := stop()
		if n != 2_000_000 {
			b.Fatalf("%d records", n)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(spills), "spills")
	}
}

// bigTable creates db.<name> with n rows (id 1..n, city a random UUID string,
// state) in files of 100,000 rows, and returns its fixture and the cities by id.
func bigTable(b *testing.B, cat *icebergtest.LocalCatalog, name string, n int, opts ...fixtureOpt) (*fixture, []string) {
	f := newFixture(b, cat, name, opts...)
	rng := rand.New(rand.NewPCG(7, 7))
	cities := make([]string, n+1)
	rows := make([][]any, n)
	states := []string{"CA", "TX", "WA", "NY", "OR"}
	for i := range rows {
		var u uuid.UUID
		binary.LittleEndian.PutUint64(u[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(u[8:], rng.Uint64())
		id := int64(i + 1)
		cities[id] = u.String()
		rows[i] = []any{id, cities[id], states[i%len(states)]}
	}
	f.seed(b, rows, 100_000)
	return f, cities
}

// BenchmarkResolve resolves 10,000 keys against a 1,000,000-row table: sequential
// long keys (min/max pruning keeps one file) and random UUID-like string keys (no
// pruning possible).
func BenchmarkResolve(b *testing.B) {
	f, cities := bigTable(b, nil, "resolve_bench", 1_000_000)
	tbl := f.table(b)
	const nkeys = 10_000
	seq := make([][]any, nkeys)
	for i := range seq {
		seq[i] = []any{int64(400_001 + i)}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	rnd := make([][]any, nkeys)
	for i := range rnd {
		rnd[i] = []any{cities[1+rng.IntN(1_000_000)]}
	}
	for _, tc := range []struct {
		name string
		col  string
		keys [][]any
	}{{"sequential", "id", seq}, {"random_uuid", "city", rnd}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var res *Resolution
			for range b.N {
				var err error
				if res, err = Resolve(context.Background(), tbl, []string{tc.col}, tc.keys); err != nil {
					b.Fatal(err)
				}
			}
			if res.Found() < nkeys*9/10 {
				b.Fatalf("found %d of %d", res.Found(), nkeys)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nkeys), "ns/key")
			b.ReportMetric(float64(len(res.Scanned)), "files-read")
		})
	}
}

// BenchmarkCommitAndScan commits a window of 10,000 changes (1% of a 1,000,000-row
// table: 5,000 deletes, 5,000 upserts) in dv and equality mode, then times full
// scans of each table against a clean table holding the same rows.
func BenchmarkCommitAndScan(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime=1x")
	}
	cat := icebergtest.NewLocalCatalog(b)
	rng := rand.New(rand.NewPCG(11, 11))
	perm := rng.Perm(1_000_000)[:10_000]
	var changes []row.Row
	for i, p := range perm {
		id := int64(p + 1)
		if i%2 == 0 {
			changes = append(changes, change("d", id, "", "", 1))
		} else {
			changes = append(changes, change("u", id, fmt.Sprintf("updated-%d", id), "NY", 1))
		}
	}
	ctx := context.Background()
	scan := func(f *fixture) time.Duration {
		tbl := f.table(b)
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			at, err := tbl.Scan().ToArrowTable(ctx)
			if err != nil {
				b.Fatal(err)
			}
			best = min(best, time.Since(start))
			if at.NumRows() != 995_000 {
				b.Fatalf("%d rows", at.NumRows())
			}
			at.Release()
		}
		return best
	}
	var final [][]any
	for _, mode := range []struct {
		name string
		opts []fixtureOpt
	}{{"dv", nil}, {"equality", []fixtureOpt{equality()}}} {
		f, cities := bigTable(b, cat, "commit_"+mode.name, 1_000_000, mode.opts...)
		f.shards = 4
		start := time.Now()
		w := f.prepare(b, changes, true)
		prep := time.Since(start)
		start = time.Now()
		res := f.commit(b, w)
		commit := time.Since(start)
		b.ReportMetric(float64(prep.Milliseconds()), mode.name+"-prepare-ms")
		b.ReportMetric(float64(commit.Milliseconds()), mode.name+"-commit-ms")
		b.ReportMetric(float64(scan(f).Milliseconds()), mode.name+"-scan-ms")
		_ = res
		if final == nil {
			deleted, updated := map[int64]bool{}, map[int64]bool{}
			for i, p := range perm {
				deleted[int64(p+1)] = i%2 == 0
				updated[int64(p+1)] = i%2 == 1
			}
			states := []string{"CA", "TX", "WA", "NY", "OR"}
			for i := range 1_000_000 {
				id := int64(i + 1)
				switch {
				case updated[id]:
					final = append(final, []any{id, fmt.Sprintf("updated-%d", id), "NY"})
				case !deleted[id]:
					final = append(final, []any{id, cities[id], states[i%len(states)]})
				}
			}
		}
	}
	clean := newFixture(b, cat, "clean")
	clean.seed(b, final, 100_000)
	b.ReportMetric(float64(scan(clean).Milliseconds()), "clean-scan-ms")
}
