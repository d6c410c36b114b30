package iceberg_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// BenchmarkMergeOnReadHistory applies successive 10,000-change batches with random
// keys (60% updates and 20% deletes of live ids, 20% inserts of new ids) to a
// 1,000,000-row v3 table in 10 data files, each batch its own pipeline run and
// commit through Write on prism with the default shards. It reports the mean time
// of the first three batches and of the last three, their ratio (late/early: a
// sink whose cost grows with the table's history has a ratio above 1), and the
// live data files and DVs after the last batch; the table must equal a model.
//
//	go test -run '^$' -bench MergeOnReadHistory -benchtime 1x ./iceberg/ -args -history_batches 30
//
// With -history_compact it then runs Maintain (rewrite_data_files folding every DV)
// and reports the data and delete files left, and the full-scan time of the compacted
// table over that of a never-changed table holding the same rows (medians of
// interleaved rounds); both tables must equal the model.
var (
	historyBatches = flag.Int("history_batches", 30, "BenchmarkMergeOnReadHistory: number of 10,000-change batches")
	historyCompact = flag.Bool("history_compact", false, "BenchmarkMergeOnReadHistory: compact afterwards and compare full scans with a never-changed table")
)

func BenchmarkMergeOnReadHistory(b *testing.B) {
	const changes = 10_000
	batches := *historyBatches
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lc := icebergtest.NewLocalCatalog(b)
		tbl := icebergtest.CreateTable(b, lc.Catalog, "db.history", cityTableSchema())
		model := make(map[int64]string, 1_000_000)
		for lo := 0; lo < 1_000_000; lo += 100_000 {
			rows := make([][]any, 0, 100_000)
			for id := lo; id < lo+100_000; id++ {
				rows = append(rows, []any{int64(id), fmt.Sprintf("city-%d", id), "CA"})
				model[int64(id)] = fmt.Sprintf("city-%d|CA", id)
			}
			rec := icebergtest.Records(b, tbl.Schema(), rows)
			tbl = icebergtest.AppendRecords(b, tbl, rec)
			rec.Release()
		}
		rng := rand.New(rand.NewPCG(11, uint64(i)))
		live := make([]int64, 0, len(model))
		for id := range int64(1_000_000) {
			live = append(live, id)
		}
		next := int64(1_000_000)
		var times []time.Duration
		for batch := range batches {
			rows, picked := make([]iceberg.Row, 0, changes), map[int64]bool{}
			for len(rows) < changes {
				seq := int64(batch*changes + len(rows) + 1)
				switch r := rng.IntN(10); {
				case r < 2: // insert
					id := next
					next++
					city := fmt.Sprintf("new-%d-%d", batch, id)
					rows = append(rows, cdcRow(iceberg.ChangeInsert, id, city, "TX", seq))
					model[id] = city + "|TX"
					live = append(live, id)
				default:
					j := rng.IntN(len(live))
					id := live[j]
					if picked[id] {
						continue
					}
					picked[id] = true
					if r < 4 { // delete
						rows = append(rows, cdcRow(iceberg.ChangeDelete, id, "", "", seq))
						delete(model, id)
						live[j] = live[len(live)-1]
						live = live[:len(live)-1]
					} else {
						city := fmt.Sprintf("upd-%d-%d", batch, id)
						rows = append(rows, cdcRow(iceberg.ChangeUpdateAfter, id, city, "NY", seq))
						model[id] = city + "|NY"
					}
				}
			}
			p, s := beam.NewPipelineWithRoot()
			res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.history", CatalogName: lc.Name, CatalogProperties: lc.Props,
				Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, SinkID: fmt.Sprintf("history-%d", batch)},
				beam.CreateList(s, rows))
			if err != nil {
				b.Fatal(err)
			}
			beam.ParDo0(s, &morSnapsFn{Key: "history"}, res.Snapshots)
			start := time.Now()
			b.StartTimer()
			if err := ptest.Run(p); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			times = append(times, time.Since(start))
		}
		got, tbl := cityContentsTB(b, lc, "history")
		if diff := diffModel(model, got); diff != "" {
			b.Fatalf("table differs from the model after %d batches:\n%.2000s", batches, diff)
		}
		early, late := meanDuration(times[:min(3, len(times))]), meanDuration(times[max(0, len(times)-3):])
		b.ReportMetric(early.Seconds(), "s/early-batch")
		b.ReportMetric(late.Seconds(), "s/late-batch")
		b.ReportMetric(late.Seconds()/early.Seconds(), "late/early")
		b.ReportMetric(float64(len(icebergtest.DataFiles(b, tbl))), "data-files")
		b.ReportMetric(float64(len(icebergtest.LiveDVs(b, tbl))), "live-DVs")
		if *historyCompact {
			compactAndCompareScans(b, lc, model)
		}
		b.Logf("batch times: %v", slices.Collect(func(yield func(string) bool) {
			for _, d := range times {
				if !yield(d.Round(time.Millisecond).String()) {
					return
				}
			}
		}))
	}
}

