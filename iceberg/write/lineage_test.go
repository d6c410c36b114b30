package write

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestShardRowsLineageDirect: past shardRowsToWriters a shard writes its new rows
// itself. With row lineage its files store _row_id: an update carries the id it is
// given (the row its key resolved to, see cdc.ShardOutput.Update), an insert or an
// update without one none (it takes first_row_id plus position).
func TestShardRowsLineageDirect(t *testing.T) {
	defer func(n int64) { shardRowsToWriters = n }(shardRowsToWriters)
	shardRowsToWriters = 0
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "lin", writetest.IDNameSchema())
	tbl = icebergtest.CommitRowDelta(t, tbl, writetest.WriteIDFiles(t, tbl, 0, 100), nil, nil)

	rs := row.SchemaOf(tbl.Schema())
	var packets int
	rows := &shardRows{ctx: ctx, tbl: tbl, rs: rs, rt: &runtime{}, lineage: true, emit: func([]byte) { packets++ }}
	defer rows.release()
	if err := rows.sendFull(&rows.packet); err != nil || rows.bb == nil {
		t.Fatalf("not writing directly: %v", err)
	}
	body := func(id int64, name string) []byte {
		b, err := row.AppendBody(nil, row.Of(rs, []any{id, name}))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := rows.add(body(1000, "new")); err != nil {
		t.Fatal(err)
	}
	// 42 and 7 replace rows with those ids, 5000 a row without one.
	for _, u := range []struct {
		id, rowID int64
		hasID     bool
	}{{42, 42, true}, {7, 7, true}, {5000, 0, false}} {
		if err := rows.addUpdate(body(u.id, "upd"), u.rowID, u.hasID); err != nil {
			t.Fatal(err)
		}
	}
	files, err := rows.close()
	if err != nil {
		t.Fatal(err)
	}
	if packets != 0 || len(files) != 1 {
		t.Fatalf("%d packets emitted, %d files written; want 0 and 1", packets, len(files))
	}
	tbl = icebergtest.CommitRowDelta(t, tbl, files, nil, nil)
	at, err := tbl.Scan(table.WithSelectedFields("id", "name", ibg.RowIDColumnName)).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	got := map[int64]int64{}
	rdr := array.NewTableReader(at, 1024)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids, names, rowIDs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String), rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if names.Value(i) != "n" {
				got[ids.Value(i)] = rowIDs.Value(i)
			}
		}
	}
	// The new file's first_row_id is 100 (the seed took 0..99); its rows are, in
	// order, the insert and the three updates.
	want := map[int64]int64{1000: 100, 42: 42, 7: 7, 5000: 103}
	if len(got) != len(want) {
		t.Fatalf("new rows %v, want %v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("id %d: _row_id %d, want %d (all: %v)", id, got[id], w, got)
		}
	}
}

// TestShardRowsDirectFiles: the rows a shard writes itself (past
// shardRowsToWriters) are in the files close returns. close used to stop the
// writer first and return no file, so those rows were never committed.
func TestShardRowsDirectFiles(t *testing.T) {
	defer func(n int64) { shardRowsToWriters = n }(shardRowsToWriters)
	defer func(n int) { packetBytes = n }(packetBytes)
	shardRowsToWriters, packetBytes = 1, 200 // the first packet goes to the writer, the rest is direct
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "direct", writetest.IDNameSchema())
	rs := row.SchemaOf(tbl.Schema())
	var sent int
	rows := &shardRows{ctx: ctx, tbl: tbl, rs: rs, rt: &runtime{}, emit: func(p []byte) {
		if err := row.DecodeBodies(rs, p[1:], func(row.Row) error { sent++; return nil }); err != nil {
			t.Error(err)
		}
	}}
	defer rows.release()
	for id := range int64(batchRows + 10) {
		b, err := row.AppendBody(nil, row.Of(rs, []any{id, "x"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := rows.add(b); err != nil {
			t.Fatal(err)
		}
	}
	files, err := rows.close()
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	for _, f := range files {
		written += f.Count()
	}
	if sent == 0 || sent > 1000 || int64(sent)+written != batchRows+10 {
		t.Fatalf("%d rows sent to the writer and %d written by the shard, want one packet and the rest (%d rows in all)", sent, written, batchRows+10)
	}
}
