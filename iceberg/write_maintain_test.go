package iceberg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestMaintenanceAcrossBatchRuns: maintenance_every_commits counts the table's
// commits since its last compaction, not only the running job's. Ten batch appends,
// each its own pipeline with one commit (as a scheduled batch job makes them), with
// maintenance every 5 commits: the 5th and the 10th run compact the small files the
// runs before left, so the table never holds more than 5 data files. Counting per
// run alone, no run would reach 5 commits and the files would pile up to 10.
func TestMaintenanceAcrossBatchRuns(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	ident := table.Identifier{"db", "batches"}
	all := events(60)
	var files []int
	for run := range 10 {
		cfg := iceberg.WriteConfig{Table: "db.batches", CatalogName: lc.Name, CatalogProperties: lc.Props,
			SinkID: fmt.Sprintf("batch-%d", run)}
		cfg = cfg.With(iceberg.WithMaintenanceEveryCommits(5))
		tbl := batchRun(t, lc, ident, run, cfg, all[run*6:(run+1)*6])
		files = append(files, len(icebergtest.DataFiles(t, tbl)))
		compacted := 0
		for _, s := range tbl.Metadata().Snapshots() {
			if s.Summary != nil && s.Summary.Properties[maintain.SummaryCompactionID] != "" {
				compacted++
			}
		}
		if want := (run + 1) / 5; compacted != want {
			t.Errorf("after run %d: %d compactions, want %d", run+1, compacted, want)
		}
	}
	if want := []int{1, 2, 3, 4, 1, 2, 3, 4, 5, 1}; fmt.Sprint(files) != fmt.Sprint(want) {
		t.Errorf("data files after each run = %v, want %v", files, want)
	}
}

// TestMaintenanceIntervalAcrossBatchRuns: maintenance_interval_seconds counts from the
// table's last maintenance (its newest compaction snapshot, or its oldest snapshot
// when it has none), not from each run's first commit. Six batch appends, each its own
// pipeline with one commit, 1.5 s apart, with an interval of 1 s: every run after the
// first finds the interval passed and plans a compaction; the 5th run's plan has the 5
// small files compaction needs (DefaultMinInputFiles) and rewrites them. Counting from
// each run's first commit, no run would ever be due.
func TestMaintenanceIntervalAcrossBatchRuns(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	ident := table.Identifier{"db", "timed"}
	all := events(36)
	var files []int
	for run := range 6 {
		if run > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		cfg := iceberg.WriteConfig{Table: "db.timed", CatalogName: lc.Name, CatalogProperties: lc.Props,
			SinkID: fmt.Sprintf("timed-%d", run)}
		cfg = cfg.With(iceberg.WithMaintenanceInterval(time.Second))
		files = append(files, len(icebergtest.DataFiles(t, batchRun(t, lc, ident, run, cfg, all[run*6:(run+1)*6]))))
	}
	if want := []int{1, 2, 3, 4, 1, 2}; fmt.Sprint(files) != fmt.Sprint(want) {
		t.Errorf("data files after each run = %v, want %v", files, want)
	}
}

// batchRun runs one batch write of rows (run's 6, one commit) and returns the table
// after it, checked valid and holding the 6 rows of each run so far.
func batchRun(t *testing.T, lc *icebergtest.LocalCatalog, ident table.Identifier, run int, cfg iceberg.WriteConfig, rows []Event) *table.Table {
	t.Helper()
	if snaps := runWrite(t, cfg, rows); len(snaps) != 1 {
		t.Fatalf("run %d: snapshots %+v, want 1", run, snaps)
	}
	tbl, err := lc.Catalog.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	got := icebergtest.ReadAll(t, tbl, nil)
	defer got.Release()
	if n := got.NumRows(); n != int64(6*(run+1)) {
		t.Fatalf("run %d: %d rows, want %d", run, n, 6*(run+1))
	}
	return tbl
}
