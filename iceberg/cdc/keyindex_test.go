package cdc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyrun"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestKeyIndexMatchesBruteForce resolves random keys (some absent, some deleted,
// a duplicate) with the index, single and composite, against every live row; then
// follows the table through commits: at the same snapshot no data file is read, and
// after a commit only the files it added.
func TestKeyIndexMatchesBruteForce(t *testing.T) {
	f := shuffledCities(t, "index", 3)
	tbl := f.table(t)
	files := len(icebergtest.DataFiles(t, tbl))
	rng := rand.New(rand.NewPCG(5, 6))
	keys, want := randomIDKeys(rng, 700, 7000, 10, 5000, 10)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	ctx := context.Background()
	res, err := r.Resolve(ctx, tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] }))
	if res.SnapshotID != tbl.CurrentSnapshot().SnapshotID || len(res.Keys) != len(want) {
		t.Fatalf("snapshot %d, %d keys (want %d)", res.SnapshotID, len(res.Keys), len(want))
	}
	for _, fh := range res.Files {
		for i, p := range fh.Positions {
			if got := res.Keys[fh.KeyIndexes[i]][0].(int64); !want[got] {
				t.Fatalf("%s@%d: key %d was not asked for", fh.Path, p, got)
			}
		}
	}
	// The same snapshot again: lookups only.
	again, err := r.Resolve(ctx, tbl, keys[:50])
	if err != nil || len(again.Scanned) != 0 {
		t.Fatalf("second resolution read %v (%v)", again.Scanned, err)
	}
	// Composite keys share nothing with the id index (another index) and are exact too.
	pairs := map[string]bool{}
	var ckeys [][]any
	states := []string{"CA", "TX", "WA", "NY", "OR"}
	for range 300 {
		id := int64(rng.IntN(6000) + 1)
		st := states[rng.IntN(len(states))]
		pairs[fmt.Sprint(st, id)] = true
		ckeys = append(ckeys, []any{st, id})
	}
	cres, err := Resolver{KeyColumns: []string{"state", "id"}, IndexBytes: 64 << 20}.Resolve(ctx, tbl, ckeys)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, cres.Positions(), bruteForce(t, tbl, func(id int64, st string) bool { return pairs[fmt.Sprint(st, id)] }))
	if len(cres.Scanned) != files {
		t.Fatalf("composite index built from %d files, want %d", len(cres.Scanned), files)
	}

	// A commit adding one data file (and DVs): the next resolution reads that file only.
	f.apply(t, []row.Row{change("c", 9001, "n", "CA", 2), change("d", 12, "", "", 2), change("b", 13, "", "", 2), change("u", 13, "x", "CA", 2)}, false)
	tbl = f.table(t)
	if n := len(icebergtest.DataFiles(t, tbl)); n != files+1 {
		t.Fatalf("%d data files after the commit, want %d", n, files+1)
	}
	want[9001], want[13] = true, true
	keys = append(keys, []any{int64(9001)}, []any{int64(13)}, []any{int64(12)})
	res, err = r.Resolve(ctx, tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scanned) != 1 {
		t.Fatalf("after a commit of one data file the index read %v", res.Scanned)
	}
	samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] || id == 12 }))

	// Over the budget: no index, keys resolved by reading the data files.
	small, err := Resolver{KeyColumns: []string{"id"}, IndexBytes: 1000 * IndexEntryBytes}.Resolve(ctx, tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, small.Positions(), res.Positions())
	if len(small.Scanned) == 0 || small.tasks == nil {
		t.Fatalf("over budget: read %d files", len(small.Scanned))
	}
}

