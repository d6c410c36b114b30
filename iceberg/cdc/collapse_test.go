package cdc

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestEffect(t *testing.T) {
	I, UB, UA, D := Insert, UpdateBefore, UpdateAfter, Delete
	for _, tc := range []struct {
		name   string
		kinds  []Kind
		upsert bool
		want   NetEffect
	}{
		{"insert", []Kind{I}, false, NetEffect{Write: true}},
		{"insert upsert", []Kind{I}, true, NetEffect{DeletePrior: true, Write: true}},
		{"update", []Kind{UB, UA}, false, NetEffect{DeletePrior: true, Write: true}},
		{"update after only", []Kind{UA}, false, NetEffect{Write: true}},
		{"update after only upsert", []Kind{UA}, true, NetEffect{DeletePrior: true, Write: true}},
		{"delete", []Kind{D}, false, NetEffect{DeletePrior: true}},
		{"before only", []Kind{UB}, false, NetEffect{DeletePrior: true}},
		{"insert then delete", []Kind{I, D}, false, NetEffect{DeletePrior: true}},
		{"delete then insert", []Kind{D, I}, false, NetEffect{DeletePrior: true, Write: true}},
		{"many updates", []Kind{I, UB, UA, UB, UA}, false, NetEffect{DeletePrior: true, Write: true}},
		{"update then delete", []Kind{UB, UA, D}, false, NetEffect{DeletePrior: true}},
		{"inserts", []Kind{I, I}, false, NetEffect{Write: true}},
		{"empty", nil, true, NetEffect{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Effect(tc.kinds, tc.upsert); got != tc.want {
				t.Fatalf("Effect(%v, %v) = %+v, want %+v", tc.kinds, tc.upsert, got, tc.want)
			}
		})
	}
}

// shardFixtures returns a table per delete format for ShardWindow tests that commit
// nothing: DV (format version 3: updates keep their _row_id, through
// ShardOutput.Update) and equality deletes (no lineage: every row through Write).
func shardFixtures(t *testing.T, name string) map[string]*fixture {
	t.Helper()
	lc := icebergtest.NewLocalCatalog(t)
	return map[string]*fixture{"dv": newFixture(t, lc, name+"_dv"), "equality": newFixture(t, lc, name+"_eq", equality())}
}

