// Command morbatch applies one batch of changes to an Iceberg table with icebeam's
// merge-on-read write (iceberg.TryWrite, mode MergeOnRead, upsert) on prism, and
// prints its timings as one JSON object on stdout. It is the icebeam side of
// bench_merge.py (see testing/interop/README.md): built once, run once per round.
//
// The batch is JSON lines, one change each:
//
//	{"op":"U","seq":7,"id":42,"name":"n","state":"CA","amount":1.5}
//
// op is I (insert), U (update, the after-image) or D (delete: only id counts); seq
// orders the changes of one key. The table (columns id, name, state, amount) lives in
// the SQLite SQL catalog "local" of --catalog_dir (catalog.db, warehouse/), as
// icebergtest.NewLocalCatalogAt opens it.
//
//	morbatch --catalog_dir DIR --table bench.t --input batch.jsonl --sink_id bench-r1
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"reflect"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

var (
	catalogDir = flag.String("catalog_dir", "", "folder of the SQLite catalog (catalog.db) and its warehouse/ (required)")
	tableName  = flag.String("table", "", "table to write, e.g. bench.icebeam (required)")
	input      = flag.String("input", "", "the batch, JSON lines (required)")
	sinkID     = flag.String("sink_id", "", "sink id of this write (required; one per round)")
	numShards  = flag.Int("num_shards", 0, "key-hash shards (0: icebeam's default)")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the pipeline run to this file")
	maintain   = flag.Int("maintain_every", 0, "maintenance_every_commits of the write (0: no inline maintenance)")
	memProfile = flag.String("memprofile", "", "write an allocation profile of the process to this file after the run (every allocation sampled)")
	traceFile  = flag.String("trace", "", "write a runtime execution trace of the pipeline run to this file (go tool trace)")
	createRows = flag.Int64("create_rows", 0, "instead of a batch: create --table with ids [0, create_rows) (the rows bench_merge.py's create_table writes) by icebeam appends, and exit")
	createN    = flag.Int("create_files", 1, "with --create_rows: the number of appends, each of an equal range of ids (one data file each up to icebeam's target file size)")
)

// Change is one change row: the table's columns plus the control columns op and seq.
type Change struct {
	Op     string   `iceberg:"op" json:"op"`
	Seq    int64    `iceberg:"seq" json:"seq"`
	ID     int64    `iceberg:"id" json:"id"`
	Name   *string  `iceberg:"name" json:"name"`
	State  *string  `iceberg:"state" json:"state"`
	Amount *float64 `iceberg:"amount" json:"amount"`
}

// ops maps op to icebeam's change types (upsert: updates carry the after-image only).
var ops = map[string]string{"I": iceberg.ChangeInsert, "U": iceberg.ChangeUpdateAfter, "D": iceberg.ChangeDelete}

var (
	parsed    = beam.NewCounter("morbatch", "parsed")
	bad       = beam.NewCounter("morbatch", "bad_lines")
	snapshots = beam.NewCounter("morbatch", "snapshots")
	skipped   = beam.NewCounter("morbatch", "skipped_snapshots")
	rowsAdded = beam.NewCounter("morbatch", "rows_added")
	dead      = beam.NewCounter("morbatch", "dead_letters")
)

func init() {
	beam.RegisterType(reflect.TypeOf(Change{}))
	register.Function3x1(readChanges)
	register.Emitter1[Change]()
	register.Function2x0(countSnapshot)
	register.Function2x0(countDead)
}