// TestKeyIndexFollowsSnapshots: a table loaded before the index's snapshot is
// answered at the index's snapshot; a rollback of main moves the index back; a
// rewrite that replaces data files is followed by reading only the new files.
func TestKeyIndexFollowsSnapshots(t *testing.T) {
	f := newFixture(t, nil, "follow", indexed(64<<20))
	f.seed(t, cityRows(1000), 250)
	old := f.table(t)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	ctx := context.Background()
	f.apply(t, []row.Row{change("c", 2000, "n", "CA", 1), change("d", 5, "", "", 1)}, false)
	cur := f.table(t)
	res, err := r.Resolve(ctx, cur, [][]any{{int64(5)}, {int64(2000)}, {int64(6)}})
	if err != nil || res.Found() != 2 {
		t.Fatalf("found %d (%v)", res.Found(), err)
	}
	stale, err := r.Resolve(ctx, old, [][]any{{int64(5)}, {int64(2000)}})
	if err != nil || stale.SnapshotID != cur.CurrentSnapshot().SnapshotID || stale.Found() != 1 {
		t.Fatalf("stale table: snapshot %d, found %d (%v)", stale.SnapshotID, stale.Found(), err)
	}
	// Roll main back to the seed's snapshot: 5 is live again and 2000 absent.
	if _, _, err := f.cat.Catalog.CommitTable(ctx, f.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate(table.MainBranch, old.CurrentSnapshot().SnapshotID, table.BranchRef, 0, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	back := f.table(t)
	res, err = r.Resolve(ctx, back, [][]any{{int64(5)}, {int64(2000)}})
	if err != nil || res.SnapshotID != old.CurrentSnapshot().SnapshotID {
		t.Fatalf("after rollback: %+v (%v)", res, err)
	}
	samePositions(t, res.Positions(), bruteForce(t, back, func(id int64, _ string) bool { return id == 5 || id == 2000 }))
	if res.Found() != 1 {
		t.Fatalf("after rollback found %d, want id 5 only", res.Found())
	}
}

// TestConcurrentRewriteIndexed is TestConcurrentRewrite with the key index: the
// committer's refresh finds the keys in the rewritten file.
func TestConcurrentRewriteIndexed(t *testing.T) {
	testConcurrentRewrite(t, indexed(64<<20))
}

// BenchmarkKeyIndex builds the index of a 1,000,000-row table in 10 data files
// (key: one long column), then resolves 10,000 random keys with it; it reports the
// index's bytes per indexed row (its arrays) and the heap growth per row while it
// is built and held (noisy: other garbage is collected in between), the build time
// (a cold start or a worker restart) and the lookup time.
func BenchmarkKeyIndex(b *testing.B) {
	for _, kind := range []string{"long", "string"} {
		b.Run(kind, func(b *testing.B) {
			f := newFixture(b, nil, "bench_index_"+kind)
			f.seed(b, cityRows(1_000_000), 100_000)
			tbl := f.table(b)
			cols := []string{"id"}
			if kind == "string" {
				cols = []string{"city"} // city-<id>: unique strings, fingerprinted
			}
			codec, err := newKeyCodec(tbl.Schema(), cols)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([][]any, 10_000)
			for i := range keys {
				id := int64(rng.IntN(1_000_000))
				keys[i] = []any{id}
				if kind == "string" {
					keys[i] = []any{fmt.Sprintf("city-%d", id)}
				}
			}
			ks, err := newKeySet(codec, keys)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var build, lookup time.Duration
			var perRow, heapPerRow float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				x := newKeyIndex(codec, 1<<30, 1)
				start := time.Now()
				x.mu.Lock()
				if err := x.sync(ctx, tbl); err != nil {
					b.Fatal(err)
				}
				if _, _, err := x.load(ctx, tbl, nil, 0); err != nil {
					b.Fatal(err)
				}
				x.mu.Unlock()
				build += time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perRow = float64(x.Bytes()) / float64(x.Entries())
				heapPerRow = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(x.Entries())
				start = time.Now()
				res, ok, err := x.resolve(ctx, tbl, ks, true)
				if err != nil || !ok || res.Found() != len(ks.keys) {
					b.Fatalf("found %d of %d (%v %v)", res.Found(), len(ks.keys), ok, err)
				}
				lookup += time.Since(start)
				runtime.KeepAlive(x)
			}
			b.ReportMetric(perRow, "index-B/row")
			b.ReportMetric(heapPerRow, "heap-B/row")
			b.ReportMetric(build.Seconds()/float64(b.N), "s/build")
			b.ReportMetric(float64(lookup.Microseconds())/float64(b.N)/1000, "ms/10k-lookups")
		})
	}
}

// TestKeyIndexWarm: Warm builds the worker's index from the live data files in the
// background; the resolution that follows waits for it, reads no data file itself,
// reports the files the warm-up read (once) and finds exactly the live rows.
func TestKeyIndexWarm(t *testing.T) {
	f := newFixture(t, nil, "warm") // the fixture resolves without an index: Warm makes it
	f.seed(t, cityRows(3000), 500)
	f.apply(t, []row.Row{change("d", 7, "", "", 1), change("d", 2500, "", "", 1)}, false)
	tbl := f.table(t)
	files := len(icebergtest.DataFiles(t, tbl))
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	r.Warm(tbl)
	r.Warm(tbl) // while the first warm-up runs, or after it: nothing more to read
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		t.Fatal(err)
	}
	x := indexFor(tbl, codec, r.IndexBytes, 1)
	if n := x.Entries(); n != 2998 { // waits for the warm-up
		t.Fatalf("warmed index holds %d rows, want the 2998 live ones", n)
	}
	keys := [][]any{{int64(7)}, {int64(8)}, {int64(2500)}, {int64(2999)}, {int64(4000)}}
	res, err := r.Resolve(context.Background(), tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scanned) != files {
		t.Fatalf("first resolution reports %d data files read, want the %d the warm-up read", len(res.Scanned), files)
	}
	samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return id == 8 || id == 2999 }))
	again, err := r.Resolve(context.Background(), tbl, keys)
	if err != nil || len(again.Scanned) != 0 {
		t.Fatalf("second resolution reports %v read (%v)", again.Scanned, err)
	}

	// Without a budget there is no index to warm.
	Resolver{KeyColumns: []string{"state"}}.Warm(tbl)
	indexes.Lock()
	for id := range indexes.m {
		if strings.Contains(id, "\x00state:") {
			t.Errorf("Warm without a budget made index %q", id)
		}
	}
	indexes.Unlock()
}