// TestShardWindowCollapse runs rows through parse, ShardWindow (sort, collapse,
// resolve) on an empty table, in DV and equality mode.
func TestShardWindowCollapse(t *testing.T) {
	names := []string{"op", "id", "city", "state", "seq"}
	r := func(op string, id int64, state string, seq int64) row.Row {
		return row.New(names, []any{op, id, "c", state, seq})
	}
	type want struct {
		deletes []int64
		rows    map[int64]string
	}
	for mode, f := range shardFixtures(t, "collapse") {
		tbl := f.table(t)
		for _, tc := range []struct {
			name   string
			rows   []row.Row
			upsert bool
			want   want
		}{
			{"update keeps last after-image", []row.Row{r("u", 1, "NY", 2), r("b", 1, "CA", 1), r("u", 1, "TX", 1), r("b", 1, "TX", 2)},
				false, want{[]int64{1}, map[int64]string{1: "NY"}}},
			{"same seq before image first", []row.Row{r("u", 1, "NY", 5), r("b", 1, "CA", 5)}, false, want{[]int64{1}, map[int64]string{1: "NY"}}},
			{"same seq delete before insert", []row.Row{r("c", 2, "NY", 5), r("d", 2, "CA", 5)}, false, want{[]int64{2}, map[int64]string{2: "NY"}}},
			{"insert then delete of a new key", []row.Row{r("c", 3, "NY", 1), r("d", 3, "NY", 2)}, false, want{[]int64{3}, map[int64]string{}}},
			{"partition change", []row.Row{r("b", 4, "CA", 1), r("u", 4, "NY", 1)}, false, want{[]int64{4}, map[int64]string{4: "NY"}}},
			{"insert without upsert", []row.Row{r("c", 5, "NY", 1)}, false, want{nil, map[int64]string{5: "NY"}}},
			{"upsert", []row.Row{r("c", 5, "NY", 1), r("u", 6, "NY", 1)}, true, want{[]int64{5, 6}, map[int64]string{5: "NY", 6: "NY"}}},
			{"keys apart", []row.Row{r("d", 8, "", 1), r("c", 7, "WA", 3)}, false, want{[]int64{8}, map[int64]string{7: "WA"}}},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				run := runShard(t, f.shardConfig(tbl, tc.upsert), tc.rows)
				if len(run.dead) > 0 || len(run.rejected) > 0 {
					t.Fatalf("dead %v, rejected %v", run.dead, run.rejected)
				}
				var dels []int64
				for _, k := range run.DeleteKeys {
					dels = append(dels, k[0].(int64))
				}
				slices.Sort(dels)
				if !slices.Equal(dels, tc.want.deletes) {
					t.Errorf("delete keys %v, want %v", dels, tc.want.deletes)
				}
				if dv := mode == "dv" && len(dels) > 0; (run.Resolution != nil) != dv || (dv && len(run.Resolution.Keys) != len(dels)) {
					t.Errorf("resolution %+v with %d delete keys in %s mode", run.Resolution, len(dels), mode)
				}
				got := map[int64]string{}
				for _, r := range run.written() {
					got[r.Value(0).(int64)] = r.Value(2).(string)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want.rows) {
					t.Errorf("rows %v, want %v", got, tc.want.rows)
				}
				// With lineage the rows that replace a committed row (keys deleted and
				// written) wait for their key's resolution; none has a _row_id here.
				var replaced int
				for _, d := range dels {
					if _, ok := tc.want.rows[d]; ok {
						replaced++
					}
				}
				if mode == "equality" {
					replaced = 0
				}
				if len(run.updates) != replaced || slices.ContainsFunc(run.rowIDs, func(id *int64) bool { return id != nil }) {
					t.Errorf("%d updates (row ids %v), want %d without row ids", len(run.updates), run.rowIDs, replaced)
				}
				minSeq, maxSeq := int64(math.MaxInt64), int64(0)
				for _, r := range tc.rows {
					minSeq, maxSeq = min(minSeq, r.Value(4).(int64)), max(maxSeq, r.Value(4).(int64))
				}
				if run.MinSeq != minSeq || run.MaxSeq != maxSeq {
					t.Errorf("sequence numbers %d..%d, want %d..%d", run.MinSeq, run.MaxSeq, minSeq, maxSeq)
				}
			})
		}
		run := runShard(t, f.shardConfig(tbl, false), []row.Row{r("x", 1, "", 1), r("c", 1, "NY", 1)})
		if len(run.rejected) != 1 || len(run.written()) != 1 {
			t.Fatalf("%s: rejected %v, rows %d", mode, run.rejected, len(run.written()))
		}
	}
}

