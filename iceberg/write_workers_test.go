package iceberg_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// fileOutFn appends each SnapshotInfo or DeadLetter it gets, as a JSON line, to a file
// of its own in Dir named after Key, Kind and its worker's process id: the output of
// a pipeline whose DoFns run in worker processes other than the test's.
type fileOutFn struct {
	Dir, Key, Kind string

	f *os.File
}

func (f *fileOutFn) ProcessElement(v beam.T) error {
	if f.f == nil {
		name := fmt.Sprintf("%s.%s.%d.%d.jsonl", strings.ReplaceAll(f.Key, "/", "_"), f.Kind, os.Getpid(), rand.Int64())
		var err error
		if f.f, err = os.OpenFile(filepath.Join(f.Dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = f.f.Write(append(b, '\n'))
	return err
}

func (f *fileOutFn) FinishBundle() error {
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}

func init() { register.DoFn1x1[beam.T, error](&fileOutFn{}) }

// readFileOut returns what the fileOutFns of key and kind wrote to dir, decoded as Ts,
// and the process ids of the workers that wrote it.
func readFileOut[T any](t *testing.T, dir, key, kind string) (out []T, pids map[string]bool) {
	t.Helper()
	pids = map[string]bool{}
	files, err := filepath.Glob(filepath.Join(dir, strings.ReplaceAll(key, "/", "_")+"."+kind+".*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		parts := strings.Split(filepath.Base(name), ".")
		pids[parts[len(parts)-3]] = true
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var v T
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, v)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out, pids
}

// TestStreamingSeveralWorkerProcesses runs streaming writes of the late-row model
// (TestStreamingLateModel's stream from its splittable DoFn, a first run stopped after
// a prefix and a restart with the same sink id, in both modes) with the workers in
// processes of their own: on Beam Python's job service two worker processes per
// pipeline run, which take the bundles in turn (a stateless stage's input split
// between them), so a stage's work (the writers' and the merge-on-read shards' table
// caches and key indexes, the commit step's state) moves between processes; on prism,
// which starts one worker per environment, one worker process. On the job service
// the source emits its events in one call (sdfSourceOneCall: its FnApiRunner drops
// checkpoints on several workers). The model's check is TestStreamingLateModel's; the
// snapshots, dead letters and (after a shuffle) rows come back through files, and the
// test fails unless every pipeline run started that many worker processes and that
// many wrote output.
func TestStreamingSeveralWorkerProcesses(t *testing.T) {
	const seeds = 3
	want, started := runnertest.WorkerProcesses(t)
	source := sdfSource
	if want > 1 {
		source = sdfSourceOneCall // see there: the FnApiRunner drops checkpoints on several workers
	}
	dir := t.TempDir()
	streamOutDir = dir
	t.Cleanup(func() { streamOutDir = "" })
	const latenessMs = 15000
	took := map[string]bool{}
	for _, mode := range []iceberg.Mode{iceberg.Append, iceberg.MergeOnRead} {
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("%s/seed=%d", mode, seed), func(t *testing.T) {
				lc := icebergtest.NewLocalCatalog(t)
				cfg := lateModelConfig(lc, mode, latenessMs)
				events, within := modelEvents(seed, latenessMs)
				cut := 1 + rand.New(rand.NewPCG(seed, 7)).IntN(len(events)-1)
				_, dead1 := runStreamFrom(t, source, cfg, modelChange, events[:cut]...)
				_, dead2 := runStreamFrom(t, source, cfg, modelChange, events...)
				tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "model"})
				if err != nil {
					t.Fatal(err)
				}
				checkLateModel(t, tbl, mode, events, cut, within, dead1, dead2)
			})
		}
	}
	for i, pids := range streamOutPids {
		if len(pids) < want {
			t.Errorf("pipeline run %d: %d worker processes wrote output, want %d", i+1, len(pids), want)
		}
		for p := range pids {
			took[p] = true
		}
	}
	n := started()
	t.Logf("%s: %d pipeline runs, %d worker processes started, %d of them wrote output", runnertest.Runner(), len(streamOutPids), n, len(took))
	if n < want*len(streamOutPids) {
		t.Errorf("%d worker processes started for %d pipeline runs, want %d each", n, len(streamOutPids), want)
	}
}

// streamOutDir, when set, makes runStreamFrom collect the snapshots and dead letters
// through files in it (fileOutFn); streamOutPids then holds, per run, the process ids
// of the workers that wrote them.
var (
	streamOutDir  string
	streamOutPids []map[string]bool
)

// TestBatchKeyJoinSeveralWorkerProcesses: a batch merge-on-read write whose keys
// fall in every data file of a 4-file table, with the workers in processes of
// their own (two on Beam Python's job service, one on prism; see
// TestStreamingSeveralWorkerProcesses), reads each candidate file's key column
// once: key_files_read equals the data files, not the data files times the
// workers whose shards resolve keys (each worker reading every candidate file
// for the keys another worker parsed). The table then holds the changes.
func TestBatchKeyJoinSeveralWorkerProcesses(t *testing.T) {
	want, started := runnertest.WorkerProcesses(t)
	dir := t.TempDir()
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "join", 200000, 3) // 4 data files of 50,000 ids each
	var rows []iceberg.Row
	for i := range int64(400) { // ids spread over all four files
		id := i*499 + 7
		if i%2 == 0 {
			rows = append(rows, cdcRow(iceberg.ChangeDelete, id, "", "", 10))
		} else {
			rows = append(rows, cdcRow(iceberg.ChangeUpdateAfter, id, fmt.Sprint("moved-", id), "NY", 10))
		}
	}
	cfg := iceberg.WriteConfig{Table: "db.join", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, SinkID: "join"}
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, rows))
	if err != nil {
		t.Fatal(err)
	}
	beam.ParDo0(s, &fileOutFn{Dir: dir, Key: "join", Kind: "snap"}, res.Snapshots)
	beam.ParDo0(s, &fileOutFn{Dir: dir, Key: "join", Kind: "dead"}, res.DeadLetter)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	counters := icebeamCounters(pr)
	snaps, pids := readFileOut[iceberg.SnapshotInfo](t, dir, "join", "snap")
	dead, _ := readFileOut[iceberg.DeadLetter](t, dir, "join", "dead")
	if len(snaps) != 1 || len(dead) != 0 {
		t.Fatalf("snapshots %+v, dead letters %+v", snaps, dead)
	}
	if counters["key_files_read"] != 4 || counters["key_column_bytes_read"] <= 0 {
		t.Errorf("key_files_read %d (key_column_bytes_read %d), want the 4 candidate files once",
			counters["key_files_read"], counters["key_column_bytes_read"])
	}
	got, _ := cityContents(t, lc, "join")
	if len(got) != 200000-200 {
		t.Errorf("%d rows, want %d", len(got), 200000-200)
	}
	for i := range int64(400) {
		id := i*499 + 7
		v, ok := got[id]
		if i%2 == 0 && ok || i%2 == 1 && v != fmt.Sprintf("moved-%d|NY", id) {
			t.Fatalf("id %d = %q (present %v)", id, v, ok)
		}
	}
	n := started()
	t.Logf("%s: %d worker processes started, %d wrote the snapshot; counters %v", runnertest.Runner(), n, len(pids), counters)
	if n < want {
		t.Errorf("%d worker processes started, want %d", n, want)
	}
}