// shuffledCities is a partitioned, indexed fixture of 6,000 city rows in a
// shuffled order (by seed), 400 a file, whose ids 10, 11 and 5000 were deleted.
func shuffledCities(t *testing.T, name string, seed uint64) *fixture {
	t.Helper()
	f := newFixture(t, nil, name, partitioned(), indexed(64<<20))
	rows := cityRows(6000)
	rand.New(rand.NewPCG(seed, seed+1)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	f.seed(t, rows, 400)
	f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1), change("d", 5000, "", "", 1)}, false)
	return f
}

// randomIDKeys returns the keys of ids (one long column each), then of n ids drawn
// from [0, below), and the set of all of them.
func randomIDKeys(rng *rand.Rand, n, below int, ids ...int64) ([][]any, map[int64]bool) {
	want := map[int64]bool{}
	var keys [][]any
	add := func(id int64) {
		want[id] = true
		keys = append(keys, []any{id})
	}
	for _, id := range ids {
		add(id)
	}
	for range n {
		add(int64(rng.IntN(below)))
	}
	return keys, want
}

// resolveChecked resolves keys (ids) in tbl with r and requires exactly the live
// rows of the ids in want; it returns the resolution and the worker's index it used.
func resolveChecked(t *testing.T, r Resolver, tbl *table.Table, keys [][]any, want map[int64]bool) (*Resolution, *KeyIndex) {
	t.Helper()
	res, err := r.Resolve(context.Background(), tbl, keys)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] }))
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		t.Fatal(err)
	}
	return res, indexFor(tbl, codec, r.IndexBytes, max(r.IndexParts, 1))
}

// TestKeyIndexLargeFile: a data file of more rows than an index batch goes to the
// partitions a chunk at a time (addLarge): the index holds each live row once and
// resolves keys exactly, with one partition or four, and follows a later commit.
func TestKeyIndexLargeFile(t *testing.T) {
	defer func(old int64) { minIndexBatch = old }(minIndexBatch)
	minIndexBatch = 4000
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprint(parts, " parts"), func(t *testing.T) {
			// Pages of 500 rows, row groups of 1000: the index reads the file in steps.
			f := newFixture(t, nil, fmt.Sprint("large", parts), tableProps(map[string]string{
				table.ParquetPageRowLimitKey: "500", table.ParquetRowGroupLimitKey: "1000"}))
			rows := cityRows(6000)
			rand.New(rand.NewPCG(11, 12)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
			f.seed(t, rows, len(rows)) // one data file of 6000 rows: a chunk of 4000, then the rest
			f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1), change("d", 5000, "", "", 1)}, false)
			tbl := f.table(t)
			if n := len(icebergtest.DataFiles(t, tbl)); n != 1 {
				t.Fatalf("%d data files, want the one seeded", n)
			}
			budget := int64(500) * IndexEntryBytes
			r := Resolver{KeyColumns: []string{"id"}, IndexBytes: budget, IndexParts: parts}
			keys, want := randomIDKeys(rand.New(rand.NewPCG(13, 14)), 500, 6500)
			_, x := resolveChecked(t, r, tbl, keys, want)
			if n := x.Entries(); n != 5997 {
				t.Fatalf("index holds %d rows, want the 5997 live ones", n)
			}

			// A commit of one more data file: read alone, lookups exact.
			f.apply(t, []row.Row{change("c", 9001, "n", "CA", 2), change("d", 12, "", "", 2), change("u", 13, "x", "CA", 2)}, false)
			tbl = f.table(t)
			want[9001], want[13], want[12] = true, true, true
			keys = append(keys, []any{int64(9001)}, []any{int64(13)}, []any{int64(12)})
			if res, _ := resolveChecked(t, r, tbl, keys, want); len(res.Scanned) != 1 {
				t.Fatalf("after a commit of one data file the index read %v", res.Scanned)
			}
		})
	}
}