// TestShardWindowAmbiguous: two different after-images of one key at its last
// sequence number are held back and dead-lettered (naming the key and the sequence
// number) instead of one winning by input order; the key's earlier changes still
// apply, and equal-seq shapes that are not ambiguous collapse as before.
func TestShardWindowAmbiguous(t *testing.T) {
	r := func(op string, id int64, state string, seq int64) row.Row {
		return change(op, id, "c", state, seq)
	}
	type want struct {
		deletes  []int64
		rows     map[int64]string
		rejected []string // "<kind> <state>" of the held-back changes, sorted
		seq      int64    // the ambiguous sequence number
	}
	for mode, f := range shardFixtures(t, "ambiguous") {
		tbl := f.table(t)
		prefix := "iceberg: cdc " + f.parser.table + ": "
		for _, tc := range []struct {
			name   string
			rows   []row.Row
			upsert bool
			want   want
		}{
			{"two after-images", []row.Row{r("u", 1, "NY", 5), r("u", 1, "TX", 5)}, false,
				want{nil, map[int64]string{}, []string{"UPDATE_AFTER NY", "UPDATE_AFTER TX"}, 5}},
			{"two after-images with upsert", []row.Row{r("u", 1, "TX", 5), r("u", 1, "NY", 5)}, true,
				want{nil, map[int64]string{}, []string{"UPDATE_AFTER NY", "UPDATE_AFTER TX"}, 5}},
			{"insert and update after", []row.Row{r("c", 1, "NY", 5), r("u", 1, "TX", 5)}, false,
				want{nil, map[int64]string{}, []string{"INSERT NY", "UPDATE_AFTER TX"}, 5}},
			{"two updates in one transaction", []row.Row{r("b", 1, "CA", 7), r("u", 1, "NY", 7), r("b", 1, "NY", 7), r("u", 1, "TX", 7)}, false,
				want{nil, map[int64]string{}, []string{"UPDATE_AFTER NY", "UPDATE_AFTER TX", "UPDATE_BEFORE CA", "UPDATE_BEFORE NY"}, 7}},
			{"earlier changes apply", []row.Row{r("c", 1, "WA", 1), r("u", 1, "NY", 5), r("u", 1, "TX", 5), r("b", 1, "WA", 5)}, false,
				want{nil, map[int64]string{1: "WA"}, []string{"UPDATE_AFTER NY", "UPDATE_AFTER TX", "UPDATE_BEFORE WA"}, 5}},
			{"earlier delete applies", []row.Row{r("d", 1, "", 1), r("c", 1, "NY", 2), r("c", 1, "TX", 2)}, false,
				want{[]int64{1}, map[int64]string{}, []string{"INSERT NY", "INSERT TX"}, 2}},
			{"other keys unaffected", []row.Row{r("u", 1, "NY", 5), r("c", 2, "WA", 5), r("u", 1, "TX", 5), r("d", 3, "", 5)}, false,
				want{[]int64{3}, map[int64]string{2: "WA"}, []string{"UPDATE_AFTER NY", "UPDATE_AFTER TX"}, 5}},
			// Not ambiguous.
			{"exact duplicate", []row.Row{r("u", 1, "NY", 5), r("b", 1, "CA", 5), r("u", 1, "NY", 5)}, false,
				want{[]int64{1}, map[int64]string{1: "NY"}, nil, 0}},
			{"a later change decides", []row.Row{r("u", 1, "NY", 5), r("u", 1, "TX", 5), r("u", 1, "CA", 6)}, false,
				want{nil, map[int64]string{1: "CA"}, nil, 0}},
			{"before and after image", []row.Row{r("u", 1, "NY", 5), r("b", 1, "CA", 5)}, false,
				want{[]int64{1}, map[int64]string{1: "NY"}, nil, 0}},
			{"delete and insert", []row.Row{r("c", 1, "NY", 5), r("d", 1, "CA", 5)}, false,
				want{[]int64{1}, map[int64]string{1: "NY"}, nil, 0}},
		} {
			// In memory, and spilled one change a run: the Sorter keeps at least 1 MiB,
			// so rows of 600 KiB (a wide city) spill each change in a run of its own.
			for _, spill := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/spill=%v", mode, tc.name, spill), func(t *testing.T) {
					rows := tc.rows
					if spill {
						rows = nil
						for _, r := range tc.rows {
							v := slices.Clone(r.Values())
							v[2] = strings.Repeat("c", 600<<10)
							rows = append(rows, row.New([]string{"op", "id", "city", "state", "seq"}, v))
						}
					}
					run := runShard(t, f.shardConfig(tbl, tc.upsert), rows)
					var dels []int64
					for _, k := range run.DeleteKeys {
						dels = append(dels, k[0].(int64))
					}
					slices.Sort(dels)
					if !slices.Equal(dels, tc.want.deletes) {
						t.Errorf("delete keys %v, want %v", dels, tc.want.deletes)
					}
					got := map[int64]string{}
					for _, r := range run.written() {
						got[r.Value(0).(int64)] = r.Value(2).(string)
					}
					if fmt.Sprint(got) != fmt.Sprint(tc.want.rows) {
						t.Errorf("rows %v, want %v", got, tc.want.rows)
					}
					var held []string
					for _, rj := range run.dead {
						kind := strings.Fields(strings.TrimPrefix(rj.Err.Error(), prefix))[0]
						held = append(held, kind+" "+rj.Row.Value(2).(string))
						for _, s := range []string{ErrAmbiguousOrder.Error(), "key (id=1)", fmt.Sprintf("at sequence number %d", tc.want.seq)} {
							if !strings.Contains(rj.Err.Error(), s) {
								t.Errorf("reason %q does not name %q", rj.Err, s)
							}
						}
					}
					slices.Sort(held)
					if !slices.Equal(held, tc.want.rejected) {
						t.Errorf("held back %v, want %v", held, tc.want.rejected)
					}
					if run.Stats.Ambiguous != int64(len(tc.want.rejected)) {
						t.Errorf("Stats.Ambiguous %d, want %d", run.Stats.Ambiguous, len(tc.want.rejected))
					}
					if spills := run.Stats.Spills; spill && spills != len(rows)-1 || !spill && spills != 0 {
						t.Errorf("%d spills of %d changes, want %d", spills, len(rows), map[bool]int{true: len(rows) - 1}[spill])
					}
					var maxSeq int64 // held-back changes count as handled
					for _, r := range tc.rows {
						maxSeq = max(maxSeq, r.Value(4).(int64))
					}
					if run.MaxSeq != maxSeq {
						t.Errorf("MaxSeq %d, want %d", run.MaxSeq, maxSeq)
					}
				})
			}
		}
	}
}

