package read

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// watcher runs watchChangesFn's polls by hand, the way the SDK does: a tracker per
// call, and after a call that asks to resume, a checkpoint (TrySplit(0)) whose
// residual is the next call's restriction.
type watcher struct {
	t    *testing.T
	fn   *watchChangesFn
	rest offsetrange.Restriction
	we   *snapshotWatermark
	done bool
}

// emitted is one ChangeTask with its event time.
type emitted struct {
	at mtime.Time
	ct ChangeTask
}

func newWatcher(t *testing.T, cat *icebergtest.LocalCatalog, tbl *table.Table, opts ChangesOptions) *watcher {
	t.Helper()
	opts.Streaming, opts.PollSeconds = true, 1
	spec, err := ResolveChanges(context.Background(), cat.Name, cat.Props, "db.w", tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	fn := &watchChangesFn{Spec: spec}
	if err := fn.Setup(); err != nil {
		t.Fatal(err)
	}
	rest, err := fn.CreateInitialRestriction(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &watcher{t: t, fn: fn, rest: rest, we: fn.CreateWatermarkEstimator(int64(mtime.MinTimestamp))}
}

// poll runs one call and returns what it emitted, or its error.
func (w *watcher) poll() ([]emitted, error) {
	w.t.Helper()
	if w.done {
		w.t.Fatal("poll after the read ended")
	}
	rt := w.fn.CreateTracker(w.rest)
	var out []emitted
	cont, err := w.fn.ProcessElement(context.Background(), w.we, rt, nil, func(at beam.EventTime, ct ChangeTask) {
		out = append(out, emitted{at, ct})
	})
	if err != nil {
		return nil, err
	}
	if !cont.ShouldResume() {
		if !rt.IsDone() {
			w.t.Fatalf("the read stopped with restriction %v not done", rt.GetRestriction())
		}
		w.done = true
		return out, nil
	}
	if cont.ResumeDelay() != time.Second {
		w.t.Errorf("resume delay %v, want the poll interval", cont.ResumeDelay())
	}
	if _, res, _ := rt.TrySplit(0.5); res != nil {
		w.t.Errorf("split at 0.5 gave residual %v: only checkpoints may split", res)
	}
	primary, res, err := rt.TrySplit(0)
	if err != nil || res == nil {
		w.t.Fatalf("checkpoint: %v, %v", res, err)
	}
	if rt.GetRestriction() != primary || !rt.IsDone() {
		w.t.Fatalf("checkpoint primary %v is not done", primary)
	}
	w.rest = res.(offsetrange.Restriction)
	return out, nil
}

// mustPoll is poll failing the test on an error.
func (w *watcher) mustPoll() []emitted {
	w.t.Helper()
	out, err := w.poll()
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

func appendRows(t *testing.T, tbl *table.Table, lo, hi int) *table.Table {
	t.Helper()
	sc := tbl.Schema()
	time.Sleep(3 * time.Millisecond) // distinct snapshot timestamps
	return icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, icebergtest.SampleRows(hi, 5)[lo:hi]))
}

// TestWatchFollowsMain follows a table that is empty at the start: each poll emits
// the change tasks of the snapshots committed since the last one, in commit order, at
// their commit times, and the watermark moves past them (and with the wall clock while
// idle); a rollback of main fails the read instead of losing changes.
func TestWatchFollowsMain(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.w", icebergtest.SampleSchema(), icebergtest.WithFormatVersion(3))
	w := newWatcher(t, cat, tbl, ChangesOptions{})

	before := time.Now()
	if out := w.mustPoll(); len(out) != 0 {
		t.Fatalf("empty table: emitted %v", out)
	}
	if wm := w.we.CurrentWatermark(); wm.Before(before.Add(-idleLag-time.Second)) || wm.After(time.Now().Add(-idleLag)) {
		t.Errorf("idle watermark %v, want about %v before the poll", wm, idleLag)
	}

	tbl = appendRows(t, tbl, 0, 10)
	s1 := tbl.CurrentSnapshot()
	tbl = appendRows(t, tbl, 10, 20)
	s2 := tbl.CurrentSnapshot()
	out := w.mustPoll()
	if len(out) != 2 || out[0].ct.SnapshotID != s1.SnapshotID || out[1].ct.SnapshotID != s2.SnapshotID ||
		out[0].ct.Kind != changeAdded || out[1].ct.Sequence != s2.SequenceNumber {
		t.Fatalf("emitted %+v, want one added file of s1 then one of s2", out)
	}
	if out[0].at != mtime.Time(s1.TimestampMs) || out[1].at != mtime.Time(s2.TimestampMs) {
		t.Errorf("event times %v, %v; want the commit times %d, %d", out[0].at, out[1].at, s1.TimestampMs, s2.TimestampMs)
	}
	if w.we.ms <= s2.TimestampMs {
		t.Errorf("watermark %d is not past s2 (%d)", w.we.ms, s2.TimestampMs)
	}
	if out := w.mustPoll(); len(out) != 0 {
		t.Fatalf("no new snapshot: emitted %v", out)
	}

	tbl, _, err := icebergtest.DeleteKeysDV(context.Background(), tbl, "id", []any{int64(3), int64(15)})
	if err != nil {
		t.Fatal(err)
	}
	out = w.mustPoll()
	if len(out) != 2 || out[0].ct.Kind != changeRowsDeleted || out[0].ct.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatalf("DV delete: emitted %+v, want two rows_deleted tasks", out)
	}

	txn := tbl.NewTransaction()
	if err := txn.RollbackToSnapshot(s1.SnapshotID); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.poll(); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("after a rollback of main: %v, want an error saying so", err)
	}
}