// TestKeyIndexBatches: a table of more rows than an index batch is read a batch of
// files at a time, each batch added while the next is read, with a file larger
// than a batch read alone in between (addLarge): the index holds each live row once
// under its file's ordinal and resolves keys exactly, with one partition or four.
func TestKeyIndexBatches(t *testing.T) {
	defer func(old int64) { minIndexBatch = old }(minIndexBatch)
	minIndexBatch = 1000
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprint(parts, " parts"), func(t *testing.T) {
			f := newFixture(t, nil, fmt.Sprint("batches", parts))
			rows := cityRows(6000)
			rand.New(rand.NewPCG(15, 16)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
			f.seed(t, rows[:4000], 250) // 16 files: batches of four
			f.seed(t, rows[4000:], 2000)
			f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 4000, "", "", 1)}, false)
			tbl := f.table(t)
			budget := int64(500) * IndexEntryBytes
			r := Resolver{KeyColumns: []string{"id"}, IndexBytes: budget, IndexParts: parts}
			keys, want := randomIDKeys(rand.New(rand.NewPCG(17, 18)), 800, 6500, 10, 4000)
			_, x := resolveChecked(t, r, tbl, keys, want)
			if n := x.Entries(); n != 5998 {
				t.Fatalf("index holds %d rows, want the 5998 live ones", n)
			}
			files := icebergtest.DataFiles(t, tbl)
			for _, df := range files {
				ord, ok := x.ordinal[df.FilePath()]
				if !ok || x.files[ord].path != df.FilePath() {
					t.Fatalf("%s: ordinal %d (%v) names %q", df.FilePath(), ord, ok, x.files[ord].path)
				}
			}
			if len(x.files) != len(files) {
				t.Fatalf("index has %d files, the table %d", len(x.files), len(files))
			}
		})
	}
}

// TestKeyIndexPartitionsPastBudget: an index in as many partitions as shards holds in
// memory only the partitions of the keys a worker resolves (a key's partition is the
// shard the sink gives it), and a table past the budget costs lookups in the local
// spill file, never a read of the key columns again: results stay exact, and a second
// resolution at the same snapshot reads no data file and no key column byte.
func TestKeyIndexPartitionsPastBudget(t *testing.T) {
	f := newFixture(t, nil, "parts", partitioned(), indexed(64<<20))
	f.seed(t, cityRows(8000), 500)
	f.apply(t, []row.Row{change("d", 10, "", "", 1), change("d", 11, "", "", 1)}, false)
	tbl := f.table(t)
	const parts = 4
	shardOf := func(id int64) int { // the shard the sink's parser and sharder give id
		kb, err := f.parser.AppendKey(nil, []any{id})
		if err != nil {
			t.Fatal(err)
		}
		return Shard(kb, parts)
	}
	liveInShard := make([]int64, parts)
	for id := int64(1); id <= 8000; id++ {
		if id != 10 && id != 11 {
			liveInShard[shardOf(id)]++
		}
	}
	// A budget of one and a half partitions: one fits, two do not.
	budget := (liveInShard[0] + liveInShard[0]/2) * IndexEntryBytes
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: budget, IndexParts: parts}
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 10))
	var shard0, all [][]any
	want0, wantAll := map[int64]bool{}, map[int64]bool{}
	for range 600 {
		id := int64(rng.IntN(9000))
		all, wantAll[id] = append(all, []any{id}), true
		if shardOf(id) == 0 {
			shard0, want0[id] = append(shard0, []any{id}), true
		}
	}

	// A worker holding shard 0: its partition in memory, the others on disk.
	res, err := r.Resolve(ctx, tbl, shard0)
	if err != nil {
		t.Fatal(err)
	}
	samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want0[id] }))
	x := indexFor(tbl, codec, budget, parts)
	if held, total := x.Held(), int64(x.Entries()); held != liveInShard[0] || total != 7998 {
		t.Fatalf("index holds %d rows in memory and %d in all, want shard 0's %d and the 7998 live ones", held, total, liveInShard[0])
	}
	if res.KeyBytes == 0 || len(res.Scanned) == 0 || res.IndexTime <= 0 {
		t.Fatalf("the first resolution read %d files, %d key column bytes in %v: it built the index", len(res.Scanned), res.KeyBytes, res.IndexTime)
	}

	// Keys of every shard, past the budget: exact, from memory and the spill file.
	for round := range 2 {
		res, err = r.Resolve(ctx, tbl, all)
		if err != nil {
			t.Fatal(err)
		}
		samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return wantAll[id] }))
		if len(res.Scanned) != 0 || res.KeyBytes != 0 {
			t.Fatalf("round %d at the same snapshot read %v, %d key column bytes", round, res.Scanned, res.KeyBytes)
		}
		if res.SpillBytes == 0 {
			t.Fatalf("round %d: no spill block read, yet the budget holds at most %d of %d rows", round, budget/IndexEntryBytes, x.Entries())
		}
		if held := x.Held(); held > budget/IndexEntryBytes {
			t.Fatalf("round %d: %d rows in memory, past the budget of %d", round, held, budget/IndexEntryBytes)
		}
	}
}

