package cdc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// TestShardWindowLateAndReplay: of a committed window's changes, those at or
// below what an earlier run committed are skipped (replayed), those at or below
// what the sink committed go to the dead letter output with the reason, and the
// rest are applied and counted as late; a window not committed applies all.
func TestShardWindowLateAndReplay(t *testing.T) {
	f := newFixture(t, nil, "late")
	tbl := f.table(t)
	changes := []row.Row{change("c", 1, "a", "CA", 3), change("c", 2, "b", "CA", 8), change("c", 3, "c", "CA", 10),
		change("c", 4, "d", "CA", 12), change("c", 5, "e", "CA", 15)}
	for _, tc := range []struct {
		name      string
		committed *Committed
		rows      []int64 // ids written
		dead      []int64 // ids dead-lettered
		stats     ShardStats
		minSeq    int64
	}{
		{"not committed", nil, []int64{1, 2, 3, 4, 5}, nil, ShardStats{}, 3},
		{"nothing committed", &Committed{MaxSeq: NoSeq, PriorMax: NoSeq}, []int64{1, 2, 3, 4, 5}, nil, ShardStats{}, 3},
		{"late", &Committed{MaxSeq: 10, PriorMax: NoSeq}, []int64{4, 5}, []int64{1, 2, 3}, ShardStats{LateDead: 3, LatePassed: 2}, 12},
		{"replayed and late", &Committed{MaxSeq: 10, PriorMax: 3}, []int64{4, 5}, []int64{2, 3}, ShardStats{Replayed: 1, LateDead: 2, LatePassed: 2}, 12},
		{"all replayed", &Committed{MaxSeq: 15, PriorMax: 15}, nil, nil, ShardStats{Replayed: 5}, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.shardConfig(tbl, false)
			cfg.Committed = tc.committed
			run := runShard(t, cfg, changes)
			var rows, dead []int64
			for _, r := range run.written() {
				rows = append(rows, r.Value(0).(int64))
			}
			for _, d := range run.dead {
				dead = append(dead, d.Row.Value(0).(int64))
				seq := map[int64]int64{1: 3, 2: 8, 3: 10}[d.Row.Value(0).(int64)]
				want := fmt.Sprintf("late: the change arrived after its window was committed and its sequence number %d is not above 10, the highest sink fixture has committed; applying it now could undo a newer change", seq)
				if d.Err.Error() != want {
					t.Errorf("reason %q, want %q", d.Err, want)
				}
			}
			slices.Sort(rows)
			slices.Sort(dead)
			if !slices.Equal(rows, tc.rows) || !slices.Equal(dead, tc.dead) {
				t.Errorf("written %v, dead %v; want %v, %v", rows, dead, tc.rows, tc.dead)
			}
			if run.Stats != tc.stats || run.MinSeq != tc.minSeq {
				t.Errorf("stats %+v, min seq %d; want %+v, %d", run.Stats, run.MinSeq, tc.stats, tc.minSeq)
			}
		})
	}
}

// TestShardWindowOlderSchema: packets parsed with an older schema of the table
// (the table evolved during the run) are applied in the current one (the new
// columns null), and their late changes are dead-lettered as they were parsed; a
// packet of a schema the table does not have is an error.
func TestShardWindowOlderSchema(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, "older")
	old := f.table(t)
	oldPackets, _ := pack(f.parser, old.Schema().ID, []row.Row{change("c", 1, "a", "CA", 3), change("b", 2, "b", "CA", 12), change("u", 2, "b2", "WA", 12)}, 2)
	txn := old.NewTransaction()
	us := txn.UpdateSchema(true, false)
	// Nine columns: the packed rows' null bitmap takes two bytes, so a row of the old
	// schema must be re-encoded to decode in the new one.
	for _, c := range []string{"zip", "c5", "c6", "c7", "c8", "c9"} {
		us.AddColumn([]string{c}, ibg.PrimitiveTypes.String, "", false, nil)
	}
	if err := us.Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Schema().ID == old.Schema().ID {
		t.Fatalf("schema id %d did not change", tbl.Schema().ID)
	}
	cfg := debeziumConfig()
	p, err := NewParser("db.older", tbl.Schema(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"op", "id", "city", "state", "zip", "seq"}
	newPackets, _ := pack(p, tbl.Schema().ID, []row.Row{row.New(names, []any{"c", int64(3), "c", "NY", "10001", int64(13)})}, 2)
	sc := ShardConfig{Table: tbl, Parser: p, Resolver: Resolver{KeyColumns: []string{"id"}}, SorterMemory: 1 << 20,
		Committed: &Committed{MaxSeq: 5, PriorMax: NoSeq}, SinkID: "s"}
	run, err := runPackets(sc, append(oldPackets, newPackets...), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range run.written() {
		got = append(got, r.String())
	}
	slices.Sort(got)
	rest := ", c5: null, c6: null, c7: null, c8: null, c9: null}"
	want := []string{`{id: 2, city: "b2", state: "WA", zip: null` + rest, `{id: 3, city: "c", state: "NY", zip: "10001"` + rest}
	if len(run.dead) != 1 || run.dead[0].Row.String() != `{id: 1, city: "a", state: "CA"}` || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dead %v, written %q; want row 1 in the old schema, and %q", run.dead, got, want)
	}
	if len(run.DeleteKeys) != 1 || run.DeleteKeys[0][0] != int64(2) {
		t.Fatalf("delete keys %v", run.DeleteKeys)
	}
	bad, _ := pack(p, 99, []row.Row{change("c", 1, "a", "CA", 3)}, 1)
	if _, err := runPackets(sc, bad, nil); !errors.Is(err, ErrUnknownSchema) || !strings.Contains(err.Error(), "table has no schema 99") {
		t.Fatalf("a packet of schema 99: err = %v", err)
	}
}