// readChanges reads the batch file at path, one JSON change per line, in one
// bundle: textio's splittable read lets prism split a 1 MB file into bundles that
// run one after the other, which measured prism's splitting rather than the write.
// The lines are decoded in parallel, in chunks, GOMAXPROCS at a time, and emitted in
// file order: JSON decoding is the harness's (the user's) work, which Spark's MERGE
// does with a parallel reader, and on prism it would otherwise hold the one bundle's
// goroutine. A bad line is counted (the run then fails).
func readChanges(ctx context.Context, path string, emit func(Change)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	const chunkBytes = 256 << 10
	type chunk struct {
		changes []Change
		bad     int64
		done    chan struct{}
	}
	var chunks []*chunk
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	for len(data) > 0 {
		n := min(chunkBytes, len(data))
		if i := bytes.IndexByte(data[n:], '\n'); i >= 0 {
			n += i + 1
		} else {
			n = len(data)
		}
		part := data[:n]
		data = data[n:]
		c := &chunk{done: make(chan struct{})}
		chunks = append(chunks, c)
		go func() {
			sem <- struct{}{}
			defer func() { <-sem; close(c.done) }()
			for line := range bytes.Lines(part) {
				line = bytes.TrimSpace(line)
				if len(line) == 0 {
					continue
				}
				var ch Change
				if err := json.Unmarshal(line, &ch); err != nil || ops[ch.Op] == "" {
					c.bad++
					log.Printf("morbatch: bad line %q: %v", line, err)
					continue
				}
				c.changes = append(c.changes, ch)
			}
		}()
	}
	for _, c := range chunks {
		<-c.done
		bad.Inc(ctx, c.bad)
		parsed.Inc(ctx, int64(len(c.changes)))
		for _, ch := range c.changes {
			emit(ch)
		}
		c.changes = nil
	}
	return nil
}

func countSnapshot(ctx context.Context, si iceberg.SnapshotInfo) {
	snapshots.Inc(ctx, 1)
	if si.Skipped {
		skipped.Inc(ctx, 1)
	}
	rowsAdded.Inc(ctx, si.RowsAdded)
}

func countDead(ctx context.Context, d iceberg.DeadLetter) {
	dead.Inc(ctx, 1)
	log.Printf("morbatch: dead letter: %s: %s", d.Table, d.Reason)
}

// Result is what morbatch prints: seconds to build the pipeline (TryWrite checks
// the table), to run it on prism (the pipeline run time), and from process start;
// the process's peak resident memory (prism runs the pipeline's workers in this
// process); the icebeam and morbatch counters.
type Result struct {
	BuildSeconds    float64          `json:"build_s"`
	PipelineSeconds float64          `json:"pipeline_s"`
	TotalSeconds    float64          `json:"total_s"`
	PeakRSSMB       float64          `json:"peak_rss_mb"`
	Counters        map[string]int64 `json:"counters"`
}

// peakRSSMB returns the process's peak resident set size (VmHWM in /proc/self/status)
// in MB, or 0 where that is not available.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

func main() {
	start := time.Now()
	flag.Parse()
	beam.Init()
	if *createRows > 0 {
		if *catalogDir == "" || *tableName == "" {
			log.Fatal("morbatch: --catalog_dir and --table are required")
		}
		if err := create(); err != nil {
			log.Fatalf("morbatch: %v", err)
		}
		return
	}
	if *catalogDir == "" || *tableName == "" || *input == "" || *sinkID == "" {
		log.Fatal("morbatch: --catalog_dir, --table, --input and --sink_id are required")
	}
	if err := run(start); err != nil {
		log.Fatalf("morbatch: %v", err)
	}
}

