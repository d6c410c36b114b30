package cdc

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestPacketRoundTrip(t *testing.T) {
	type rec struct {
		key  string
		seq  int64
		kind Kind
		body string
	}
	in := []rec{{"k1", 1, Insert, "row one"}, {"", -5, Delete, ""}, {"k\x00", 1 << 40, UpdateBefore, string(make([]byte, 300))}}
	p := NewPacket(7)
	for _, r := range in {
		p = AppendChange(p, []byte(r.key), r.seq, r.kind, []byte(r.body))
	}
	var got []rec
	id, err := ReadPacket(p, func(key []byte, seq int64, kind Kind, body []byte) error {
		got = append(got, rec{string(key), seq, kind, string(body)})
		return nil
	})
	if err != nil || id != 7 || !slices.Equal(got, in) {
		t.Fatalf("id %d, err %v, got %+v", id, err, got)
	}
	for _, cut := range []int{0, 3, len(p) - 1} {
		if _, err := ReadPacket(p[:cut], func([]byte, int64, Kind, []byte) error { return nil }); !errors.Is(err, ErrCorruptPacket) {
			t.Errorf("packet cut at %d: err = %v", cut, err)
		}
	}
}

// TestResolutionCodecAndMerge resolves two disjoint key sets (two shards), ships
// them through the codec and merges them: the merge equals resolving the union, and
// one refresh brings it past a concurrent DV.
func TestResolutionCodecAndMerge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, "codec")
	f.seed(t, cityRows(3000), 1000)
	tbl := f.table(t)
	keys := func(ids ...int64) [][]any {
		out := make([][]any, len(ids))
		for i, id := range ids {
			out[i] = []any{id}
		}
		return out
	}
	a, b := keys(5, 1500, 2999, 77777), keys(6, 1501, 2000)
	r := Resolver{KeyColumns: []string{"id"}}
	var shipped []*Resolution
	for _, ks := range [][][]any{a, b} {
		res, err := r.Resolve(ctx, tbl, ks)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := res.Encode(tbl.Schema(), []string{"id"})
		if err != nil {
			t.Fatal(err)
		}
		dec, err := enc.Decode()
		if err != nil {
			t.Fatal(err)
		}
		shipped = append(shipped, dec)
	}
	merged := MergeResolutions(shipped)
	if len(merged) != 1 {
		t.Fatalf("%d resolutions, want 1", len(merged))
	}
	m := merged[0]
	union, err := r.Resolve(ctx, tbl, append(a, b...))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(m.Positions(), union.Positions(), slices.Equal) || m.Found() != 6 {
		t.Fatalf("merged %v, union %v", m.Positions(), union.Positions())
	}
	for _, fh := range m.Files {
		for i, pos := range fh.Positions {
			if id := m.Keys[fh.KeyIndexes[i]][0].(int64); (id-1)%1000 != pos || (i > 0 && fh.Positions[i-1] >= pos) {
				t.Fatalf("%s: position %d maps to key %d", fh.Path, pos, id)
			}
		}
	}
	if changed, err := r.Refresh(ctx, tbl, m); err != nil || changed {
		t.Fatalf("refresh on the same snapshot: changed %v, err %v", changed, err)
	}
	// Another writer deletes id 1500 with a DV.
	for _, fh := range m.Files {
		for i, pos := range fh.Positions {
			if m.Keys[fh.KeyIndexes[i]][0] == int64(1500) {
				icebergtest.DeleteRowsDV(t, tbl, map[string][]int64{fh.Path: {pos}})
			}
		}
	}
	changed, err := r.Refresh(ctx, f.table(t), m)
	if err != nil || !changed || m.Found() != 5 {
		t.Fatalf("after a concurrent DV: changed %v, found %d, err %v", changed, m.Found(), err)
	}
}

func TestSharder(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	plain := icebergtest.CreateTable(t, lc.Catalog, "db.plain", citySchema())
	byState := icebergtest.CreateTable(t, lc.Catalog, "db.bystate", citySchema(), icebergtest.WithPartitionSpec(
		ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "state", Transform: ibg.IdentityTransform{}})))

	s, err := NewSharder(plain, []string{"id"}, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewParser("db.plain", plain.Schema(), debeziumConfig())
	for id := range int64(100) {
		kb, _ := p.AppendKey(nil, []any{id})
		if got := s.Shard(kb, []any{id}); got != Shard(kb, 8) {
			t.Fatalf("id %d: shard %d, want %d", id, got, Shard(kb, 8))
		}
	}

	if _, err := NewSharder(byState, []string{"id"}, 8, 2); !errors.Is(err, config.ErrUnsupported) {
		t.Fatalf("partition column outside the key: err = %v", err)
	}
	s, err = NewSharder(byState, []string{"id", "state"}, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := debeziumConfig()
	cfg.EqualityColumns = []string{"id", "state"}
	p, _ = NewParser("db.bystate", byState.Schema(), cfg)
	all := map[int]bool{}
	for _, state := range []string{"CA", "NY", "TX", "WA", "OR", "NV"} {
		used := map[int]bool{}
		for id := range int64(200) {
			key := []any{id, state}
			kb, _ := p.AppendKey(nil, key)
			sh := s.Shard(kb, key)
			if sh < 0 || sh >= 8 {
				t.Fatalf("shard %d", sh)
			}
			used[sh], all[sh] = true, true
		}
		if len(used) != 2 {
			t.Errorf("state %s uses shards %v, want 2", state, slices.Sorted(maps.Keys(used)))
		}
	}
	if len(all) < 4 {
		t.Errorf("six states use only shards %v", slices.Sorted(maps.Keys(all)))
	}
}

// TestShardSpread: keys that differ only in high bits (ids stepping by 16 or more)
// spread over the shards; a plain FNV-1a modulo would put 64 ids stepping by 16 into
// at most 4 of 16 shards.
func TestShardSpread(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db.spread", citySchema())
	p, _ := NewParser("db.spread", tbl.Schema(), debeziumConfig())
	for _, step := range []int64{1, 16, 256, 1 << 20} {
		used := map[int]int{}
		for i := range int64(64) {
			kb, _ := p.AppendKey(nil, []any{i * step})
			used[Shard(kb, 16)]++
		}
		if len(used) < 12 {
			t.Errorf("step %d: 64 keys use %d of 16 shards (%v)", step, len(used), used)
		}
	}
}
