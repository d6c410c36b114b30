package iceberg_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/write"
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
)

// The change stream of BenchmarkStreamingMergeOnRead: a tick every streamTickMs of
// streamTickChanges changes, 10,000 changes per second of event time, over
// streamKeySpace ids.
const (
	streamTickMs      = 100
	streamTickChanges = 1000
	streamKeySpace    = 200_000
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
// in. Inserts take the next new ids (modulo streamKeySpace); updates and deletes pick
// ids inserted before them, some of which an earlier change has already deleted (an
// upsert re-inserts those, a delete of them changes nothing). On a seeded table
// (benchSeed) every id of the key space counts as inserted before the first tick.
func benchTickChanges(i int64, seeded bool, fn func(c BenchChange, offsetMs int64)) {
	const insertsPerTick = streamTickChanges * streamInsertsPer20 / 20
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	inserted := i * insertsPerTick // new ids handed out before this tick
	if seeded {
		inserted += streamKeySpace
	}
	for j := range int64(streamTickChanges) {
		seq := i*streamTickChanges + j + 1
		var id int64
		op := "c"
		switch r := j % 20; {
		case r < streamInsertsPer20 || inserted == 0:
			id = inserted % streamKeySpace
			inserted++
		case r < streamInsertsPer20+streamUpdatesPer20:
			id, op = rng.Int64N(inserted)%streamKeySpace, "u"
		default:
			id, op = rng.Int64N(inserted)%streamKeySpace, "d"
		}
		fn(BenchChange{ID: id, V: "v" + strconv.FormatInt(id, 10) + "." + strconv.FormatInt(seq, 10), Op: op, Seq: seq},
			j*streamTickMs/streamTickChanges)
	}
}

// benchModel returns the table ticks [0, n) must leave: the value of each live id
// (upsert: the last change of an id decides; a delete removes it), after the seed
// when seeded.
func benchModel(n int64, seeded bool) map[int64]string {
	live := map[int64]string{}
	if seeded {
		for id := range int64(streamKeySpace) {
			live[id] = benchSeedValue(id)
		}
	}
	for i := range n {
		benchTickChanges(i, seeded, func(c BenchChange, _ int64) {
			if c.Op == "d" {
				delete(live, c.ID)
			} else {
				live[c.ID] = c.V
			}
		})
	}
	return live
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
	Seeded  bool
}

func (f *expandTickFn) ProcessElement(i int64, emit func(beam.EventTime, BenchChange)) {
	at := f.StartMs + i*streamTickMs
	benchTickChanges(i, f.Seeded, func(c BenchChange, off int64) { emit(mtime.FromMilliseconds(at+off), c) })
}

func benchSeedValue(id int64) string { return "seed" + strconv.FormatInt(id, 10) }

// seedChunkFn emits the seed rows of ids [chunk*seedChunk, (chunk+1)*seedChunk).
type seedChunkFn struct{}

const seedChunk = 10_000

func (*seedChunkFn) ProcessElement(chunk int64, emit func(BenchChange)) {
	for id := chunk * seedChunk; id < (chunk+1)*seedChunk && id < streamKeySpace; id++ {
		emit(BenchChange{ID: id, V: benchSeedValue(id), Op: "c"})
	}
}

// benchSeed writes every id of the key space to db.<name> in one batch
// merge-on-read write of its own sink (creating the table), before the measured run.
func benchSeed(b *testing.B, lc *icebergtest.LocalCatalog, name string) {
	b.Helper()
	p, s := beam.NewPipelineWithRoot()
	var chunks []int64
	for c := int64(0); c*seedChunk < streamKeySpace; c++ {
		chunks = append(chunks, c)
	}
	rows := beam.ParDo(s, &seedChunkFn{}, beam.CreateList(s, chunks))
	cfg := benchCDCConfig(lc, name)
	cfg.SinkID = name + "-seed"
	if _, err := iceberg.TryWrite(s, cfg, rows); err != nil {
		b.Fatal(err)
	}
	if err := ptest.Run(p); err != nil {
		b.Fatalf("seed: %v", err)
	}
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
	register.DoFn2x0[int64, func(BenchChange)](&seedChunkFn{})
	register.Emitter1[BenchChange]()
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
	return cfg
}

// checkBenchTable fails b unless db.<name> is valid (at most one live DV per data
// file, summaries agree with the manifests) and holds exactly the rows of want. It
// returns the table's live data files and deletion vectors.
func checkBenchTable(b *testing.B, lc *icebergtest.LocalCatalog, name string, want map[int64]string) (dataFiles, dvs int) {
	b.Helper()
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", name})
	if err != nil {
		b.Fatal(err)
	}
	if err := icebergtest.CheckTable(ctx, tbl); err != nil {
		b.Fatalf("db.%s: %v", name, err)
	}
	at := icebergtest.ReadAll(b, tbl, nil, "id", "v") // released at cleanup
	got := icebergtest.RowStrings(at, []string{"id", "v"})
	sort.Strings(got)
	exp := make([]string, 0, len(want))
	for id, v := range want {
		exp = append(exp, fmt.Sprintf("{id=%d, v=%q}", id, v))
	}
	sort.Strings(exp)
	if !slices.Equal(got, exp) {
		for _, snap := range tbl.Metadata().Snapshots() {
			if snap.Summary != nil {
				p := snap.Summary.Properties
				b.Logf("snapshot %d parent %v %s: through %s max-seq %s late %s, +%s rows, +%s delete files, -%s delete files",
					snap.SnapshotID, snap.ParentSnapshotID, snap.Summary.Operation, p[write.CommittedThroughKey(name)],
					p["beam.cdc.max-committed-seq."+name], p[write.LatePaneKey(name)], p["added-records"], p["added-delete-files"], p["removed-delete-files"])
			}
		}
		b.Fatalf("db.%s: %d rows, want %d (the model of the generated changes); %s", name, len(got), len(exp), diffRows(got, exp))
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
// (200,000 rows, one batch write of its own sink), so that the first windows write
// to a table of full size and the last-5/first-5 latency ratio measures the cost of
// the table's history rather than the table filling up. Expiry
// (-stream_bench_maintain) keeps the seed sink's token snapshot, not the snapshots
// after it (see write.ExpireSnapshots). It reports each
// window's commit latency (the wall time its SnapshotInfo arrives minus the window's
// end) at p50, p95 and max, the windows committed, the late panes, the sustained
// rate (changes committed over the time from the first tick to the last commit),
// and the same changes written as one batch merge-on-read write in the same process
// as the baseline (streaming/batch is the ratio of the two rates; the streaming rate
// cannot exceed the source's 10,000 changes/s). It fails unless every window of the
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
	seeded := *streamBenchSeed
	want := benchModel(ticks, seeded)
	b.ReportAllocs()
	b.StopTimer() // ns/op is the streaming run alone
	for n := range b.N {
		lc := icebergtest.NewLocalCatalog(b)

		// Streaming: ticks from the next window boundary at least 2 s ahead (the
		// pipeline starts meanwhile), so that windows are whole and the last one ends
		// with the source.
		name := fmt.Sprintf("stream_%d", n)
		if seeded {
			benchSeed(b, lc, name)
		}
		start := time.Now().Add(2 * time.Second).Truncate(freq).Add(freq)
		end := start.Add(dur)
		p, s := beam.NewPipelineWithRoot()
		imp := periodic.Impulse(s, start, end, streamTickMs*time.Millisecond, false)
		idx := beam.ParDo(s, &tickIndexFn{StartMs: start.UnixMilli()}, imp)
		rows := beam.ParDo(s, &expandTickFn{StartMs: start.UnixMilli(), Seeded: seeded}, idx)
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
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		snaps := takeTimed(name)

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
			streamKeySpace, seeded, changes, ticks, len(lat), int(dur/freq), freq, late, percentile(sorted, 50), percentile(sorted, 95), sorted[len(sorted)-1], sustained, lat)
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
		b.Logf("streaming: %d data files and %d DVs at the end", files, dvs)

		// Batch baseline: the same changes in the global window, one commit.
		bname := fmt.Sprintf("batch_%d", n)
		if seeded {
			benchSeed(b, lc, bname)
		}
		p, s = beam.NewPipelineWithRoot()
		idxs := make([]int64, ticks)
		for i := range idxs {
			idxs[i] = int64(i)
		}
		rows = beam.ParDo(s, &expandTickFn{StartMs: start.UnixMilli(), Seeded: seeded}, beam.CreateList(s, idxs))
		if res, err = iceberg.TryWrite(s, benchCDCConfig(lc, bname), rows); err != nil {
			b.Fatal(err)
		}
		beam.ParDo0(s, &recordTimedFn{Key: bname}, res.Snapshots)
		bstart := time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		batchSecs := time.Since(bstart).Seconds()
		if got := takeTimed(bname); len(got) != 1 {
			b.Fatalf("batch: %d snapshot infos, want 1", len(got))
		}
		checkBenchTable(b, lc, bname, want)
		batch := float64(changes) / batchSecs

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
		b.ReportMetric(batch, "batch-changes/s")
		b.ReportMetric(sustained/batch, "streaming/batch")
		b.ReportMetric(float64(len(want)), "live-rows")
		b.ReportMetric(float64(files), "data-files")
	}
}

func meanOf(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// diffRows describes the first rows only in got and only in want (both sorted).
func diffRows(got, want []string) string {
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	return fmt.Sprintf("%d rows not expected (first %v), %d missing (first %v)",
		len(extra), extra[:min(len(extra), 10)], len(missing), missing[:min(len(missing), 10)])
}

// percentile returns the p-th percentile (nearest rank) of sorted.
func percentile(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