func run(start time.Time) error {
	ctx := context.Background()
	cat, err := icebergtest.NewLocalCatalogAt(*catalogDir)
	if err != nil {
		return err
	}
	defer cat.Close()
	cfg := iceberg.WriteConfig{
		Table: *tableName, CatalogName: cat.Name, CatalogProperties: cat.Props,
		Mode:             iceberg.MergeOnRead,
		ChangeTypeColumn: "op", ChangeTypeMap: ops, Upsert: true,
		SequenceNumberColumn: "seq", EqualityColumns: []string{"id"},
		SinkID: *sinkID,
	}
	if *numShards > 0 {
		cfg.NumShards = numShards
	}
	if *maintain > 0 {
		cfg = cfg.With(iceberg.WithMaintenanceEveryCommits(*maintain))
	}

	t0 := time.Now()
	p, s := beam.NewPipelineWithRoot()
	changes := beam.ParDo(s, readChanges, beam.Create(s, *input))
	res, err := iceberg.TryWrite(s, cfg, changes)
	if err != nil {
		return err
	}
	beam.ParDo0(s, countSnapshot, res.Snapshots)
	beam.ParDo0(s, countDead, res.DeadLetter)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if *memProfile != "" {
		goruntime.MemProfileRate = 1
	}
	t1 := time.Now()
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return err
	}
	t2 := time.Now()
	pprof.StopCPUProfile()
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}

	out := Result{BuildSeconds: t1.Sub(t0).Seconds(), PipelineSeconds: t2.Sub(t1).Seconds(), Counters: map[string]int64{}}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "morbatch" || c.Key.Namespace == "icebeam" {
			out.Counters[c.Key.Namespace+"."+c.Key.Name] += c.Result()
		}
	}
	out.TotalSeconds = time.Since(start).Seconds()
	out.PeakRSSMB = peakRSSMB()
	if n := out.Counters["morbatch.bad_lines"] + out.Counters["morbatch.dead_letters"]; n != 0 {
		return fmt.Errorf("%d bad lines or dead letters", n)
	}
	if out.Counters["morbatch.snapshots"] != 1 || out.Counters["morbatch.skipped_snapshots"] != 0 {
		return fmt.Errorf("want one new snapshot, got %d (%d skipped)", out.Counters["morbatch.snapshots"], out.Counters["morbatch.skipped_snapshots"])
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// BenchRow is a row of the bench table (bench_merge.py's create_table).
type BenchRow struct {
	ID     int64   `iceberg:"id"`
	Name   string  `iceberg:"name"`
	State  string  `iceberg:"state"`
	Amount float64 `iceberg:"amount"`
}

var states = []string{"CA", "NY", "TX", "WA", "OR", "NV", "AZ", "CO", "UT", "FL", "GA", "IL", "MA", "NJ", "PA", "OH"}

// benchRowsFn emits the rows of ids [lo, lo+seedChunk) below Hi.
type benchRowsFn struct{ Hi int64 }

const seedChunk = 100_000

func (f *benchRowsFn) ProcessElement(lo int64, emit func(BenchRow)) {
	for id := lo; id < lo+seedChunk && id < f.Hi; id++ {
		emit(BenchRow{ID: id, Name: "name-" + strconv.FormatInt(id, 10), State: states[id%int64(len(states))], Amount: float64(id%100000) / 100})
	}
}

func init() {
	beam.RegisterType(reflect.TypeOf(BenchRow{}))
	beam.RegisterType(reflect.TypeOf((*benchRowsFn)(nil)).Elem())
	register.Emitter1[BenchRow]()
}

// create creates --table (format version 3, merge-on-read write modes, id its
// identifier field) with --create_rows rows in --create_files appends.
func create() error {
	ctx := context.Background()
	cat, err := icebergtest.NewLocalCatalogAt(*catalogDir)
	if err != nil {
		return err
	}
	defer cat.Close()
	n, files := *createRows, int64(max(*createN, 1))
	for f := range files {
		lo, hi := n*f/files, n*(f+1)/files
		p, s := beam.NewPipelineWithRoot()
		var chunks []int64
		for c := lo; c < hi; c += seedChunk {
			chunks = append(chunks, c)
		}
		rows := beam.ParDo(s, &benchRowsFn{Hi: hi}, beam.CreateList(s, chunks))
		cfg := iceberg.WriteConfig{Table: *tableName, CatalogName: cat.Name, CatalogProperties: cat.Props,
			SinkID: fmt.Sprintf("create-%d", f), Mode: iceberg.Append, TableProperties: map[string]string{"format-version": "3",
				"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}}
		if _, err := iceberg.TryWrite(s, cfg, rows); err != nil {
			return err
		}
		if _, err := beamx.RunWithMetrics(ctx, p); err != nil {
			return err
		}
	}
	tbl, err := cat.Catalog.LoadTable(ctx, table.Identifier(strings.Split(*tableName, ".")))
	if err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).SetIdentifierField([][]string{{"id"}}).Commit(); err != nil {
		return err
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		return err
	}
	df, err := icebergtest.DataFilesContext(ctx, tbl)
	if err != nil {
		return err
	}
	var size int64
	for _, d := range df {
		size += d.FileSizeBytes()
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int64{"rows": n, "data_files": int64(len(df)), "bytes": size})
}