// TestShardWindowLineage: with deletion vectors on format version 3, a row that
// replaces a committed row keeps its _row_id (an update, a delete then an insert,
// an upsert), a new key and a key not in the table get a fresh one; with equality
// deletes there is no lineage.
func TestShardWindowLineage(t *testing.T) {
	for _, mode := range []string{"dv", "equality"} {
		t.Run(mode, func(t *testing.T) {
			var opts []fixtureOpt
			if mode == "equality" {
				opts = append(opts, equality())
			}
			f := newFixture(t, nil, "lineage", opts...)
			f.seed(t, cityRows(20), 10) // ids 1..20 have _row_id 0..19
			// Upsert on: 3 updated, 5 deleted, 7 deleted then inserted, 15 upserted, 100
			// new, 50 updated but not in the table.
			changes := []row.Row{
				change("b", 3, "city-3", "CA", 1), change("u", 3, "x", "NY", 1),
				change("d", 5, "", "", 1),
				change("d", 7, "", "", 1), change("c", 7, "y", "WA", 2),
				change("u", 15, "z", "TX", 1),
				change("c", 100, "new", "CA", 1),
				change("b", 50, "", "", 1), change("u", 50, "gone", "CA", 1),
			}
			run := runShard(t, f.shardConfig(f.table(t), true), changes)
			if run.lineage != (mode == "dv") {
				t.Fatalf("lineage %v in %s mode", run.lineage, mode)
			}
			ids := map[int64]string{}
			for i, r := range run.updates {
				ids[r.Value(0).(int64)] = "nil"
				if run.rowIDs[i] != nil {
					ids[r.Value(0).(int64)] = fmt.Sprint(*run.rowIDs[i])
				}
			}
			want := map[int64]string{3: "2", 7: "6", 15: "14", 50: "nil", 100: "nil"}
			if mode == "equality" {
				want = map[int64]string{}
			}
			if !maps.Equal(ids, want) {
				t.Fatalf("updates with row ids %v, want %v", ids, want)
			}
			f.apply(t, changes, true)
			got := f.rowIDs(t)
			fresh := map[int64]bool{}
			for _, id := range []int64{3, 7, 15, 50, 100} {
				kept := got[id] == id-1
				if kept != (mode == "dv" && id < 20) || (!kept && got[id] < 20) {
					t.Errorf("id %d has _row_id %d (seed's: %d)", id, got[id], id-1)
				}
				fresh[got[id]] = true
			}
			if _, ok := got[5]; ok || got[1] != 0 || got[20] != 19 || len(fresh) != 5 || len(got) != 21 {
				t.Errorf("row ids %v", got)
			}
		})
	}
}

// rowIDs reads the table's id -> _row_id.
func (f *fixture) rowIDs(t testing.TB) map[int64]int64 {
	t.Helper()
	at, err := f.table(t).Scan(table.WithSelectedFields("id", ibg.RowIDColumnName)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]int64{}
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids, rowIDs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if _, dup := out[ids.Value(i)]; dup {
				t.Fatalf("id %d twice", ids.Value(i))
			}
			out[ids.Value(i)] = rowIDs.Value(i)
		}
	}
	return out
}
