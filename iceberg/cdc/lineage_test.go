package cdc

import (
	"context"
	"maps"
	"testing"
)

// TestResolutionRowIDs: RowIDs gives the resolved keys that want accepts, and only
// those, their row's _row_id (first_row_id plus position here: the seed stores no
// _row_id); a key not in the table has none.
func TestResolutionRowIDs(t *testing.T) {
	f := newFixture(t, nil, "rowids")
	f.seed(t, cityRows(20), 10) // ids 1..10 at rows 0..9, ids 11..20 at rows 10..19
	tbl := f.table(t)
	keys := [][]any{{int64(3)}, {int64(15)}, {int64(20)}, {int64(99)}} // 99 is not in the table
	res, err := Resolve(context.Background(), tbl, f.keys, keys)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want func(int32) bool
		ids  map[int32]int64
	}{
		{"all", func(int32) bool { return true }, map[int32]int64{0: 2, 1: 14, 2: 19}},
		{"second file only", func(k int32) bool { return k == 2 }, map[int32]int64{2: 19}},
		{"none", func(int32) bool { return false }, map[int32]int64{}},
	} {
		ids, err := res.RowIDs(context.Background(), fs, c.want)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(ids, c.ids) {
			t.Errorf("%s: row ids %v, want %v", c.name, ids, c.ids)
		}
	}
}
