package iceberg_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// Settings of BenchmarkStreamingMergeOnRead, e.g. go test -run '^$' -bench
// StreamingMergeOnRead -benchtime 1x ./iceberg/ -args -stream_bench_shards=2. With
// the defaults the streaming run takes about 50 s of wall time on 2 cores (the write
// falls behind); -stream_bench_duration=10s makes a shorter run.
var (
	streamBenchDuration = flag.Duration("stream_bench_duration", 25*time.Second,
		"BenchmarkStreamingMergeOnRead: how long the periodic source ticks (event time = wall time)")
	streamBenchFrequency = flag.Duration("stream_bench_frequency", time.Second,
		"BenchmarkStreamingMergeOnRead: triggering_frequency_seconds of the write (whole seconds)")
	streamBenchShards = flag.Int("stream_bench_shards", 0,
		"BenchmarkStreamingMergeOnRead: num_shards of the write (0: the default, 16)")
	streamBenchMaintain = flag.Int("stream_bench_maintain", 0,
		"BenchmarkStreamingMergeOnRead: maintenance_every_commits of the write, with expiry keeping 10 snapshots (0: no inline maintenance)")
	streamBenchSeed = flag.Bool("stream_bench_seed", true,
		"BenchmarkStreamingMergeOnRead: seed the table with every id of the key space (one batch write) before the stream, so that the first windows already write to a full-size table")
	streamBenchKeys = flag.Int64("stream_bench_keys", 200_000,
		"BenchmarkStreamingMergeOnRead: the key space the changes pick ids from, and with -stream_bench_seed the rows the table starts with (issue 27's scale run: 50000000)")
	streamBenchIndexMB = flag.Int("stream_bench_index_mb", 0,
		"BenchmarkStreamingMergeOnRead: key_index_memory_mb of the write (0: the default, 256; a 50M-row table's index is about 800 MB)")
	streamBenchBatch = flag.Bool("stream_bench_batch", true,
		"BenchmarkStreamingMergeOnRead: also write the same changes as one batch to a second seeded table, the baseline of streaming/batch")
)

// The change stream of BenchmarkStreamingMergeOnRead: a tick every streamTickMs of
// streamTickChanges changes, 10,000 changes per second of event time, over
// -stream_bench_keys ids.
const (
	streamTickMs      = 100
	streamTickChanges = 1000
	// Of every 20 changes of a tick, 10 insert a new key, 7 update (UPDATE_AFTER) and 3
	// delete a key inserted before.
	streamInsertsPer20 = 10
	streamUpdatesPer20 = 7
)

// BenchChange is one change row of the streaming benchmark.
type BenchChange struct {
	ID  int64  `iceberg:"id"`
	V   string `iceberg:"v"`
	Op  string `iceberg:"op"`
	Seq int64  `iceberg:"_commit_snapshot_sequence_number"`
}

// benchTickChanges calls fn with the changes of tick i, in sequence order, each with
// its offset (ms) from the tick's timestamp. It depends on i (and seeded) alone, so
// that the pipeline's ticks and the model agree whatever order the runner runs them
// in. Inserts take the next new ids (modulo keys, the key space); updates and deletes
// pick ids inserted before them, some of which an earlier change has already deleted
// (an upsert re-inserts those, a delete of them changes nothing). On a seeded table
// (benchSeed) every id of the key space counts as inserted before the first tick.
func benchTickChanges(i, keys int64, seeded bool, fn func(c BenchChange, offsetMs int64)) {
	const insertsPerTick = streamTickChanges * streamInsertsPer20 / 20
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	inserted := i * insertsPerTick // new ids handed out before this tick
	if seeded {
		inserted += keys
	}
	for j := range int64(streamTickChanges) {
		seq := i*streamTickChanges + j + 1
		var id int64
		op := "c"
		switch r := j % 20; {
		case r < streamInsertsPer20 || inserted == 0:
			id = inserted % keys
			inserted++
		case r < streamInsertsPer20+streamUpdatesPer20:
			id, op = rng.Int64N(inserted)%keys, "u"
		default:
			id, op = rng.Int64N(inserted)%keys, "d"
		}
		fn(BenchChange{ID: id, V: "v" + strconv.FormatInt(id, 10) + "." + strconv.FormatInt(seq, 10), Op: op, Seq: seq},
			j*streamTickMs/streamTickChanges)
	}
}

