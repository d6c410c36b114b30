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
//
// --input is a file or a glob of part files (the batch split in parts, in name
// order). How the batch reaches the write (--source):
//
//   - file (the default with one part): one plain DoFn reads every part in one
//     bundle, decoding the lines in parallel chunks (readChanges);
//   - parts (the default with several): a splittable DoFn reads one part per bundle,
//     checkpointing after each (partsFn): on prism the parse stage runs in as many
//     bundles as there are parts, one after the other (its output is unbounded to
//     Beam, which a checkpointing DoFn makes it; the job service drops checkpoints
//     with several workers, so --workers above 1 refuses it);
//   - textio: textio.Read of the parts and a DoFn decoding each line (lineFn), what a
//     user's batch job does; the runner decides the bundles.
//
// Each reports the bundles it ran in as morbatch.parse_bundles.
//
// On Beam Python's portable job service (--runner universal --endpoint HOST:PORT,
// with a job service started by morbatch --job_service_port PORT --beam_python PY),
// --workers N runs the pipeline's workers as N processes of their own (the SDK boot
// loader --boot started by an external worker pool in this process, running this
// binary as the worker): the result then lists each worker process's peak resident
// memory, sampled from /proc while the job runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/pool"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // textio of local files
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/jobrun"
	"github.com/icebeam/icebeam/internal/runnertest"
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
	source     = flag.String("source", "", "how the batch reaches the write: file (one bundle), parts (one bundle per part file), textio (the runner's bundles); default file for one part, parts for several")
	workers    = flag.Int("workers", 0, "on the job service (--runner universal --endpoint): run the workers as this many processes of their own (needs --boot); 0: in this process (LOOPBACK on the job service; prism's own)")
	boot       = flag.String("boot", "", "with --workers: the Beam Go SDK boot loader (go build github.com/apache/beam/sdks/v2/go/container)")
	jsPort     = flag.Int("job_service_port", 0, "instead of a batch: become Beam Python's portable job service on this port (the launcher icebeam's runner matrix uses; needs --beam_python)")
	beamPython = flag.String("beam_python", "", "with --job_service_port: the python of a venv with apache-beam")
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
	// bundles counts the bundles of the DoFn that feeds the write (readChanges,
	// partsFn or lineFn), which the runner fuses with the write's parse step.
	bundles = beam.NewCounter("morbatch", "parse_bundles")
)

func init() {
	beam.RegisterType(reflect.TypeOf(Change{}))
	register.Function3x1(readChanges)
	register.DoFn4x2[context.Context, *sdf.LockRTracker, string, func(Change), sdf.ProcessContinuation, error](&partsFn{})
	register.DoFn3x1[context.Context, string, func(Change), error](&lineFn{})
	register.Emitter1[Change]()
	register.Function2x0(countSnapshot)
	register.Function2x0(countDead)
}

// readChanges reads the batch's part files (glob, in name order), one JSON change
// per line, in one bundle: textio's splittable read lets prism split a 1 MB file
// into bundles that run one after the other, which measured prism's splitting
// rather than the write.
func readChanges(ctx context.Context, glob string, emit func(Change)) error {
	bundles.Inc(ctx, 1)
	paths, err := parts(glob)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := readPart(ctx, p, emit); err != nil {
			return err
		}
	}
	return nil
}

// parts returns the files of glob in name order; none is an error.
func parts(glob string) ([]string, error) {
	paths, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("--input %s: no such file", glob)
	}
	return paths, nil // Glob sorts
}

// partsFn reads the part files of its element, a glob, one part per bundle: its
// restriction is the range of part numbers, and after each part it checkpoints
// (resumes at once), so that the runner schedules the rest as a new bundle. An
// initial split into one restriction per part would not do: prism runs a stage's
// pending elements in one bundle, and splits a bundle only when it makes no progress
// for 100 ms.
type partsFn struct {
	// Parts is the number of part files of the glob when the pipeline was built.
	Parts int64
}

// CreateInitialRestriction returns the range of all the parts.
func (f *partsFn) CreateInitialRestriction(_ string) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.Parts}
}

