package iceberg_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
)

// streamSource makes the root of a streaming test's pipeline: the int64 ids of
// events, each timestamped at its event's time, with the watermark moving as the
// events' watermark steps say and to the end of time after the last event.
type streamSource func(t *testing.T, s beam.Scope, events []streamEvent) beam.PCollection

// testStreamSource is a TestStream of events. Beam Python's job service (the
// FnApiRunner) rejects it ("NotImplementedError: beam:transform:teststream:v1").
func testStreamSource(t *testing.T, s beam.Scope, events []streamEvent) beam.PCollection {
	t.Helper()
	ts := teststream.NewConfig()
	for _, e := range events {
		var err error
		if e.watermark {
			err = ts.AdvanceWatermark(e.at)
		} else {
			vals := make([]any, len(e.ids))
			for i, id := range e.ids {
				vals[i] = id
			}
			err = ts.AddElements(e.at, vals...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}
	return teststream.Create(s, ts)
}

// SourceEvent is a streamEvent as eventSourceFn carries it (exported fields, which
// the SDK serializes with the DoFn).
type SourceEvent struct {
	AtMs      int64
	IDs       []int64
	Watermark bool
}

// sdfSource emits events from an impulse through eventSourceFn, a splittable DoFn,
// which every portable runner runs (TestLateRowsScenario's periodic source is one too).
func sdfSource(t *testing.T, s beam.Scope, events []streamEvent) beam.PCollection {
	t.Helper()
	return eventSource(s, events, 200)
}

// sdfSourceOneCall is sdfSource without its checkpoints: it emits every event in one
// call, so its watermark moves only at the end (as every watermark does on Beam
// Python's job service). The job service's FnApiRunner drops an SDF's checkpoint
// when it runs a stage on several workers: ParallelBundleManager.process_bundle
// merges the workers' responses into one without their residual roots (fn_runner.py,
// "merged_result = beam_fn_api_pb2.InstructionResponse(" in apache-beam 2.77.0; its
// multi-worker tests skip test_checkpoint, apache/beam#8872), and the source ends
// after its first watermark step.
func sdfSourceOneCall(t *testing.T, s beam.Scope, events []streamEvent) beam.PCollection {
	t.Helper()
	return eventSource(s, events, -1)
}

// eventSource emits events through eventSourceFn, checkpointing at each watermark
// step for pauseMs, or never when pauseMs is negative.
func eventSource(s beam.Scope, events []streamEvent, pauseMs int64) beam.PCollection {
	fn := &eventSourceFn{PauseMs: pauseMs}
	for _, e := range events {
		fn.Events = append(fn.Events, SourceEvent{AtMs: e.at, IDs: e.ids, Watermark: e.watermark})
	}
	return beam.ParDo(s.Scope("EventSource"), fn, beam.Impulse(s))
}

// eventSourceFn emits the ids of Events in order, each timestamped at its event's
// time, over a restriction of event positions. Its manual watermark estimator is
// set at each watermark step, and there the DoFn checkpoints itself (resuming after
// PauseMs): the runner takes the residual's watermark as the output watermark of
// the source (the Beam model's SDF watermark: the estimator's value at a checkpoint
// holds the output watermark, and nothing the residual emits can be ahead of it), so
// the windows it passed can fire before the rows that follow, late ones among them,
// are emitted. After the last event the restriction is done and the watermark moves
// to the end of time. A negative PauseMs makes it emit every event in one call.
type eventSourceFn struct {
	Events  []SourceEvent
	PauseMs int64
}

func (f *eventSourceFn) CreateInitialRestriction([]byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: int64(len(f.Events))}
}

func (f *eventSourceFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (f *eventSourceFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 {
	return r.Size()
}

func (f *eventSourceFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (f *eventSourceFn) CreateWatermarkEstimator() *sdf.ManualWatermarkEstimator {
	return &sdf.ManualWatermarkEstimator{}
}

func (f *eventSourceFn) ProcessElement(we *sdf.ManualWatermarkEstimator, rt *sdf.LockRTracker, _ []byte, emit func(beam.EventTime, int64)) (sdf.ProcessContinuation, error) {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	// A residual starts with a new estimator: set it to the last step before start.
	for i := start - 1; i >= 0; i-- {
		if f.Events[i].Watermark {
			we.UpdateWatermark(time.UnixMilli(f.Events[i].AtMs))
			break
		}
	}
	for i := start; rt.TryClaim(i); i++ {
		e := f.Events[i]
		if !e.Watermark {
			for _, id := range e.IDs {
				emit(mtime.FromMilliseconds(e.AtMs), id)
			}
			continue
		}
		we.UpdateWatermark(time.UnixMilli(e.AtMs))
		if f.PauseMs >= 0 {
			return sdf.ResumeProcessingIn(time.Duration(f.PauseMs) * time.Millisecond), nil
		}
	}
	return sdf.StopProcessing(), rt.GetError()
}

func init() {
	beam.RegisterType(reflect.TypeFor[SourceEvent]())
	register.DoFn4x2[*sdf.ManualWatermarkEstimator, *sdf.LockRTracker, []byte, func(beam.EventTime, int64), sdf.ProcessContinuation, error](&eventSourceFn{})
	register.Emitter2[beam.EventTime, int64]()
}