// TestRouteExactKeys: the partition of an exact key's entry is the shard the sink
// gives the key (Shard of its encoding), for keys of 8 and 4 bytes, and route
// keeps each partition's entries in their order, whether one goroutine or several
// (past 65,536 entries) scatter them.
func TestRouteExactKeys(t *testing.T) {
	for _, tc := range []struct {
		typ   ibg.Type
		width int
	}{{ibg.PrimitiveTypes.Int64, 8}, {ibg.PrimitiveTypes.Int32, 8}, {ibg.PrimitiveTypes.Date, 4}} {
		sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: tc.typ, Required: true})
		codec, err := newKeyCodec(sc, []string{"id"})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1000, 200_000} {
			const parts = 7
			x := newKeyIndex(codec, 1<<30, parts)
			if !x.exact || x.width != tc.width {
				t.Fatalf("%v: exact %v width %d", tc.typ, x.exact, x.width)
			}
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			es := make([]indexEntry, n)
			want := make([][]indexEntry, parts)
			for i := range es {
				v := rng.Uint64()
				if tc.width == 4 {
					v &^= 1<<32 - 1 // a 4-byte key is left-aligned
				}
				es[i] = indexEntry{FP: v, Loc: uint64(i)}
				var b [8]byte
				binary.BigEndian.PutUint64(b[:], v)
				q := Shard(b[:tc.width], parts)
				want[q] = append(want[q], es[i])
			}
			got := x.route([][]indexEntry{es})
			for q := range parts {
				if g := slices.Concat(got[q]...); !slices.Equal(g, want[q]) {
					t.Fatalf("%v, %d entries: partition %d holds %d entries, want %d in order", tc.typ, n, q, len(g), len(want[q]))
				}
			}
		}
	}
}

