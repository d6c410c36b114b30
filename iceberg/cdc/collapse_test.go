package cdc

import (
	"fmt"
	"slices"
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
