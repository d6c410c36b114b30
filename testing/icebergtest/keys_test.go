package icebergtest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

func TestDeleteKeysDV(t *testing.T) {
	ctx := context.Background()
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.keys", SampleSchema())
	rows := SampleRows(300, 5)
	tbl = AppendRecords(t, tbl, Records(t, SampleSchema(), rows[:150]))
	tbl = AppendRecords(t, tbl, Records(t, SampleSchema(), rows[150:]))

	tbl, n, err := DeleteKeysDV(ctx, tbl, "id", []any{int64(3), int64(77), int64(150), int64(299), int64(1000)})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("deleted %d positions, want 4", n)
	}
	// Deleting a key again adds no live row back and keeps one DV per file.
	tbl, _, err = DeleteKeysDV(ctx, tbl, "id", []any{int64(3), int64(4)})
	if err != nil {
		t.Fatal(err)
	}
	RequireValid(t, tbl)
	out := ReadAll(t, tbl, nil, "id")
	if out.NumRows() != 295 {
		t.Fatalf("%d rows left, want 295", out.NumRows())
	}
	gone := map[int64]bool{3: true, 4: true, 77: true, 150: true, 299: true}
	rdr := array.NewTableReader(out, 1024)
	defer rdr.Release()
	for rdr.Next() {
		ids := rdr.RecordBatch().Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			if gone[ids.Value(i)] {
				t.Errorf("id %d still readable", ids.Value(i))
			}
		}
	}
	for path, dvs := range LiveDVs(t, tbl) {
		if len(dvs) != 1 {
			t.Errorf("%s: %d live DVs", path, len(dvs))
		}
	}
}
