package iceberg_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// lineageRow is one live row of a table with its row lineage.
type lineageRow struct {
	city   string
	rowID  int64
	seqNum int64
}

// lineageContents reads db.<name> as id -> (city, _row_id,
// _last_updated_sequence_number), checking the table's invariants and that no two
// live rows share a _row_id.
func lineageContents(t *testing.T, lc *icebergtest.LocalCatalog, name string) (map[int64]lineageRow, *table.Table) {
	t.Helper()
	tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", name})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	at := icebergtest.ReadAll(t, tbl, nil, "id", "city", "_row_id", "_last_updated_sequence_number")
	out := map[int64]lineageRow{}
	owner := map[int64]int64{} // _row_id -> id
	rdr := array.NewTableReader(at, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids, cities := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		rowIDs, seqs := rec.Column(2).(*array.Int64), rec.Column(3).(*array.Int64)
		for i := range int(rec.NumRows()) {
			id := ids.Value(i)
			if rowIDs.IsNull(i) || seqs.IsNull(i) {
				t.Fatalf("id %d has no row lineage", id)
			}
			if other, dup := owner[rowIDs.Value(i)]; dup {
				t.Fatalf("ids %d and %d share _row_id %d", other, id, rowIDs.Value(i))
			}
			owner[rowIDs.Value(i)] = id
			out[id] = lineageRow{city: cities.Value(i), rowID: rowIDs.Value(i), seqNum: seqs.Value(i)}
		}
	}
	return out, tbl
}

// TestMergeOnReadRowLineage: on a format-version 3 table, a merge-on-read update
// keeps the _row_id of the row it replaces, as Spark's MERGE does, and its
// _last_updated_sequence_number becomes the commit's; inserted rows get new ids,
// untouched rows keep theirs. The seed's 1,000 rows are one data file, so a seeded
// row's _row_id is its id. A second batch updates rows the first one wrote (whose
// files store _row_id) and rows it inserted (which store none: first_row_id plus
// position), with update images, upserts and a delete-then-insert.
func TestMergeOnReadRowLineage(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		t.Run(fmt.Sprintf("upsert=%v", upsert), func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			seedCities(t, lc, "lin", 1000, 3)
			cfg := iceberg.WriteConfig{Table: "db.lin", CatalogName: lc.Name, CatalogProperties: lc.Props,
				Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: upsert, SinkID: "lin-1"}
			update := func(rows []iceberg.Row, id int64, city string, seq int64) []iceberg.Row {
				if !upsert {
					rows = append(rows, cdcRow(iceberg.ChangeUpdateBefore, id, "", "CA", seq))
				}
				return append(rows, cdcRow(iceberg.ChangeUpdateAfter, id, city, "CA", seq))
			}
			run := func(rows []iceberg.Row) {
				t.Helper()
				snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
				if len(dead) != 0 || len(snaps) != 1 || snaps[0].Skipped {
					t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
				}
			}

			var rows []iceberg.Row
			for id := int64(1); id <= 10; id++ {
				rows = update(rows, id, fmt.Sprintf("up1-%d", id), 1)
			}
			for id := int64(20); id < 25; id++ {
				rows = append(rows, cdcRow(iceberg.ChangeDelete, id, "", "CA", 1))
			}
			for id := int64(1000); id < 1005; id++ {
				rows = append(rows, cdcRow(iceberg.ChangeInsert, id, fmt.Sprintf("new-%d", id), "CA", 1))
			}
			run(rows)
			got, tbl := lineageContents(t, lc, "lin")
			seq1 := tbl.CurrentSnapshot().SequenceNumber
			if len(got) != 1000-5+5 {
				t.Fatalf("%d rows after batch 1, want 1000", len(got))
			}
			for id, r := range got {
				switch {
				case id >= 1 && id <= 10:
					if r.rowID != id || r.seqNum != seq1 || r.city != fmt.Sprintf("up1-%d", id) {
						t.Errorf("updated id %d: %+v, want _row_id %d, sequence number %d", id, r, id, seq1)
					}
				case id >= 1000:
					if r.rowID < 1000 || r.seqNum != seq1 {
						t.Errorf("inserted id %d: %+v, want a new _row_id (>= 1000), sequence number %d", id, r, seq1)
					}
				default:
					if r.rowID != id || r.seqNum != 1 {
						t.Errorf("untouched id %d: %+v, want _row_id %d, sequence number 1", id, r, id)
					}
				}
			}
			before := got

			// Batch 2: rows written by batch 1 (stored ids for 1..5, first_row_id plus
			// position for 1000..1001), a seeded row replaced by a delete and an insert,
			// and a seeded row updated.
			cfg.SinkID = "lin-2"
			rows = nil
			for _, id := range []int64{1, 2, 3, 4, 5, 1000, 1001, 500} {
				rows = update(rows, id, fmt.Sprintf("up2-%d", id), 2)
			}
			rows = append(rows, cdcRow(iceberg.ChangeDelete, 600, "", "CA", 2),
				cdcRow(iceberg.ChangeInsert, 600, "again-600", "CA", 3))
			run(rows)
			got, tbl = lineageContents(t, lc, "lin")
			seq2 := tbl.CurrentSnapshot().SequenceNumber
			for _, id := range []int64{1, 2, 3, 4, 5, 1000, 1001, 500, 600} {
				r, was := got[id], before[id]
				if r.rowID != was.rowID || r.seqNum != seq2 || r.city == was.city {
					t.Errorf("id %d after batch 2: %+v, want _row_id %d (as before: %+v), sequence number %d, a new city", id, r, was.rowID, was, seq2)
				}
			}
			for _, id := range []int64{6, 1002, 999} {
				if got[id] != before[id] {
					t.Errorf("id %d changed in batch 2: %+v, was %+v", id, got[id], before[id])
				}
			}
		})
	}
}
