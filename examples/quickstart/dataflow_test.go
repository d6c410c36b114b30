package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/icebeam/icebeam/internal/runnertest"
)

// TestTranslatesForDataflow translates the example's write and read for the Dataflow
// runner with --dry_run: every DoFn, coder and type must serialize into a job the
// Dataflow service accepts. It needs no credentials and submits nothing.
func TestTranslatesForDataflow(t *testing.T) {
	dir := t.TempDir()
	cat, err := openLocalCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })

	// The read validates against the table at construction, so create it first.
	p, s := beam.NewPipelineWithRoot()
	if err := buildWrite(s, cat); err != nil {
		t.Fatal(err)
	}
	ptest.RunAndValidate(t, p)

	runnertest.DataflowDryRun(t)
	p, s = beam.NewPipelineWithRoot()
	if err := buildWrite(s.Scope("write"), cat); err != nil {
		t.Fatal(err)
	}
	if err := buildRead(s.Scope("read"), cat, filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := dataflow.Execute(context.Background(), p); err != nil {
		t.Fatalf("Dataflow translation: %v", err)
	}
}

// captureLogger keeps the messages of Beam's log package: a dry run logs the
// pipeline proto and the Dataflow job it would submit.
type captureLogger struct {
	mu   sync.Mutex
	msgs []string
}

func (l *captureLogger) Log(_ context.Context, _ log.Severity, _ int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, msg)
}

// captureBeamLog sends Beam's log to a captureLogger until the test ends, when
// Beam's default logger is back (a prism worker in this process sets its own when
// it starts).
func captureBeamLog(t *testing.T) *captureLogger {
	l := &captureLogger{}
	log.SetLogger(l)
	t.Cleanup(func() { log.SetLogger(&log.Structural{}) })
	return l
}

// dryRunOutput returns the Dataflow job and the pipeline proto a dry run logged.
func (l *captureLogger) dryRunOutput(t *testing.T) (job dryRunJob, model *pipepb.Pipeline) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		switch {
		case strings.HasPrefix(m, "{"):
			if err := json.Unmarshal([]byte(m), &job); err != nil {
				t.Fatalf("dry run job: %v", err)
			}
		case strings.HasPrefix(m, "components:"):
			model = &pipepb.Pipeline{}
			if err := prototext.Unmarshal([]byte(m), model); err != nil {
				t.Fatalf("dry run pipeline proto: %v", err)
			}
		}
	}
	if job.Type == "" || model == nil {
		t.Fatalf("the dry run logged no job or no pipeline proto (%d messages)", len(l.msgs))
	}
	return job, model
}

// dryRunJob is the part of the Dataflow job JSON the streaming test checks.
type dryRunJob struct {
	Type        string `json:"type"`
	Environment struct {
		Experiments []string `json:"experiments"`
		Version     struct {
			JobType string `json:"job_type"`
		} `json:"version"`
	} `json:"environment"`
}

// TestTranslatesStreamingForDataflow translates the streaming variant's pipelines
// (an unbounded periodic source that never ends, rows or change rows, and a Write
// with triggering_frequency_seconds and token_heartbeat_seconds) for Dataflow with
// --dry_run, in append and in merge-on-read mode. The Go runner has no --streaming
// flag: a pipeline with an unbounded PCollection is a streaming job. The test checks
// that the job is a streaming job on Streaming Engine, and in the pipeline proto:
// the source is unbounded, the rows are in 1 s fixed windows, the commit DoFn keeps
// its pending panes in bag state with an event-time timer family, and the token
// heartbeat is there.
func TestTranslatesStreamingForDataflow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  func(beam.Scope, *localCatalog, beam.PCollection, time.Time, time.Duration) error
		commit string // unique name suffix of the commit DoFn
	}{
		{"append", buildStreamingAppend, "/write.commitFn"},
		{"merge-on-read", buildStreamingChanges, "/write.commitFn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := openLocalCatalog(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			runnertest.DataflowDryRun(t)
			logs := captureBeamLog(t)

			p, s := beam.NewPipelineWithRoot()
			start := time.Now()
			ticks := streamSource(s, start, mtime.MaxTimestamp.ToTime())
			if err := tc.build(s, cat, ticks, start, time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := dataflow.Execute(context.Background(), p); err != nil {
				t.Fatalf("Dataflow translation: %v", err)
			}
			job, model := logs.dryRunOutput(t)
			if job.Type != "JOB_TYPE_STREAMING" || job.Environment.Version.JobType != "FNAPI_STREAMING" {
				t.Errorf("job type %q (%q), want JOB_TYPE_STREAMING (FNAPI_STREAMING)", job.Type, job.Environment.Version.JobType)
			}
			if !slices.Contains(job.Environment.Experiments, "enable_streaming_engine") {
				t.Errorf("experiments %v lack enable_streaming_engine", job.Environment.Experiments)
			}
			checkStreamingModel(t, model, tc.commit)
		})
	}
}

// checkStreamingModel checks the pipeline proto of a streaming write whose commit
// DoFn's unique name ends with commit.
func checkStreamingModel(t *testing.T, model *pipepb.Pipeline, commit string) {
	t.Helper()
	comps := model.GetComponents()
	byName := map[string]*pipepb.PTransform{}
	for _, tr := range comps.GetTransforms() {
		byName[tr.GetUniqueName()] = tr
	}
	output := func(tr *pipepb.PTransform) *pipepb.PCollection {
		for _, id := range tr.GetOutputs() {
			return comps.GetPcollections()[id]
		}
		t.Fatalf("%s has no output", tr.GetUniqueName())
		return nil
	}
	find := func(suffix string) *pipepb.PTransform {
		for name, tr := range byName {
			if strings.HasSuffix(name, suffix) {
				return tr
			}
		}
		t.Fatalf("no transform named *%s in the pipeline proto", suffix)
		return nil
	}

	if pc := output(find("periodic.Impulse/periodic.sequenceToImpulse")); pc.GetIsBounded() != pipepb.IsBounded_UNBOUNDED {
		t.Errorf("the periodic source is %s, want UNBOUNDED", pc.GetIsBounded())
	}
	ws := comps.GetWindowingStrategies()[output(find("CommitWindows/WindowInto")).GetWindowingStrategyId()]
	var fixed pipepb.FixedWindowsPayload
	if err := proto.Unmarshal(ws.GetWindowFn().GetPayload(), &fixed); err != nil {
		t.Fatal(err)
	}
	if ws.GetWindowFn().GetUrn() != "beam:window_fn:fixed_windows:v1" || fixed.GetSize().AsDuration() != streamWindow {
		t.Errorf("commit windows %s %v, want fixed windows of %s", ws.GetWindowFn().GetUrn(), fixed.GetSize().AsDuration(), streamWindow)
	}

	var pardo pipepb.ParDoPayload
	if err := proto.Unmarshal(find(commit).GetSpec().GetPayload(), &pardo); err != nil {
		t.Fatal(err)
	}
	if pardo.GetStateSpecs()["pending"].GetBagSpec() == nil {
		t.Errorf("commit DoFn state specs %v, want a bag named pending", pardo.GetStateSpecs())
	}
	if ts := pardo.GetTimerFamilySpecs()["turn"]; ts.GetTimeDomain() != pipepb.TimeDomain_EVENT_TIME {
		t.Errorf("commit DoFn timer families %v, want an event-time family named turn", pardo.GetTimerFamilySpecs())
	}
	find("iceberg.TokenHeartbeat/write.heartbeatFn")
}
