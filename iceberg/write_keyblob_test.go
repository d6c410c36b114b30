package iceberg_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestMergeOnReadKeyIndexBlobs: a batch merge-on-read write into a table held in
// one large data file (1.1M rows, ids ascending, as an in-order load writes
// them) reads the file's key column once and attaches the file's key index blob
// to the table's key index file (a Puffin file the table property
// icebeam.key-index-file names); the next batch resolves the file by
// the blob, not its key column. The table equals the model after each batch and
// passes icebergtest's checks.
func TestMergeOnReadKeyIndexBlobs(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db.big", cityTableSchema(), icebergtest.WithFormatVersion(3))
	const n = 1_100_000
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += 100_000 {
		rows := make([][]any, 0, 100_000)
		for i := lo; i < min(n, lo+100_000); i++ {
			rows = append(rows, []any{int64(i), fmt.Sprintf("city-%d", i), "CA"})
		}
		recs = append(recs, icebergtest.Records(t, tbl.Schema(), rows))
	}
	tbl = icebergtest.AppendRecords(t, tbl, recs...)
	for _, r := range recs {
		r.Release()
	}
	files := icebergtest.DataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("seed: %d data files, want one", len(files))
	}
	column := int64(0) // the key column's stored size, as the first batch reads it

	model := map[int64]string{} // the rows the batches wrote; the others stay city-<id>|CA
	gone := map[int64]bool{}    // the rows they deleted
	batches := [][]iceberg.Row{
		{cdcRow(iceberg.ChangeDelete, 5, "", "", 1), cdcRow(iceberg.ChangeDelete, 500_000, "", "", 2),
			cdcRow(iceberg.ChangeDelete, n-1, "", "", 3), cdcRow(iceberg.ChangeUpdateAfter, 7, "city-7", "NY", 4),
			cdcRow(iceberg.ChangeInsert, 2_000_000, "new", "WA", 5)},
		{cdcRow(iceberg.ChangeDelete, 6, "", "", 6), cdcRow(iceberg.ChangeDelete, 700_000, "", "", 7),
			cdcRow(iceberg.ChangeUpdateAfter, 500_001, "city-500001", "WA", 8), cdcRow(iceberg.ChangeUpdateAfter, 2_000_000, "new", "TX", 9),
			cdcRow(iceberg.ChangeUpdateAfter, 7, "city-7", "OR", 10)},
	}
	for i, rows := range batches {
		cfg := iceberg.WriteConfig{Table: "db.big", CatalogName: lc.Name, CatalogProperties: lc.Props,
			Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, SinkID: fmt.Sprintf("blobs-%d", i)}
		snaps, dead, counters := runMORCounters(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
		if len(dead) != 0 || len(snaps) != 1 || snaps[0].Skipped {
			t.Fatalf("batch %d: snapshots %+v, dead letters %+v", i, snaps, dead)
		}
		for _, r := range rows {
			v := r.Values()
			id := v[1].(int64)
			if v[0] == iceberg.ChangeDelete {
				delete(model, id)
				gone[id] = true
			} else {
				model[id] = v[2].(string) + "|" + v[3].(string)
			}
		}
		switch i {
		case 0:
			column = counters["key_column_bytes_read"]
			if counters["key_index_blobs_written"] != 1 || counters["key_index_blobs_read"] != 0 || column <= 0 {
				t.Fatalf("first batch: counters %v, want the key column read and one blob written", counters)
			}
		case 1:
			if counters["key_index_blobs_read"] != 1 || counters["key_index_blobs_written"] != 0 || counters["key_files_read"] < 1 ||
				counters["key_column_bytes_read"] >= column/4 {
				t.Fatalf("second batch: counters %v, want the large file resolved by its blob (the first read %d bytes)", counters, column)
			}
		}
		tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "big"})
		if err != nil {
			t.Fatal(err)
		}
		icebergtest.RequireValid(t, tbl)
		// The key index file the table property names holds the seed file's blob.
		fs, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		path := tbl.Properties()["icebeam.key-index-file"]
		refs, err := keyblob.Refs(fs, path, 1)
		if err != nil || len(refs) != 1 || refs[files[0].FilePath()].Rows != n {
			t.Fatalf("batch %d: key index file %q: blobs %v, %v; want the seed file's", i, path, refs, err)
		}
		if n := len(slices.Collect(tbl.Metadata().Statistics())); n != 0 {
			t.Fatalf("batch %d: %d statistics files, want none (PyIceberg cannot load custom blob types there)", i, n)
		}
		at := icebergtest.ReadAll(t, tbl, nil, "id", "city", "state")
		got := map[int64]string{}
		rows := 0
		rdr := array.NewTableReader(at, 1<<16)
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			cities, states := rec.Column(1).(*array.String), rec.Column(2).(*array.String)
			for j := range int(rec.NumRows()) {
				rows++
				id := ids.Value(j)
				v := cities.Value(j) + "|" + states.Value(j)
				if _, ok := model[id]; ok || id >= n {
					got[id] = v
				} else if v != fmt.Sprintf("city-%d|CA", id) {
					t.Fatalf("batch %d: id %d = %q, untouched", i, id, v)
				}
				if gone[id] {
					t.Fatalf("batch %d: deleted id %d still there", i, id)
				}
			}
		}
		rdr.Release()
		at.Release()
		if want := n - len(gone) + 1; rows != want {
			t.Fatalf("batch %d: %d rows, want %d", i, rows, want)
		}
		for id, v := range model {
			if got[id] != v {
				t.Fatalf("batch %d: id %d = %q, want %q", i, id, got[id], v)
			}
		}
	}
}