func meanDuration(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(1, len(ds)))
}

// compactAndCompareScans compacts db.history with Maintain, checks it against model,
// writes the model's rows once to db.fresh, and reports files left and the ratio of
// full-scan medians (compacted / fresh) over interleaved rounds.
func compactAndCompareScans(b *testing.B, lc *icebergtest.LocalCatalog, model map[int64]string) {
	one := 1
	p, s := beam.NewPipelineWithRoot()
	iceberg.Maintain(s, iceberg.MaintainConfig{Table: "db.history", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Operations: []string{iceberg.OpRewriteDataFiles}, DeleteFileThreshold: &one})
	start := time.Now()
	if err := ptest.Run(p); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "s/compaction")
	got, compacted := cityContentsTB(b, lc, "history")
	if diff := diffModel(model, got); diff != "" {
		b.Fatalf("compacted table differs from the model:\n%.2000s", diff)
	}
	b.ReportMetric(float64(len(icebergtest.DataFiles(b, compacted))), "data-files-compacted")
	b.ReportMetric(float64(len(icebergtest.DeleteFiles(b, compacted))), "delete-files-compacted")
	fresh := icebergtest.CreateTable(b, lc.Catalog, "db.fresh", cityTableSchema())
	ids := slices.Sorted(maps.Keys(model))
	rows := make([][]any, 0, len(ids))
	for _, id := range ids {
		city, state, _ := strings.Cut(model[id], "|")
		rows = append(rows, []any{id, city, state})
	}
	rec := icebergtest.Records(b, fresh.Schema(), rows)
	icebergtest.AppendRecords(b, fresh, rec)
	rec.Release()
	if got, _ := cityContentsTB(b, lc, "fresh"); diffModel(model, got) != "" {
		b.Fatal("fresh table differs from the model")
	}
	scan := func(name string) time.Duration {
		tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", name})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		at, err := tbl.Scan().ToArrowTable(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if at.NumRows() != int64(len(model)) {
			b.Fatalf("%s: %d rows, want %d", name, at.NumRows(), len(model))
		}
		at.Release()
		return d
	}
	for _, name := range []string{"history", "fresh"} {
		tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", name})
		if err != nil {
			b.Fatal(err)
		}
		fs, _ := tbl.FS(context.Background())
		ms, err := tbl.CurrentSnapshot().Manifests(fs)
		if err != nil {
			b.Fatal(err)
		}
		var desc []string
		for _, m := range ms {
			desc = append(desc, fmt.Sprintf("%v(%d added, %d existing, %d deleted)", m.ManifestContent(), m.AddedDataFiles(), m.ExistingDataFiles(), m.DeletedDataFiles()))
		}
		b.Logf("%s: %d manifests: %s", name, len(ms), strings.Join(desc, ", "))
	}
	var tc, tf []time.Duration
	for range 7 {
		tc, tf = append(tc, scan("history")), append(tf, scan("fresh"))
	}
	slices.Sort(tc)
	slices.Sort(tf)
	b.ReportMetric(tc[3].Seconds(), "s/scan-compacted")
	b.ReportMetric(tf[3].Seconds(), "s/scan-fresh")
	b.ReportMetric(tc[3].Seconds()/tf[3].Seconds(), "compacted/fresh")
}