// TestKeyIndexColdBuildKeepsPartitions: a cold build of an index in partitions
// keeps those that fit the budget in memory (an index within its budget writes no
// spill file, so the first resolution reads none back), and a partition a worker
// then resolves takes the place of partitions it does not resolve: its lookups
// read no spill block, and memory stays within the budget.
func TestKeyIndexColdBuildKeepsPartitions(t *testing.T) {
	f := newFixture(t, nil, "coldparts", partitioned())
	f.seed(t, cityRows(8000), 500)
	tbl := f.table(t)
	const parts = 4
	shardOf := func(id int64) int {
		kb, err := f.parser.AppendKey(nil, []any{id})
		if err != nil {
			t.Fatal(err)
		}
		return Shard(kb, parts)
	}
	inShard := make([]int64, parts)
	var keys2 [][]any
	want2 := map[int64]bool{}
	for id := int64(1); id <= 8000; id++ {
		q := shardOf(id)
		inShard[q]++
		if q == 2 && id%7 == 0 {
			keys2, want2[id] = append(keys2, []any{id}), true
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		budget int64 // entries
	}{{"fits", 8000}, {"one and a half partitions", inShard[2] + inShard[2]/2}} {
		t.Run(tc.name, func(t *testing.T) {
			codec, err := newKeyCodec(tbl.Schema(), []string{"id"})
			if err != nil {
				t.Fatal(err)
			}
			x := newKeyIndex(codec, tc.budget*IndexEntryBytes, parts)
			x.mu.Lock()
			if err := x.sync(ctx, tbl); err == nil {
				_, _, err = x.load(ctx, tbl, nil, 0) // the warm-up's build
			}
			x.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if tc.budget >= 8000 {
				if x.Held() != 8000 || x.spill != nil {
					t.Fatalf("cold build within the budget holds %d of 8000 rows in memory (spill file %v)", x.Held(), x.spill != nil)
				}
			} else if x.Held() == 0 || x.Held() > tc.budget {
				t.Fatalf("cold build holds %d rows in memory, want some, at most the budget's %d", x.Held(), tc.budget)
			}
			ks, err := newKeySet(codec, keys2)
			if err != nil {
				t.Fatal(err)
			}
			res, ok, err := x.resolve(ctx, tbl, ks, true)
			if err != nil || !ok {
				t.Fatalf("resolve: %v %v", ok, err)
			}
			samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want2[id] }))
			if res.SpillBytes != 0 || !x.part[2].mem {
				t.Fatalf("partition 2, resolved, in memory %v; its lookups read %d spill bytes", x.part[2].mem, res.SpillBytes)
			}
			if x.Held() > tc.budget {
				t.Fatalf("%d rows in memory, past the budget of %d", x.Held(), tc.budget)
			}
		})
	}
}

// TestFindMainAndDelta: find, fed fingerprints in ascending order, reports every
// entry of each (duplicates in main and delta included).
func TestFindMainAndDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	es := make([]indexEntry, 5000)
	for i := range es {
		es[i] = indexEntry{FP: uint64(rng.IntN(3000)), Loc: uint64(i)}
	}
	keyrun.Sort(es)
	x := &KeyIndex{parts: 1, part: []indexPart{{mem: true, main: es[:4000], delta: slices.Clone(es[4000:])}}}
	keyrun.Sort(x.part[0].delta)
	l := &lookups{mem: make([][2]int, 1), runs: make([][]keyrun.RunCursor, 1)}
	var got []uint64
	for fp := range uint64(3100) {
		if err := x.find(l, fp, func(loc uint64) { got = append(got, loc) }); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	for i, loc := range got {
		if loc != uint64(i) {
			t.Fatalf("find reported %d locations, want each of 5000 once", len(got))
		}
	}
	if len(got) != len(es) {
		t.Fatalf("find reported %d locations, want 5000", len(got))
	}
}

// TestSpillRunsTiered: a spilled partition that gets a small run a window (a CDC
// commit's new file) after the large runs of its cold build merges the small
// runs among themselves, not each into a large run: the entries written to the
// spill file stay within a few times those added (merging the two shortest runs
// wrote 115,760 for these 9,000), and every entry stays findable.
func TestSpillRunsTiered(t *testing.T) {
	sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true})
	codec, err := newKeyCodec(sc, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	x := newKeyIndex(codec, 1<<20, 1)
	defer x.reset()
	var loc uint64
	run := func(n int) []indexEntry {
		es := make([]indexEntry, n)
		for i := range es {
			es[i] = indexEntry{FP: loc * 7, Loc: loc}
			loc++
		}
		return es
	}
	for _, n := range append(slices.Repeat([]int{1000}, 8), slices.Repeat([]int{10}, 100)...) {
		if err := x.spillRun(0, run(n)); err != nil {
			t.Fatal(err)
		}
	}
	if runs := len(x.part[0].runs); runs > keyrun.MaxRuns {
		t.Fatalf("%d runs, want at most %d", runs, keyrun.MaxRuns)
	}
	if written := x.spill.Size / IndexEntryBytes; written > 3*int64(loc) {
		t.Fatalf("%d entries written to the spill file for %d added", written, loc)
	}
	l := &lookups{mem: make([][2]int, 1), runs: make([][]keyrun.RunCursor, 1)}
	x.part[0].mem = false
	var got []uint64
	for fp := uint64(0); fp < loc*7; fp += 7 {
		if err := x.find(l, fp, func(at uint64) { got = append(got, at) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != int(loc) {
		t.Fatalf("found %d of %d entries", len(got), loc)
	}
}
