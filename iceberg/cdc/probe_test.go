package cdc

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// expectKeys expects keys for r's resolutions of the table of tbl, as a batch
// pipeline's parse stage does, and returns the set.
func expectKeys(t *testing.T, r Resolver, f *fixture, keys [][]any) *Expected {
	t.Helper()
	tbl := f.table(t)
	e, err := r.Expect(tbl)
	if err != nil || e == nil {
		t.Fatalf("expect: %v, %v", e, err)
	}
	if addKeys(t, e, keys...) {
		t.Fatalf("the %d keys went past the limit of %d", len(keys), e.limit)
	}
	return e
}

// TestExpectedResolvesByOneScan: when a batch worker expects the keys its shards
// resolve, the first resolution reads the data files once for all of them and
// the others read nothing, each finding exactly the live rows of its own keys;
// the worker's key index is never built, not even by the committer's refresh at
// that snapshot. A key not expected, or a resolution at a later snapshot, goes to
// the key index; the next Add after the scan starts a new set.
func TestExpectedResolvesByOneScan(t *testing.T) {
	f := shuffledCities(t, "expect", 7)
	tbl := f.table(t)
	files := len(icebergtest.DataFiles(t, tbl))
	keys, _ := randomIDKeys(rand.New(rand.NewPCG(9, 10)), 800, 7000, 10, 11, 5000, 6)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20, IndexParts: 4}
	e := expectKeys(t, r, f, keys)
	ctx := context.Background()

	// Four "shards", resolving a quarter of the keys each.
	var first *Resolution
	for s := range 4 {
		part := keys[s*len(keys)/4 : (s+1)*len(keys)/4]
		want := map[int64]bool{}
		for _, k := range part {
			want[k[0].(int64)] = true
		}
		res, idx := resolveChecked(t, r, tbl, part, want)
		if s == 0 {
			first = res
			if res.FilesRead != files || res.KeyBytes == 0 || len(res.Scanned) != files {
				t.Fatalf("first resolution read %d files (%d bytes), scanned %d; want all %d", res.FilesRead, res.KeyBytes, len(res.Scanned), files)
			}
		} else if res.FilesRead != 0 || res.KeyBytes != 0 {
			t.Fatalf("shard %d read %d files (%d bytes) again", s, res.FilesRead, res.KeyBytes)
		}
		if res.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			t.Fatalf("resolved at %d, want %d", res.SnapshotID, tbl.CurrentSnapshot().SnapshotID)
		}
		if n := idx.Entries(); n != 0 {
			t.Fatalf("the key index holds %d entries: built instead of one scan", n)
		}
	}
	// The committer decodes a shard's resolution and refreshes it at the same
	// snapshot: the scan's tasks, no index.
	enc, err := first.Encode(tbl.Schema(), r.KeyColumns)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := enc.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := r.Refresh(ctx, tbl, dec); err != nil || changed || dec.tasks == nil {
		t.Fatalf("refresh at the same snapshot: changed %v, tasks %v (%v)", changed, dec.tasks != nil, err)
	}
	codec, _ := newKeyCodec(tbl.Schema(), r.KeyColumns)
	idx := indexFor(tbl, codec, r.IndexBytes, r.IndexParts)
	if n := idx.Entries(); n != 0 {
		t.Fatalf("the refresh built the key index (%d entries)", n)
	}

	// A key the worker did not parse: the key index resolves it (and builds).
	res, _ := resolveChecked(t, r, tbl, [][]any{{int64(7001)}, {int64(12)}}, map[int64]bool{7001: true, 12: true})
	if res.Found() != 1 || idx.Entries() == 0 {
		t.Fatalf("unexpected key: found %d, index %d entries", res.Found(), idx.Entries())
	}
	// A later snapshot: the scan does not answer for it.
	f.apply(t, []row.Row{change("d", 6, "", "", 2), change("c", 6500, "n", "CA", 2)}, false)
	tbl = f.table(t)
	res, _ = resolveChecked(t, r, tbl, [][]any{{int64(6)}, {int64(6500)}, {int64(13)}}, map[int64]bool{6: true, 6500: true, 13: true})
	added := false
	for _, p := range res.Scanned {
		added = added || !slices.Contains(first.Scanned, p)
	}
	if res.Found() != 2 || !added || res.FilesRead >= files {
		t.Fatalf("after a commit: found %d, read %v (want the new file, by the index)", res.Found(), res.Scanned)
	}
	// The next run's Add starts a new set.
	addKeys(t, e, []any{int64(42)})
	if e.probed || len(e.ks.enc) != 1 {
		t.Fatalf("after the scan, Add kept the old set (%d keys, probed %v)", len(e.ks.enc), e.probed)
	}
}

