package cdc

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// joinElements packs keys as the key join's side input does: change packets of
// shard (key index mod shards), their keys taken by AppendPacketKeys.
func joinElements(t *testing.T, tbl *table.Table, r Resolver, keys [][]any, shards int) ([][]byte, [][][]any) {
	t.Helper()
	codec, err := newKeyCodec(tbl.Schema(), r.KeyColumns)
	if err != nil {
		t.Fatal(err)
	}
	byShard := make([][][]any, shards)
	packets := make([][]byte, shards)
	for i, k := range keys {
		s := i % shards
		enc, err := codec.append(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		if packets[s] == nil {
			packets[s] = NewPacket(tbl.Schema().ID)
		}
		packets[s] = AppendChange(packets[s], enc, int64(i), Delete, nil)
		byShard[s] = append(byShard[s], k)
	}
	var out [][]byte
	for s, p := range packets {
		if p == nil {
			continue
		}
		b, err := AppendPacketKeys(nil, s, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out, byShard
}

func iterOf(elems [][]byte) func(*[]byte) bool {
	i := 0
	return func(b *[]byte) bool {
		if i == len(elems) {
			return false
		}
		*b = elems[i]
		i++
		return true
	}
}

// TestJoinReadsEachFileOnce: the key join plans the candidate files once and
// each is read by one ScanFiles (here each by a key set of its own, as on workers of
// their own); every shard, from its marker and the hits of its keys, finds
// exactly the live rows of its keys (not the rows its DVs delete), and the
// committer's refresh at that snapshot reads no file and builds no key index.
// Past the budget, or with a key in two shards, there is no join.
func TestJoinReadsEachFileOnce(t *testing.T) {
	ctx := context.Background()
	f := shuffledCities(t, "join", 7)
	tbl := f.table(t)
	files := len(icebergtest.DataFiles(t, tbl))
	keys, _ := randomIDKeys(rand.New(rand.NewPCG(9, 10)), 800, 7000, 10, 11, 5000, 6)
	slices.SortFunc(keys, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	keys = slices.CompactFunc(keys, func(a, b []any) bool { return a[0] == b[0] })
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20, IndexParts: 4}
	const shards = 4
	elems, byShard := joinElements(t, tbl, r, keys, shards)

	j, err := r.JoinKeys(tbl, iterOf(elems))
	if err != nil || j == nil {
		t.Fatalf("join keys: %v, %v", j, err)
	}
	snap, candidates, shardsOf, err := j.Plan(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shardsOf, []int{0, 1, 2, 3}) {
		t.Fatalf("shards %v", shardsOf)
	}
	if snap != tbl.CurrentSnapshot().SnapshotID || len(candidates) != files || files < 2 {
		t.Fatalf("plan: snapshot %d, %d candidates; want %d, all %d files", snap, len(candidates), tbl.CurrentSnapshot().SnapshotID, files)
	}
	packets := map[int][][]byte{}
	for s := range shards {
		packets[s] = append(packets[s], JoinMarker(snap, candidates))
	}
	for _, p := range candidates {
		w, err := r.JoinKeys(tbl, iterOf(elems)) // another worker's key set
		if err != nil {
			t.Fatal(err)
		}
		sc, err := w.ScanFiles(ctx, tbl, snap, []string{p})
		if err != nil || sc.Bytes <= 0 {
			t.Fatalf("scan %s: read %d bytes, %v", p, sc.Bytes, err)
		}
		for s, hs := range sc.Hits {
			if len(hs) != 1 || !IsJoinPacket(hs[0]) {
				t.Fatalf("hits of shard %d are %d packets, want one join packet", s, len(hs))
			}
			packets[s] = append(packets[s], hs[0])
		}
	}
	codec, _ := newKeyCodec(tbl.Schema(), r.KeyColumns)
	idx := indexFor(tbl, codec, r.IndexBytes, r.IndexParts)
	for s := range shards {
		var jd joined
		for _, p := range packets[s] {
			if err := jd.add(p); err != nil {
				t.Fatal(err)
			}
		}
		res, err := jd.resolution(tbl, r.KeyColumns, byShard[s])
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]bool{}
		for _, k := range byShard[s] {
			want[k[0].(int64)] = true
		}
		samePositions(t, res.Positions(), bruteForce(t, tbl, func(id int64, _ string) bool { return want[id] }))
		if res.SnapshotID != snap || !slices.Equal(res.Scanned, candidates) || len(res.Keys) != len(byShard[s]) {
			t.Fatalf("shard %d: snapshot %d, scanned %d files, %d keys", s, res.SnapshotID, len(res.Scanned), len(res.Keys))
		}
		enc, err := res.Encode(tbl.Schema(), r.KeyColumns)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := enc.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if changed, err := r.Refresh(ctx, tbl, dec); err != nil || changed || dec.KeyBytes != 0 {
			t.Fatalf("refresh at the join's snapshot: changed %v, read %d bytes (%v)", changed, dec.KeyBytes, err)
		}
	}
	if n := idx.Entries(); n != 0 {
		t.Fatalf("the key index holds %d entries: built by a refresh", n)
	}

	small := Resolver{KeyColumns: []string{"id"}, IndexBytes: 10 * ExpectedKeyBytes}
	if j, err := small.JoinKeys(tbl, iterOf(elems)); j != nil || err != nil {
		t.Fatalf("past the budget: %v, %v; want no join", j, err)
	}
	enc, _ := codec.append(nil, byShard[0][0])
	extra, _ := AppendPacketKeys(nil, 3, AppendChange(NewPacket(tbl.Schema().ID), enc, 1, Delete, nil))
	twice := append(slices.Clone(elems), extra)
	if j, err := r.JoinKeys(tbl, iterOf(twice)); j != nil || err != nil {
		t.Fatalf("a key of shards 0 and 3: %v, %v; want no join", j, err)
	}
}

// TestJoinGroups: the work items of the join hold every candidate file once, in
// groups of at most joinGroupRows rows (a larger file alone), at most the limit
// of them, and a group scanned at once finds what its files scanned one by one do.
func TestJoinGroups(t *testing.T) {
	ctx := context.Background()
	f := shuffledCities(t, "joingroups", 3)
	tbl := f.table(t)
	keys, _ := randomIDKeys(rand.New(rand.NewPCG(5, 6)), 600, 7000)
	slices.SortFunc(keys, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	keys = slices.CompactFunc(keys, func(a, b []any) bool { return a[0] == b[0] })
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	elems, _ := joinElements(t, tbl, r, keys, 4)
	j, err := r.JoinKeys(tbl, iterOf(elems))
	if err != nil || j == nil {
		t.Fatalf("JoinKeys: %v %v", j, err)
	}
	snap, files, _, err := j.Plan(ctx, tbl)
	if err != nil || len(files) < 10 {
		t.Fatalf("plan: %d candidate files (%v)", len(files), err)
	}
	defer func(v int64) { joinGroupRows = v }(joinGroupRows)
	rows := func(g []string) (n int64) {
		for _, p := range g {
			n += j.tasks[p].File.Count()
		}
		return n
	}
	for _, tc := range []struct {
		groupRows int64
		limit     int
	}{{1000, 100}, {1000, 3}, {100, 100}, {1 << 30, 100}} {
		joinGroupRows = tc.groupRows
		groups := j.Groups(files, tc.limit)
		if len(groups) > tc.limit {
			t.Fatalf("%+v: %d groups", tc, len(groups))
		}
		if got := slices.Sorted(slices.Values(slices.Concat(groups...))); !slices.Equal(got, files) {
			t.Fatalf("%+v: groups hold %d files, want each of the %d candidates once", tc, len(got), len(files))
		}
		for _, g := range groups {
			if len(groups) < tc.limit && len(g) > 1 && rows(g) > tc.groupRows {
				t.Fatalf("%+v: a group of %d files holds %d rows", tc, len(g), rows(g))
			}
		}
		if tc.groupRows >= 1<<30 && len(groups) != 1 {
			t.Fatalf("%+v: %d groups, want one", tc, len(groups))
		}
	}
	joinGroupRows = 1000
	group := j.Groups(files, 100)[0]
	sc, err := j.ScanFiles(ctx, tbl, snap, group)
	together := sc.Hits
	if err != nil {
		t.Fatal(err)
	}
	alone := map[int][][]byte{}
	for _, p := range group {
		sc, err := j.ScanFiles(ctx, tbl, snap, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		for s, hs := range sc.Hits {
			alone[s] = append(alone[s], hs...)
		}
	}
	if len(together) != len(alone) {
		t.Fatalf("scanned together: hits for %d shards, one by one %d", len(together), len(alone))
	}
	for s, ps := range alone {
		if !slices.EqualFunc(together[s], ps, slices.Equal) {
			t.Fatalf("shard %d: %d packets scanned together differ from the %d of the files one by one", s, len(together[s]), len(ps))
		}
	}
}