// SplitRestriction keeps the range whole (see partsFn).
func (f *partsFn) SplitRestriction(_ string, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

// RestrictionSize returns the parts left.
func (f *partsFn) RestrictionSize(_ string, r offsetrange.Restriction) float64 { return r.Size() }

// CreateTracker returns an offset range tracker of r.
func (f *partsFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

// StartBundle counts the bundle.
func (f *partsFn) StartBundle(ctx context.Context, _ func(Change)) { bundles.Inc(ctx, 1) }

// ProcessElement reads the first part of its restriction, then checkpoints if
// parts remain.
func (f *partsFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, glob string, emit func(Change)) (sdf.ProcessContinuation, error) {
	r := rt.GetRestriction().(offsetrange.Restriction)
	if !rt.TryClaim(r.Start) {
		return sdf.StopProcessing(), nil
	}
	paths, err := parts(glob)
	if err != nil {
		return sdf.StopProcessing(), err
	}
	if int64(len(paths)) != f.Parts {
		return sdf.StopProcessing(), fmt.Errorf("--input %s: %d parts, %d when the pipeline was built", glob, len(paths), f.Parts)
	}
	if err := readPart(ctx, paths[r.Start], emit); err != nil {
		return sdf.StopProcessing(), err
	}
	if r.Start+1 < r.End {
		return sdf.ResumeProcessingIn(0), nil
	}
	return sdf.StopProcessing(), nil
}

// lineFn decodes one JSON change per line, the lines of textio.Read.
type lineFn struct{}

// StartBundle counts the bundle.
func (f *lineFn) StartBundle(ctx context.Context, _ func(Change)) { bundles.Inc(ctx, 1) }

// ProcessElement decodes line (a blank one is skipped, a bad one counted).
func (f *lineFn) ProcessElement(ctx context.Context, line string, emit func(Change)) error {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil
	}
	var ch Change
	if err := json.Unmarshal([]byte(line), &ch); err != nil || ops[ch.Op] == "" {
		bad.Inc(ctx, 1)
		log.Printf("morbatch: bad line %q: %v", line, err)
		return nil
	}
	parsed.Inc(ctx, 1)
	emit(ch)
	return nil
}

// readPart reads the part file at path. The lines are decoded in parallel, in
// chunks, GOMAXPROCS at a time, and emitted in file order: JSON decoding is the
// harness's (the user's) work, which Spark's MERGE does with a parallel reader, and
// on prism it would otherwise hold the bundle's goroutine. A bad line is counted
// (the run then fails).
func readPart(ctx context.Context, path string, emit func(Change)) error {
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
// the table), to run it (the pipeline run time), and from process start; the
// process's peak resident memory (prism runs the pipeline's workers in this process,
// and so does the job service with LOOPBACK workers); with --workers, each worker
// process's peak; the bundles of the parse stage; the icebeam and morbatch counters.
type Result struct {
	BuildSeconds    float64          `json:"build_s"`
	PipelineSeconds float64          `json:"pipeline_s"`
	TotalSeconds    float64          `json:"total_s"`
	PeakRSSMB       float64          `json:"peak_rss_mb"`
	WorkerPeakRSSMB []float64        `json:"worker_peak_rss_mb,omitempty"`
	Parts           int              `json:"parts"`
	Source          string           `json:"source"`
	ParseBundles    int64            `json:"parse_bundles"`
	Counters        map[string]int64 `json:"counters"`
}

// peakRSSMB returns the process's peak resident set size (VmHWM in /proc/self/status)
// in MB, or 0 where that is not available.
func peakRSSMB() float64 { return procPeakRSSMB("self") }

// procPeakRSSMB returns the peak resident set size of process pid (a number or
// "self") in MB, or 0 where that is not available.
func procPeakRSSMB(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
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
	if *jsPort > 0 {
		if *beamPython == "" {
			log.Fatal("morbatch: --job_service_port needs --beam_python")
		}
		args := append([]string{*beamPython}, runnertest.JobServiceArgs(*jsPort)...)
		log.Fatalf("morbatch: %v", syscall.Exec(*beamPython, args, os.Environ()))
	}
	// Absolute: worker processes of their own (--workers) run in other folders.
	for _, f := range []*string{catalogDir, input} {
		if *f != "" {
			abs, err := filepath.Abs(*f)
			if err != nil {
				log.Fatalf("morbatch: %v", err)
			}
			*f = abs
		}
	}
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

func run(start time.Time) (err error) {
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

	paths, err := parts(*input)
	if err != nil {
		return err
	}
	src := *source
	if src == "" {
		src = map[bool]string{false: "file", true: "parts"}[len(paths) > 1]
	}
	if src == "parts" && *workers > 1 {
		// TestStreamingSeveralWorkerProcesses: the FnApiRunner drops checkpoints
		// with several workers (rows would be lost).
		return fmt.Errorf("--source parts checkpoints, which Beam Python's job service drops with several workers: use --source textio or file")
	}
	t0 := time.Now()
	p, s := beam.NewPipelineWithRoot()
	var changes beam.PCollection
	switch src {
	case "file":
		changes = beam.ParDo(s, readChanges, beam.Create(s, *input))
	case "parts":
		changes = beam.ParDo(s, &partsFn{Parts: int64(len(paths))}, beam.Create(s, *input))
	case "textio":
		changes = beam.ParDo(s, &lineFn{}, textio.Read(s, *input))
	default:
		return fmt.Errorf("--source %q: want file, parts or textio", src)
	}
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
	var watch *workerWatch
	if *workers > 0 {
		watch = watchWorkers()
		defer watch.cleanup()
		stop, perr := workerPool(*workers)
		if perr != nil {
			return perr
		}
		defer func() { stop(err != nil) }()
	}
	t1 := time.Now()
	pr, err := jobrun.Run(ctx, p)
	t2 := time.Now()
	var workerRSS []float64
	if watch != nil {
		workerRSS = watch.peaks()
	}
	if err != nil {
		return err
	}
	if !jobrun.HasMetrics(pr) {
		return fmt.Errorf("the runner returned no metrics")
	}
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

	out := Result{BuildSeconds: t1.Sub(t0).Seconds(), PipelineSeconds: t2.Sub(t1).Seconds(), Counters: map[string]int64{},
		WorkerPeakRSSMB: workerRSS, Parts: len(paths), Source: src}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "morbatch" || c.Key.Namespace == "icebeam" {
			out.Counters[c.Key.Namespace+"."+c.Key.Name] += c.Result()
		}
	}
	out.ParseBundles = out.Counters["morbatch.parse_bundles"]
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

// bootScript runs the boot loader (second verb) for the worker pool, in a folder of
// its own under the first verb's folder (its working and semi-persistent directory:
// the staged worker binary goes there), its output appended to the third verb's log
// (not this process's stdout, which carries the result).
const bootScript = `#!/bin/sh
d=$(mktemp -d %q/w.XXXXXX) || exit 1
cd "$d" || exit 1
exec %q --semi_persist_dir="$d" "$@" >>%q 2>&1
`

// workerPool serves an external worker pool in this process that starts each
// worker by the boot loader --boot, and points the job's environment at it with
// parallelism n: the job service's launcher (internal/runnertest) runs such a job
// on n worker processes, each this binary started by the boot loader. stop stops
// the pool and removes its folder, first printing the workers' log on stderr when
// the run failed.
func workerPool(n int) (stop func(failed bool), err error) {
	if *boot == "" {
		return nil, fmt.Errorf("--workers needs --boot, the Beam Go SDK boot loader")
	}
	bootPath, err := filepath.Abs(*boot)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(bootPath); err != nil {
		return nil, fmt.Errorf("--boot: %w", err)
	}
	dir, err := os.MkdirTemp("", "morbatch-workers-")
	if err != nil {
		return nil, err
	}
	script, logPath := filepath.Join(dir, "boot.sh"), filepath.Join(dir, "boot.log")
	if err := os.WriteFile(script, fmt.Appendf(nil, bootScript, dir, bootPath, logPath), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wp, err := pool.New(ctx, port, script)
	if err != nil {
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	go wp.ServeAndWait()
	if *jobopts.WorkerBinary == "" {
		// This binary is the worker (the universal runner would cross-compile the
		// main package from source otherwise).
		if *jobopts.WorkerBinary, err = os.Executable(); err != nil {
			cancel()
			os.RemoveAll(dir)
			return nil, err
		}
	}
	*jobopts.EnvironmentType = "EXTERNAL"
	*jobopts.EnvironmentConfig = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	*jobopts.Parallelism = n
	return func(failed bool) {
		wp.Stop(ctx)
		cancel()
		if b, err := os.ReadFile(logPath); failed && err == nil {
			log.Printf("morbatch: worker output (tail):\n%s", b[max(0, len(b)-8000):])
		}
		os.RemoveAll(dir)
	}, nil
}

// workerWatch samples, every 50 ms, the peak resident memory (VmHWM) of the worker
// processes below this one: the boot loader's copies of the worker binary,
// /tmp/bin*/worker.
type workerWatch struct {
	mu   sync.Mutex
	peak map[int]float64 // MB by process id
	exe  map[int]string  // the executable of each
	done chan struct{}
	exit chan struct{}
}

// watchWorkers starts sampling.
func watchWorkers() *workerWatch {
	w := &workerWatch{peak: map[int]float64{}, exe: map[int]string{}, done: make(chan struct{}), exit: make(chan struct{})}
	go func() {
		defer close(w.exit)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.done:
				w.sample()
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// sample records the peak resident memory of each worker process below this one.
func (w *workerWatch) sample() {
	for _, pid := range descendants(os.Getpid()) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || filepath.Base(exe) != "worker" || !strings.HasPrefix(exe, "/tmp/bin") {
			continue
		}
		mb := procPeakRSSMB(strconv.Itoa(pid))
		w.mu.Lock()
		w.exe[pid], w.peak[pid] = exe, max(w.peak[pid], mb)
		w.mu.Unlock()
	}
}

// peaks stops sampling and returns each worker process's peak resident memory in
// MB, in the order of their process ids.
func (w *workerWatch) peaks() []float64 {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	<-w.exit
	w.mu.Lock()
	defer w.mu.Unlock()
	pids := make([]int, 0, len(w.peak))
	for pid := range w.peak {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	out := make([]float64, len(pids))
	for i, pid := range pids {
		out[i] = w.peak[pid]
	}
	return out
}

// cleanup stops sampling, ends the worker processes seen that still run (the pool
// stops the boot loaders, not their children) and removes their /tmp/bin* folders.
func (w *workerWatch) cleanup() {
	w.peaks()
	for pid, exe := range w.exe {
		if cur, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && cur == exe {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if d := filepath.Dir(exe); strings.HasPrefix(d, "/tmp/bin") {
			os.RemoveAll(d)
		}
	}
}

// descendants returns the ids of the processes below root, from /proc.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(string(b[i+1:])); len(f) >= 2 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for pid := range parent {
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