// benchWant is the table a run must leave: the seed (every id of the key space, when
// seeded) under the last change of each id the changes touched (upsert: the last
// change of an id decides; a delete removes it). It holds the touched ids only, so
// that a table of 50M rows is checked without a model of 50M rows.
type benchWant struct {
	keys    int64
	seeded  bool
	changed map[int64]*string // the last value of each id changed; nil: deleted
}

// benchModel returns the table ticks [0, n) must leave.
func benchModel(n, keys int64, seeded bool) benchWant {
	w := benchWant{keys: keys, seeded: seeded, changed: map[int64]*string{}}
	for i := range n {
		benchTickChanges(i, keys, seeded, func(c BenchChange, _ int64) {
			if c.Op == "d" {
				w.changed[c.ID] = nil
			} else {
				w.changed[c.ID] = &c.V
			}
		})
	}
	return w
}

// value returns the value id must have, or false if id must not be in the table.
func (w benchWant) value(id int64) (string, bool) {
	if v, ok := w.changed[id]; ok {
		if v == nil {
			return "", false
		}
		return *v, true
	}
	if w.seeded && id >= 0 && id < w.keys {
		return benchSeedValue(id), true
	}
	return "", false
}

// rows returns the number of rows the table must hold.
func (w benchWant) rows() int64 {
	var n int64
	if w.seeded {
		n = w.keys
	}
	for id, v := range w.changed {
		seed := w.seeded && id >= 0 && id < w.keys
		switch {
		case v == nil && seed:
			n--
		case v != nil && !seed:
			n++
		}
	}
	return n
}

// tickIndexFn turns a periodic impulse into its tick index: ticks start at StartMs,
// one every streamTickMs.
type tickIndexFn struct{ StartMs int64 }

func (f *tickIndexFn) ProcessElement(ts beam.EventTime, _ []byte) int64 {
	return (ts.Milliseconds() - f.StartMs) / streamTickMs
}

// expandTickFn emits the changes of a tick, timestamped within the tick (never
// before the tick's own timestamp).
type expandTickFn struct {
	StartMs int64
	Keys    int64
	Seeded  bool
}

func (f *expandTickFn) ProcessElement(i int64, emit func(beam.EventTime, BenchChange)) {
	at := f.StartMs + i*streamTickMs
	benchTickChanges(i, f.Keys, f.Seeded, func(c BenchChange, off int64) { emit(mtime.FromMilliseconds(at+off), c) })
}

func benchSeedValue(id int64) string { return "seed" + strconv.FormatInt(id, 10) }

// BenchSeedRow is a row of the benchmark table's seed.
type BenchSeedRow struct {
	ID int64  `iceberg:"id"`
	V  string `iceberg:"v"`
}

// seedChunkFn emits the seed rows of ids [chunk*seedChunk, (chunk+1)*seedChunk)
// below Keys.
type seedChunkFn struct{ Keys int64 }

const seedChunk = 10_000

func (f *seedChunkFn) ProcessElement(chunk int64, emit func(BenchSeedRow)) {
	for id := chunk * seedChunk; id < (chunk+1)*seedChunk && id < f.Keys; id++ {
		emit(BenchSeedRow{ID: id, V: benchSeedValue(id)})
	}
}