// TestCollapseChecked: CollapseChecked reports an ambiguous key once with every
// change of its last sequence number, and emits the key's state before them.
func TestCollapseChecked(t *testing.T) {
	recs := []Record{
		{Key: []byte("k1"), Seq: 1, Kind: Insert, Row: []byte("a")},
		{Key: []byte("k1"), Seq: 2, Kind: UpdateBefore, Row: []byte("a")},
		{Key: []byte("k1"), Seq: 2, Kind: UpdateAfter, Row: []byte("b")},
		{Key: []byte("k1"), Seq: 2, Kind: UpdateAfter, Row: []byte("c")},
		{Key: []byte("k2"), Seq: 2, Kind: Insert, Row: []byte("d")},
	}
	seq := func(yield func(*Record, error) bool) {
		for i := range recs {
			if !yield(&recs[i], nil) {
				return
			}
		}
	}
	var nets []string
	var amb []string
	err := CollapseChecked(seq, false, func(n *Net) error {
		nets = append(nets, fmt.Sprintf("%s %+v %s %d/%d", n.Key, n.NetEffect, n.Row, n.MaxSeq, n.Changes))
		return nil
	}, func(a *Ambiguous) error {
		for _, c := range a.Changes {
			amb = append(amb, fmt.Sprintf("%s %d %s %s", c.Key, c.Seq, c.Kind, c.Row))
		}
		return nil
	})
	want := []string{"k1 {DeletePrior:false Write:true} a 1/1", "k2 {DeletePrior:false Write:true} d 2/1"}
	wantAmb := []string{"k1 2 UPDATE_BEFORE a", "k1 2 UPDATE_AFTER b", "k1 2 UPDATE_AFTER c"}
	if err != nil || !slices.Equal(nets, want) || !slices.Equal(amb, wantAmb) {
		t.Fatalf("CollapseChecked = %q, %q, %v; want %q, %q", nets, amb, err, want, wantAmb)
	}
}
