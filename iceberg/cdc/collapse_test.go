package cdc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/row"
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

// TestCollapseAll runs rows through parse, sort and collapse.
func TestCollapseAll(t *testing.T) {
	p, err := NewParser("db.t", citySchema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"op", "id", "city", "state", "seq"}
	r := func(op string, id int64, state string, seq int64) row.Row {
		return row.New(names, []any{op, id, "c", state, seq})
	}
	type want struct {
		deletes []int64
		rows    map[int64]string
	}
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
		t.Run(tc.name, func(t *testing.T) {
			res, rejected, err := SortAndCollapse(p, tc.rows, tc.upsert, 1<<20)
			if err != nil || len(rejected) > 0 {
				t.Fatalf("err %v, rejected %v", err, rejected)
			}
			var dels []int64
			for _, k := range res.DeleteKeys {
				dels = append(dels, k[0].(int64))
			}
			slices.Sort(dels)
			if !slices.Equal(dels, tc.want.deletes) {
				t.Errorf("delete keys %v, want %v", dels, tc.want.deletes)
			}
			got := map[int64]string{}
			for _, r := range res.Rows {
				got[r.Value(0).(int64)] = r.Value(2).(string)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want.rows) {
				t.Errorf("rows %v, want %v", got, tc.want.rows)
			}
			if res.Changes != len(tc.rows) {
				t.Errorf("changes %d, want %d", res.Changes, len(tc.rows))
			}
		})
	}
	res, rejected, err := SortAndCollapse(p, []row.Row{r("x", 1, "", 1), r("c", 1, "NY", 1)}, false, 1<<20)
	if err != nil || len(rejected) != 1 || len(res.Rows) != 1 {
		t.Fatalf("rejected %v, rows %d, err %v", rejected, len(res.Rows), err)
	}
}

// TestCollapseAmbiguous: two different after-images of one key at its last sequence
// number are held back and reported (naming the key and the sequence number) instead
// of one winning by input order; the key's earlier changes still apply, and equal-seq
// shapes that are not ambiguous collapse as before.
func TestCollapseAmbiguous(t *testing.T) {
	p, err := NewParser("db.t", citySchema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := func(op string, id int64, state string, seq int64) row.Row {
		return change(op, id, "c", state, seq)
	}
	type want struct {
		deletes  []int64
		rows     map[int64]string
		rejected []string // "<kind> <state>" of the held-back changes, sorted
		seq      int64    // the ambiguous sequence number
	}
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
		for _, mem := range []int64{1 << 20, 1} { // in memory, and spilled one record a run
			t.Run(fmt.Sprintf("%s/mem=%d", tc.name, mem), func(t *testing.T) {
				res, rejected, err := SortAndCollapse(p, tc.rows, tc.upsert, mem)
				if err != nil {
					t.Fatal(err)
				}
				var dels []int64
				for _, k := range res.DeleteKeys {
					dels = append(dels, k[0].(int64))
				}
				slices.Sort(dels)
				if !slices.Equal(dels, tc.want.deletes) {
					t.Errorf("delete keys %v, want %v", dels, tc.want.deletes)
				}
				got := map[int64]string{}
				for _, r := range res.Rows {
					got[r.Value(0).(int64)] = r.Value(2).(string)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want.rows) {
					t.Errorf("rows %v, want %v", got, tc.want.rows)
				}
				var held []string
				for _, rj := range rejected {
					kind := strings.Fields(strings.TrimPrefix(rj.Err.Error(), "iceberg: cdc db.t: "))[0]
					held = append(held, kind+" "+rj.Row.Value(2).(string))
					if !errors.Is(rj.Err, ErrAmbiguousOrder) {
						t.Errorf("rejected %v: not ErrAmbiguousOrder", rj.Err)
					}
					for _, s := range []string{"key (id=1)", fmt.Sprintf("at sequence number %d", tc.want.seq)} {
						if !strings.Contains(rj.Err.Error(), s) {
							t.Errorf("reason %q does not name %q", rj.Err, s)
						}
					}
				}
				slices.Sort(held)
				if !slices.Equal(held, tc.want.rejected) {
					t.Errorf("held back %v, want %v", held, tc.want.rejected)
				}
				if len(res.Ambiguous) != len(tc.want.rejected) {
					t.Errorf("Result.Ambiguous has %d changes, want %d", len(res.Ambiguous), len(tc.want.rejected))
				}
				if res.Changes+len(res.Ambiguous) != len(tc.rows) {
					t.Errorf("changes %d + ambiguous %d, want %d", res.Changes, len(res.Ambiguous), len(tc.rows))
				}
				var maxSeq int64 // held-back changes count as handled
				for _, r := range tc.rows {
					maxSeq = max(maxSeq, r.Value(4).(int64))
				}
				if res.MaxSeq != maxSeq {
					t.Errorf("MaxSeq %d, want %d", res.MaxSeq, maxSeq)
				}
			})
		}
	}
}

// TestCollapseUnchecked: Collapse (no ambiguous callback) still applies an ambiguous
// key's changes in sort order, as before; CollapseChecked reports it once with every
// change of its last sequence number.
func TestCollapseUnchecked(t *testing.T) {
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
	err := Collapse(seq, false, func(n *Net) error {
		nets = append(nets, fmt.Sprintf("%s %+v %s %d/%d", n.Key, n.NetEffect, n.Row, n.MaxSeq, n.Changes))
		return nil
	})
	want := []string{"k1 {DeletePrior:true Write:true} c 2/4", "k2 {DeletePrior:false Write:true} d 2/1"}
	if err != nil || !slices.Equal(nets, want) {
		t.Fatalf("Collapse = %q, %v; want %q", nets, err, want)
	}
	nets = nil
	var amb []string
	err = CollapseChecked(seq, false, func(n *Net) error {
		nets = append(nets, fmt.Sprintf("%s %+v %s %d/%d", n.Key, n.NetEffect, n.Row, n.MaxSeq, n.Changes))
		return nil
	}, func(a *Ambiguous) error {
		for _, c := range a.Changes {
			amb = append(amb, fmt.Sprintf("%s %d %s %s", c.Key, c.Seq, c.Kind, c.Row))
		}
		return nil
	})
	want = []string{"k1 {DeletePrior:false Write:true} a 1/1", "k2 {DeletePrior:false Write:true} d 2/1"}
	wantAmb := []string{"k1 2 UPDATE_BEFORE a", "k1 2 UPDATE_AFTER b", "k1 2 UPDATE_AFTER c"}
	if err != nil || !slices.Equal(nets, want) || !slices.Equal(amb, wantAmb) {
		t.Fatalf("CollapseChecked = %q, %q, %v; want %q, %q", nets, amb, err, want, wantAmb)
	}
}