// benchSeed writes every id of the key space to db.<name> in one batch append of its
// own sink (creating the table with the columns the changes write), before the
// measured run, then makes id the table's identifier field, as a table a
// merge-on-read sink creates has it (compaction sorts by it). An append rather than
// a merge-on-read write: the rows are all new, and a seed of 50M rows then takes a
// minute, not several.
func benchSeed(b *testing.B, lc *icebergtest.LocalCatalog, name string, keys int64) {
	b.Helper()
	p, s := beam.NewPipelineWithRoot()
	var chunks []int64
	for c := int64(0); c*seedChunk < keys; c++ {
		chunks = append(chunks, c)
	}
	rows := beam.ParDo(s, &seedChunkFn{Keys: keys}, beam.CreateList(s, chunks))
	cfg := iceberg.WriteConfig{Table: "db." + name, CatalogName: lc.Name, CatalogProperties: lc.Props,
		SinkID: name + "-seed", Mode: iceberg.Append, TableProperties: map[string]string{"format-version": "3"}}
	if _, err := iceberg.TryWrite(s, cfg, rows); err != nil {
		b.Fatal(err)
	}
	if err := ptest.Run(p); err != nil {
		b.Fatalf("seed: %v", err)
	}
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", name})
	if err != nil {
		b.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).SetIdentifierField([][]string{{"id"}}).Commit(); err != nil {
		b.Fatalf("seed: identifier field: %v", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		b.Fatalf("seed: identifier field: %v", err)
	}
	b.Logf("seed: db.%s holds %d rows in %d data files", name, keys, len(icebergtest.DataFiles(b, tbl)))
}

// timedSnapshot is a SnapshotInfo and the wall time it reached recordTimedFn.
type timedSnapshot struct {
	info iceberg.SnapshotInfo
	at   time.Time
}

var (
	timedMu   sync.Mutex
	timedSnap = map[string][]timedSnapshot{}
)

// recordTimedFn records each SnapshotInfo with the wall time it arrives (prism runs
// in this process).
type recordTimedFn struct{ Key string }

func (f *recordTimedFn) ProcessElement(si iceberg.SnapshotInfo) {
	now := time.Now()
	timedMu.Lock()
	defer timedMu.Unlock()
	timedSnap[f.Key] = append(timedSnap[f.Key], timedSnapshot{info: si, at: now})
}

var deadRows = map[string][]iceberg.DeadLetter{}

// countDeadFn records dead letters.
type countDeadFn struct{ Key string }

func (f *countDeadFn) ProcessElement(d iceberg.DeadLetter) {
	timedMu.Lock()
	defer timedMu.Unlock()
	deadRows[f.Key] = append(deadRows[f.Key], d)
}

func takeDead(key string) []iceberg.DeadLetter {
	timedMu.Lock()
	defer timedMu.Unlock()
	out := deadRows[key]
	delete(deadRows, key)
	return out
}

func takeTimed(key string) []timedSnapshot {
	timedMu.Lock()
	defer timedMu.Unlock()
	out := timedSnap[key]
	delete(timedSnap, key)
	return out
}

func init() {
	beam.RegisterType(reflect.TypeFor[BenchChange]())
	register.DoFn2x1[beam.EventTime, []byte, int64](&tickIndexFn{})
	register.DoFn2x0[int64, func(beam.EventTime, BenchChange)](&expandTickFn{})
	register.Emitter2[beam.EventTime, BenchChange]()
	beam.RegisterType(reflect.TypeFor[BenchSeedRow]())
	register.DoFn2x0[int64, func(BenchSeedRow)](&seedChunkFn{})
	register.Emitter1[BenchSeedRow]()
	register.DoFn1x0[iceberg.SnapshotInfo](&recordTimedFn{})
	register.DoFn1x0[iceberg.DeadLetter](&countDeadFn{})
}

// benchCDCConfig is the merge-on-read write of the benchmark to db.<name>.
func benchCDCConfig(lc *icebergtest.LocalCatalog, name string) iceberg.WriteConfig {
	cfg := iceberg.WriteConfig{Table: "db." + name, CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: name,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", EqualityColumns: []string{"id"}, Upsert: true,
		ChangeTypeMap:   map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
		TableProperties: map[string]string{"format-version": "3"}}
	if *streamBenchShards > 0 {
		cfg = cfg.With(iceberg.WithNumShards(*streamBenchShards))
	}
	if *streamBenchIndexMB > 0 {
		cfg = cfg.With(iceberg.WithKeyIndexMemoryMB(*streamBenchIndexMB))
	}
	return cfg
}

// checkBenchTable fails b unless db.<name> is valid (at most one live DV per data
// file, summaries agree with the manifests) and holds exactly the rows of want. It
// returns the table's live data files and deletion vectors.
func checkBenchTable(b *testing.B, lc *icebergtest.LocalCatalog, name string, want benchWant) (dataFiles, dvs int) {
	b.Helper()
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", name})
	if err != nil {
		b.Fatal(err)
	}
	if err := icebergtest.CheckTable(ctx, tbl); err != nil {
		b.Fatalf("db.%s: %v", name, err)
	}
	if diff := diffBenchTable(ctx, tbl, want); diff != "" {
		for _, snap := range tbl.Metadata().Snapshots() {
			if snap.Summary != nil {
				p := snap.Summary.Properties
				b.Logf("snapshot %d parent %v %s: through %s max-seq %s late %s, +%s rows, +%s delete files, -%s delete files",
					snap.SnapshotID, snap.ParentSnapshotID, snap.Summary.Operation, p[commit.CommittedThroughKey(name)],
					p["beam.cdc.max-committed-seq."+name], p[commit.LatePaneKey(name)], p["added-records"], p["added-delete-files"], p["removed-delete-files"])
			}
		}
		b.Fatalf("db.%s: not the rows of the model of the generated changes: %s", name, diff)
	}
	for _, d := range icebergtest.LiveDVs(b, tbl) {
		dvs += len(d)
	}
	return len(icebergtest.DataFiles(b, tbl)), dvs
}

// BenchmarkStreamingMergeOnRead runs a streaming CDC write on prism: a periodic
// impulse ticks every 100 ms for -stream_bench_duration (25 s) of wall time, each
// tick becomes 1,000 changes (10,000 per second of event time: inserts of new ids,
// upserts and deletes of ids inserted before) timestamped within the tick, written
// merge-on-read with deletion vectors (format-version 3) to a SQLite catalog with
// triggering_frequency_seconds -stream_bench_frequency (1 s). With
// -stream_bench_seed (the default) the table first gets every id of the key space
// (-stream_bench_keys, 200,000 rows; one batch append of its own sink), so that the
// first windows write to a table of full size and the last-5/first-5 latency ratio
// measures the cost of the table's history rather than the table filling up. Expiry
// (-stream_bench_maintain) keeps the seed sink's token snapshot, not the snapshots
// after it (see maintain.ExpireSnapshots). It reports each
// window's commit latency (the wall time its SnapshotInfo arrives minus the window's
// end) at p50, p95 and max, the windows committed, the late panes, the sustained
// rate (changes committed over the time from the first tick to the last commit),
// the process's peak RSS during the stream (prism and its workers run in this
// process; the peak is reset after the seed), the key-column bytes the shards read
// per window and the time they spent building the key index (cold start), and, with
// -stream_bench_batch, the same changes written as one batch merge-on-read write in
// the same process as the baseline (streaming/batch is the ratio of the two rates;
// the streaming rate cannot exceed the source's 10,000 changes/s). A scale run (issue
// 27): -stream_bench_keys=50000000 -stream_bench_duration=60s
// -stream_bench_maintain=10 -stream_bench_batch=false. It fails unless every window of the
// stream was committed exactly once, nothing reached the dead letter output, and
// both tables pass icebergtest.CheckTable and hold exactly the rows a model of the
// changes predicts. Run with -benchtime=1x.
//
// A latency can be slightly negative: the periodic source moves its watermark to the
// next tick as soon as it emits a tick, so a window closes up to one tick (100 ms)
// before its end in wall time.
func BenchmarkStreamingMergeOnRead(b *testing.B) {
	freq := *streamBenchFrequency
	if freq < time.Second || freq%time.Second != 0 {
		b.Fatalf("-stream_bench_frequency %s: want whole seconds", freq)
	}
	dur := streamBenchDuration.Truncate(freq)
	if dur < 2*freq {
		b.Fatalf("-stream_bench_duration %s: want at least two windows of %s", *streamBenchDuration, freq)
	}
	ticks := int64(dur / (streamTickMs * time.Millisecond))
	changes := ticks * streamTickChanges
	seeded, keys := *streamBenchSeed, *streamBenchKeys
	if keys < streamTickChanges {
		b.Fatalf("-stream_bench_keys %d: want at least %d", keys, streamTickChanges)
	}
	want := benchModel(ticks, keys, seeded)
	b.ReportAllocs()
	b.StopTimer() // ns/op is the streaming run alone
	for n := range b.N {
		lc := icebergtest.NewLocalCatalog(b)

		// Streaming: ticks from the next window boundary at least 2 s ahead (the
		// pipeline starts meanwhile), so that windows are whole and the last one ends
		// with the source.
		name := fmt.Sprintf("stream_%d", n)
		if seeded {
			benchSeed(b, lc, name, keys)
		}
		resetPeakRSS(b)
		start := time.Now().Add(2 * time.Second).Truncate(freq).Add(freq)
		end := start.Add(dur)
		p, s := beam.NewPipelineWithRoot()
		imp := periodic.Impulse(s, start, end, streamTickMs*time.Millisecond, false)
		idx := beam.ParDo(s, &tickIndexFn{StartMs: start.UnixMilli()}, imp)
		rows := beam.ParDo(s, &expandTickFn{StartMs: start.UnixMilli(), Keys: keys, Seeded: seeded}, idx)
		cfg := benchCDCConfig(lc, name).With(iceberg.WithTriggeringFrequency(freq))
		if *streamBenchMaintain > 0 {
			cfg = cfg.With(iceberg.WithMaintenanceEveryCommits(*streamBenchMaintain), iceberg.WithExpireSnapshots(0, 10))
		}
		res, err := iceberg.TryWrite(s, cfg, rows)
		if err != nil {
			b.Fatal(err)
		}
		beam.ParDo0(s, &recordTimedFn{Key: name}, res.Snapshots)
		beam.ParDo0(s, &countDeadFn{Key: name}, res.DeadLetter)
		b.StartTimer()
		pr, err := ptest.RunWithMetrics(p)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		peakMB := peakRSSMB(b)
		snaps := takeTimed(name)
		counters := map[string]int64{}
		for _, c := range pr.Metrics().AllMetrics().Counters() {
			if c.Key.Namespace == write.MetricsNamespace {
				counters[c.Key.Name] += c.Result()
			}
		}

		// Figures first, so that a failed check below still shows them.
		var lat []float64
		var late int
		var last time.Time
		committed := map[int64]bool{}
		var details strings.Builder
		for _, ts := range snaps {
			si := ts.info
			fmt.Fprintf(&details, "\n\twindow %d late=%v skipped=%v: +%d rows in %d files, %d positions deleted by %d DVs (%d replaced), at %+dms",
				si.WindowEndMs, si.Late, si.Skipped, si.RowsAdded, si.FilesAdded, si.PositionsDeleted, si.DeleteFilesAdded, si.DVsRemoved,
				ts.at.Sub(time.UnixMilli(si.WindowEndMs+1)).Milliseconds())
			if si.Late {
				late++
			} else {
				committed[si.WindowEndMs] = true
				lat = append(lat, float64(ts.at.Sub(time.UnixMilli(si.WindowEndMs+1)).Milliseconds()))
			}
			if ts.at.After(last) {
				last = ts.at
			}
		}
		if len(lat) == 0 {
			b.Fatal("no window committed")
		}
		var missing []int64
		for w := start.Add(freq); !w.After(end); w = w.Add(freq) {
			if !committed[w.UnixMilli()-1] {
				missing = append(missing, w.UnixMilli()-1)
			}
		}
		sorted := slices.Clone(lat)
		slices.Sort(sorted)
		sustained := float64(changes) / last.Sub(start).Seconds()
		b.Logf("streaming (seeded with %d rows: %v): %d changes in %d ticks, %d of %d windows of %s committed (%d late panes), p50 %.0f ms, p95 %.0f ms, max %.0f ms, %.0f changes/s; latencies (ms, in commit order) %v",
			keys, seeded, changes, ticks, len(lat), int(dur/freq), freq, late, percentile(sorted, 50), percentile(sorted, 95), sorted[len(sorted)-1], sustained, lat)
		if len(missing) > 0 {
			b.Fatalf("windows ending %v were never committed (no SnapshotInfo, no snapshot):%s", missing, details.String())
		}
		if d := takeDead(name); len(d) > 0 {
			b.Fatalf("%d dead letters, first %+v", len(d), d[0])
		}
		for _, ts := range snaps {
			if ts.info.Skipped {
				b.Fatalf("window ending %d skipped:%s", ts.info.WindowEndMs, details.String())
			}
		}
		files, dvs := checkBenchTable(b, lc, name, want)
		keyBytes := float64(counters["key_column_bytes_read"])
		b.Logf("streaming: %d data files and %d DVs at the end; peak RSS %.0f MB; key columns read %.1f MB (%.1f MB per window), key index spill read %.1f MB, key index build %d ms",
			files, dvs, peakMB, keyBytes/1e6, keyBytes/1e6/float64(len(lat)), float64(counters["key_index_spill_bytes_read"])/1e6, counters["key_index_build_ms"])

		if *streamBenchBatch {
			batch := benchBatchBaseline(b, lc, fmt.Sprintf("batch_%d", n), ticks, want)
			b.ReportMetric(batch, "batch-changes/s")
			b.ReportMetric(sustained/batch, "streaming/batch")
		}
		b.ReportMetric(percentile(sorted, 50), "p50-commit-latency-ms")
		b.ReportMetric(percentile(sorted, 95), "p95-commit-latency-ms")
		b.ReportMetric(sorted[len(sorted)-1], "max-commit-latency-ms")
		if len(lat) >= 10 {
			// Does a commit cost more as the table's history grows? On-time windows
			// commit in window order, so lat's ends are the first and last windows.
			first, last := meanOf(lat[:5]), meanOf(lat[len(lat)-5:])
			b.ReportMetric(first, "first5-latency-ms")
			b.ReportMetric(last, "last5-latency-ms")
			b.ReportMetric(last/first, "last5/first5")
			var blocks []string
			for i := 0; i+30 <= len(lat); i += 30 {
				blocks = append(blocks, fmt.Sprintf("%.0f", meanOf(lat[i:i+30])))
			}
			b.Logf("mean commit latency (ms) per block of 30 windows: %s", strings.Join(blocks, ", "))
		}
		b.ReportMetric(float64(len(lat)), "windows")
		b.ReportMetric(float64(late), "late-panes")
		b.ReportMetric(sustained, "changes/s")
		b.ReportMetric(float64(want.rows()), "live-rows")
		b.ReportMetric(float64(files), "data-files")
		b.ReportMetric(peakMB, "peak-rss-mb")
		b.ReportMetric(keyBytes/1e6/float64(len(lat)), "key-MB-read/window")
		b.ReportMetric(float64(counters["key_index_build_ms"]), "key-index-build-ms")
	}
}

// benchBatchBaseline writes the changes of ticks [0, ticks) as one batch
// merge-on-read write (the global window, one commit) to db.<name>, seeded like the
// stream's table, checks the table against want and returns the rate in changes per
// second.
func benchBatchBaseline(b *testing.B, lc *icebergtest.LocalCatalog, name string, ticks int64, want benchWant) float64 {
	b.Helper()
	if want.seeded {
		benchSeed(b, lc, name, want.keys)
	}
	p, s := beam.NewPipelineWithRoot()
	idxs := make([]int64, ticks)
	for i := range idxs {
		idxs[i] = int64(i)
	}
	rows := beam.ParDo(s, &expandTickFn{Keys: want.keys, Seeded: want.seeded}, beam.CreateList(s, idxs))
	res, err := iceberg.TryWrite(s, benchCDCConfig(lc, name), rows)
	if err != nil {
		b.Fatal(err)
	}
	beam.ParDo0(s, &recordTimedFn{Key: name}, res.Snapshots)
	start := time.Now()
	if err := ptest.Run(p); err != nil {
		b.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	if got := takeTimed(name); len(got) != 1 {
		b.Fatalf("batch: %d snapshot infos, want 1", len(got))
	}
	checkBenchTable(b, lc, name, want)
	return float64(ticks*streamTickChanges) / secs
}

// resetPeakRSS returns the memory the Go heap no longer uses to the OS and resets
// the process's peak resident set size (VmHWM) to what is left, so that peakRSSMB
// reports the peak from now on (Linux: /proc/self/clear_refs).
func resetPeakRSS(b *testing.B) {
	b.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("peak RSS not reset (the figure covers the seed too): %v", err)
	}
	b.Logf("RSS before the stream: %.0f MB", procStatusMB("VmRSS:"))
}

// peakRSSMB returns the process's peak resident set size in MB (VmHWM of
// /proc/self/status), 0 where there is none.
func peakRSSMB(b *testing.B) float64 {
	b.Helper()
	return procStatusMB("VmHWM:")
}

// procStatusMB returns the figure of /proc/self/status's line with prefix (in kB)
// in MB, 0 where there is none.
func procStatusMB(prefix string) float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(st)) {
		if kb, ok := strings.CutPrefix(line, prefix); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 64)
			return n / 1024
		}
	}
	return 0
}

