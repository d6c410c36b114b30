package iceberg_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// writtenWork are the counters of work a write did (README "Write counters").
var writtenWork = []string{"commits", "rows_written", "data_files_written", "data_bytes_written",
	"dvs_written", "dvs_replaced", "positions_deleted", "equality_delete_files_written",
	"late_panes_committed", "panes_skipped_with_data"}

// TestRerunCountsNoWrittenWork reruns a merge-on-read batch and an append batch with
// the same sink_id: the first run counts its work, the rerun finds its window
// committed (panes_skipped_committed), reports it Skipped, and adds 0 to every
// written-work counter.
func TestRerunCountsNoWrittenWork(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "rerun_mor", 200, 3)
	mor := iceberg.WriteConfig{Table: "db.rerun_mor", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", Upsert: true,
		ChangeTypeMap:   map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
		EqualityColumns: []string{"id"}, SinkID: "rerun-mor"}
	changes := []DebeziumChange{{Op: "d", ID: 10, Seq: 1}, {Op: "u", ID: 11, City: "x", State: "NY", Seq: 2},
		{Op: "c", ID: 500, City: "y", State: "WA", Seq: 3}}
	app := iceberg.WriteConfig{Table: "db.rerun_app", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "rerun-app"}
	events := []Event{{ID: 1, Region: "eu"}, {ID: 2, Region: "us"}}
	for _, tc := range []struct {
		name  string
		cfg   iceberg.WriteConfig
		build func(s beam.Scope) beam.PCollection
		first []string // counters the first run must have counted
	}{
		{"merge-on-read", mor, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, changes) },
			[]string{"commits", "rows_written", "dvs_written", "positions_deleted"}},
		{"append", app, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, events) },
			[]string{"commits", "rows_written", "data_files_written"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, _, counters := runMORCounters(t, tc.cfg, tc.build)
			for _, c := range tc.first {
				if counters[c] == 0 {
					t.Fatalf("first run: %s = 0 (%v), snapshots %+v", c, counters, snaps)
				}
			}
			snaps, _, counters = runMORCounters(t, tc.cfg, tc.build)
			for _, c := range writtenWork {
				if counters[c] != 0 {
					t.Errorf("rerun: %s = %d, want 0 (counters %v)", c, counters[c], counters)
				}
			}
			if counters["panes_skipped_committed"] != 1 {
				t.Errorf("rerun: panes_skipped_committed = %d, want 1", counters["panes_skipped_committed"])
			}
			if len(snaps) != 1 || !snaps[0].Skipped || snaps[0].SnapshotID == 0 {
				t.Errorf("rerun snapshots %+v, want one Skipped naming the earlier snapshot", snaps)
			}
		})
	}
}