// TestExpectedPastLimit: more keys than the budget holds are not kept: Add
// reports the overflow once, and the key index resolves them.
func TestExpectedPastLimit(t *testing.T) {
	f := newFixture(t, nil, "expectover", indexed(64<<20))
	f.seed(t, cityRows(500), 100)
	tbl := f.table(t)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 10 * ExpectedKeyBytes}
	e, err := r.Expect(tbl)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]any
	over := 0
	for id := range int64(20) {
		k := []any{id + 1}
		keys = append(keys, k)
		if addKeys(t, e, k) {
			over++
		}
	}
	if over != 1 || !e.over || len(e.ks.enc) != 0 {
		t.Fatalf("past the limit: reported %d times, over %v, %d keys held", over, e.over, len(e.ks.enc))
	}
	want := map[int64]bool{}
	for _, k := range keys[:5] {
		want[k[0].(int64)] = true
	}
	res, idx := resolveChecked(t, r, tbl, keys[:5], want)
	if res.Found() != 5 || idx.Entries() == 0 {
		t.Fatalf("found %d, index %d entries: want the index to resolve", res.Found(), idx.Entries())
	}
	// The next run expects afresh. One batch of keys that goes past the limit in
	// its middle reports it once and holds none; duplicates count once.
	if addKeys(t, e, []any{int64(3)}, []any{int64(3)}, []any{int64(4)}) || e.over || len(e.ks.enc) != 2 {
		t.Fatalf("the next run's Add: over %v, %d keys", e.over, len(e.ks.enc))
	}
	e.probed = true // as after a scan: the next Add starts a new set
	if !addKeys(t, e, keys...) || !e.over || len(e.ks.enc) != 0 {
		t.Fatalf("a batch past the limit: over %v, %d keys held", e.over, len(e.ks.enc))
	}
}

// addKeys adds keys to e in one batch and returns what Add returns.
func addKeys(t *testing.T, e *Expected, keys ...[]any) bool {
	t.Helper()
	var b KeyBatch
	for _, k := range keys {
		enc, err := e.ks.codec.append(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(enc)
	}
	return e.Add(&b)
}

// TestExpectedBoundAcrossTables: the keys expected in all tables of a process
// count against one limit: a second table's set goes past it when the first's
// keys fill it, and releases its keys when it does.
func TestExpectedBoundAcrossTables(t *testing.T) {
	fa := newFixture(t, nil, "expecta", indexed(64<<20))
	fa.seed(t, cityRows(50), 50)
	fb := newFixture(t, nil, "expectb", indexed(64<<20))
	fb.seed(t, cityRows(50), 50)
	base := expectations.keys.Load() // sets other tests left
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: (base + 10) * ExpectedKeyBytes}
	add := func(e *Expected, id int64) bool { return addKeys(t, e, []any{id}) }
	ea := expectKeys(t, r, fa, [][]any{{int64(1)}, {int64(2)}, {int64(3)}, {int64(4)}, {int64(5)}, {int64(6)}})
	eb, err := r.Expect(fb.table(t))
	if err != nil {
		t.Fatal(err)
	}
	for id := range int64(4) {
		if add(eb, id+1) {
			t.Fatalf("table b went past the limit at its key %d", id+1)
		}
	}
	if !add(eb, 5) || !eb.over || ea.over {
		t.Fatalf("10 keys expected in two tables: b over %v, a over %v; want b past the limit", eb.over, ea.over)
	}
	if got := expectations.keys.Load(); got != base+6 {
		t.Fatalf("%d keys counted after b went over, want %d (a's)", got-base, 6)
	}
}

// TestExpectedHaltsWarm: a warm-up started while the changes were parsed stops
// when the expected keys' scan resolves the window (it would only take the
// processors the window's other work needs): files are left pending.
func TestExpectedHaltsWarm(t *testing.T) {
	defer func(old int64) { warmBatchRows = old }(warmBatchRows)
	warmBatchRows = 100 // one file per warm-up batch
	f := newFixture(t, nil, "expecthalt", indexed(64<<20))
	f.seed(t, cityRows(3000), 100)
	tbl := f.table(t)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	keys := [][]any{{int64(5)}, {int64(2900)}}
	expectKeys(t, r, f, keys)
	r.Warm(tbl)
	resolveChecked(t, r, tbl, keys, map[int64]bool{5: true, 2900: true})
	codec, _ := newKeyCodec(tbl.Schema(), r.KeyColumns)
	x := indexFor(tbl, codec, r.IndexBytes, 1)
	time.Sleep(200 * time.Millisecond) // the warm-up ends its last batch
	x.mu.Lock()
	pending := len(x.pending)
	x.mu.Unlock()
	if pending == 0 {
		t.Fatalf("the warm-up read all %d files after the expected keys' scan", len(icebergtest.DataFiles(t, tbl)))
	}
}