func meanOf(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// diffBenchTable reads tbl's rows (id, v) batch by batch through iceberg-go's scan
// (which applies the deletion vectors) and describes how they differ from want: ids
// read twice, rows not expected or with another value, a row count other than
// want's (rows missing). "" if none.
func diffBenchTable(ctx context.Context, tbl *table.Table, want benchWant) string {
	_, batches, err := tbl.Scan(table.WithSelectedFields("id", "v")).ToArrowRecords(ctx)
	if err != nil {
		return err.Error()
	}
	seen := map[int64]bool{} // ids read outside the seed's range
	var seedSeen []uint64    // bit set of the ids read in [0, keys)
	if want.seeded {
		seedSeen = make([]uint64, (want.keys+63)/64)
	}
	var rows int64
	var bad []string
	note := func(format string, args ...any) {
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	for rec, err := range batches {
		if err != nil {
			return err.Error()
		}
		ids, ok1 := rec.Column(0).(*array.Int64)
		vs, ok2 := rec.Column(1).(interface{ Value(int) string })
		if !ok1 || !ok2 {
			rec.Release()
			return fmt.Sprintf("columns of types %s, %s, want int64 and a string", rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := range int(rec.NumRows()) {
			id, v := ids.Value(i), vs.Value(i)
			rows++
			dup := false
			if want.seeded && id >= 0 && id < want.keys {
				dup = seedSeen[id/64]&(1<<(id%64)) != 0
				seedSeen[id/64] |= 1 << (id % 64)
			} else {
				dup, seen[id] = seen[id], true
			}
			exp, ok := want.value(id)
			switch {
			case dup:
				note("id %d read twice", id)
			case !ok:
				note("id %d (%q) not expected", id, v)
			case v != exp:
				note("id %d: %q, want %q", id, v, exp)
			}
		}
		rec.Release()
	}
	if n := want.rows(); rows != n {
		note("%d rows, want %d", rows, n)
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, "; ")
}

// percentile returns the p-th percentile (nearest rank) of sorted.
func percentile(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