// TestWatchEnds ends a read at to_timestamp (when main has a later snapshot) and at
// to_snapshot (after the base), and skips snapshots committed before a future
// from_timestamp.
func TestWatchEnds(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.w", icebergtest.SampleSchema(), icebergtest.WithFormatVersion(3))
	tbl = appendRows(t, tbl, 0, 10)
	s1 := tbl.CurrentSnapshot()

	t.Run("to_snapshot", func(t *testing.T) {
		id := s1.SnapshotID
		w := newWatcher(t, cat, tbl, ChangesOptions{ToSnapshot: &id})
		if out := w.mustPoll(); len(out) != 1 || !w.done {
			t.Errorf("emitted %d tasks, done %v; want s1's file and the end", len(out), w.done)
		}
	})

	until := time.Now().Add(time.Hour).UnixMilli()
	since := time.Now().Add(500 * time.Millisecond).UnixMilli()
	w := newWatcher(t, cat, tbl, ChangesOptions{FromTimestamp: &since, ToTimestamp: &until})
	if out := w.mustPoll(); len(out) != 0 {
		t.Fatalf("future from_timestamp: the start emitted %v", out)
	}
	tbl = appendRows(t, tbl, 10, 20) // committed before from_timestamp: skipped
	if tbl.CurrentSnapshot().TimestampMs >= since {
		t.Fatal("the machine is too slow for this test: an append took 500 ms")
	}
	time.Sleep(time.Until(time.UnixMilli(since + 5)))
	tbl = appendRows(t, tbl, 20, 30)
	s3 := tbl.CurrentSnapshot()
	if out := w.mustPoll(); len(out) != 1 || out[0].ct.SnapshotID != s3.SnapshotID || w.done {
		t.Fatalf("emitted %+v (done %v), want s3's file only", out, w.done)
	}
	// A snapshot after to_timestamp ends the read without being read.
	*w.fn.stream.UntilMs = s3.TimestampMs
	time.Sleep(3 * time.Millisecond)
	appendRows(t, tbl, 30, 40)
	if out := w.mustPoll(); len(out) != 0 || !w.done {
		t.Errorf("after to_timestamp: emitted %v, done %v; want nothing and the end", out, w.done)
	}
}
