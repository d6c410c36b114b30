package read

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// watchOps is what a continuous read emits: the elements of its base, and those of
// each later snapshot on main.
type watchOps interface {
	// base emits the elements of the base (the range or table state resolved at
	// construction), each snapshot's at its event time from we, and moves the
	// watermark past them.
	base(ctx context.Context, tbl *table.Table, we *snapshotWatermark) error
	// step emits the elements of snapshot s, whose parent on main is prev (nil: none),
	// at event time at.
	step(ctx context.Context, tbl *table.Table, prev, s *table.Snapshot, at mtime.Time) error
}

// watchBase is the polling loop of a continuous read, shared by the changelog and the
// append reads: each call loads the table, reads the base when the restriction still
// starts there, claims and emits each snapshot on main after the one read last, and
// then either ends (to_snapshot or to_timestamp reached) or asks to be resumed after
// the poll interval. The snapshot read last is known from the restriction (see
// snapshotTracker); when main no longer descends from it (a rollback, or it expired
// before the read got to its children) the read fails rather than miss changes.
type watchBase struct {
	spec   Spec
	stream Stream

	// The live files of the snapshot planned last, reused as the next snapshot's
	// parent state.
	liveID int64
	live   map[string]table.FileScanTask
}

func (w *watchBase) setup(spec Spec, st Stream) {
	w.spec, w.stream = spec, st
}

// ready reports whether setup ran (a resolved spec always names its table).
func (w *watchBase) ready() bool { return w.spec.Table != "" }

// The splittable DoFn methods both watch DoFns share (promoted from watchBase; each
// DoFn has its own Setup, CreateInitialRestriction and ProcessElement).

// SplitRestriction keeps the restriction whole: snapshots are read in order.
func (w *watchBase) SplitRestriction(_ []byte, rest offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{rest}
}

// RestrictionSize is nominal: one table to follow.
func (w *watchBase) RestrictionSize(_ []byte, _ offsetrange.Restriction) float64 { return 1 }

// CreateTracker returns a snapshotTracker.
func (w *watchBase) CreateTracker(rest offsetrange.Restriction) *sdf.LockRTracker {
	return newSnapshotTracker(rest)
}

// TruncateRestriction stops following the table when the pipeline drains.
func (w *watchBase) TruncateRestriction(rt *sdf.LockRTracker, _ []byte) offsetrange.Restriction {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	return offsetrange.Restriction{Start: start, End: start}
}

// InitialWatermarkEstimatorState starts the watermark at the Impulse's time.
func (w *watchBase) InitialWatermarkEstimatorState(et beam.EventTime, _ offsetrange.Restriction, _ []byte) int64 {
	return int64(et)
}

// CreateWatermarkEstimator returns the estimator at state ms.
func (w *watchBase) CreateWatermarkEstimator(ms int64) *snapshotWatermark {
	return &snapshotWatermark{ms: ms}
}

// WatermarkEstimatorState returns the estimator's watermark.
func (w *watchBase) WatermarkEstimatorState(we *snapshotWatermark) int64 { return we.ms }

// restriction is the initial restriction: from the base to the end snapshot (to_snapshot:
// the base itself) or without end.
func (w *watchBase) restriction() offsetrange.Restriction {
	if w.stream.Bounded {
		return offsetrange.Restriction{Start: w.stream.BaseSequence, End: w.stream.BaseSequence + 1}
	}
	return offsetrange.Restriction{Start: w.stream.BaseSequence, End: unboundedEnd}
}

// visibleLag is how long after its timestamp a snapshot is assumed to be visible in the
// catalog: a read with to_timestamp ends at its first poll that starts this long after
// it.
const visibleLag = idleLag

// process runs one poll; see watchBase.
func (w *watchBase) process(ctx context.Context, we *snapshotWatermark, rt *sdf.LockRTracker, ops watchOps) (sdf.ProcessContinuation, error) {
	rest := rt.GetRestriction().(offsetrange.Restriction)
	if rest.Start >= rest.End {
		return sdf.StopProcessing(), nil
	}
	poll := time.Now()
	resume := sdf.ResumeProcessingIn(time.Duration(w.stream.PollSeconds) * time.Second)
	tbl, err := catalogs.LoadTable(ctx, w.spec.CatalogName, w.spec.Props(), w.spec.Table, 0)
	if err != nil {
		if errors.Is(err, config.ErrTableNotFound) {
			return sdf.StopProcessing(), config.WrapOp("read", w.spec.Table, err)
		}
		log.Warnf(ctx, "iceberg: read %s: poll failed, retrying in %ds: %v", w.spec.Table, w.stream.PollSeconds, err)
		return resume, nil
	}
	meta := tbl.Metadata()

	last := rest.Start - 1 // the sequence number of the snapshot read last
	if rest.Start == w.stream.BaseSequence {
		if !rt.TryClaim(rest.Start) {
			return sdf.StopProcessing(), nil
		}
		if w.stream.BaseSnapshotID != 0 && meta.SnapshotByID(w.stream.BaseSnapshotID) == nil {
			return sdf.StopProcessing(), config.OpErrorf("read", w.spec.Table,
				"the start snapshot %d is no longer in the table (expired?)", w.stream.BaseSnapshotID)
		}
		if err := ops.base(ctx, tbl, we); err != nil {
			return sdf.StopProcessing(), err
		}
		last = rest.Start
		if w.stream.Bounded {
			finishTracker(rt)
			return sdf.StopProcessing(), nil
		}
	}

	prev, news, err := w.newSnapshots(meta, last)
	if err != nil {
		return sdf.StopProcessing(), config.WrapOp("read", w.spec.Table, err)
	}
	ended := false
	for _, s := range news {
		if w.stream.UntilMs != nil && s.TimestampMs > *w.stream.UntilMs {
			ended = true
			break
		}
		if !rt.TryClaim(s.SequenceNumber) {
			return sdf.StopProcessing(), nil
		}
		at := we.stamp(s.TimestampMs)
		if s.TimestampMs >= w.stream.SinceMs {
			if err := ops.step(ctx, tbl, prev, s, at); err != nil {
				return sdf.StopProcessing(), err
			}
		}
		we.passed(at)
		snapshotsRead.Inc(ctx, 1)
		prev = s
	}
	if len(news) > 0 {
		log.Infof(ctx, "iceberg: read %s: followed main to snapshot %d (sequence number %d)", w.spec.Table, prev.SnapshotID, prev.SequenceNumber)
	}
	if ended || w.stream.UntilMs != nil && poll.Add(-visibleLag).UnixMilli() > *w.stream.UntilMs {
		finishTracker(rt)
		return sdf.StopProcessing(), nil
	}
	we.idle(poll)
	return resume, nil
}

// newSnapshots returns the snapshot on main read last (sequence number last; nil when
// the base was empty) and the snapshots on main after it, oldest first.
func (w *watchBase) newSnapshots(meta table.Metadata, last int64) (prev *table.Snapshot, news []*table.Snapshot, err error) {
	chain := ancestry(meta, meta.CurrentSnapshot()) // newest first
	atBase := last == w.stream.BaseSequence
	found := false
	for _, s := range chain {
		if atBase && w.stream.BaseSnapshotID != 0 {
			found = s.SnapshotID == w.stream.BaseSnapshotID
		} else {
			found = s.SequenceNumber <= last
		}
		if found {
			prev = s
			break
		}
		news = append(news, s)
	}
	slices.Reverse(news)
	switch {
	case found && prev.SequenceNumber != last:
		return nil, nil, fmt.Errorf("the snapshot read last (sequence number %d) is no longer an ancestor of main's current snapshot %d: main was rolled back or replaced",
			last, meta.CurrentSnapshot().SnapshotID)
	case !found && atBase && w.stream.BaseSnapshotID == 0:
		// The table had no snapshot at the start: main's whole history is new.
		if len(news) > 0 && news[0].ParentSnapshotID != nil {
			return nil, nil, fmt.Errorf("snapshot %d, the oldest on main after the start, has a parent %d that is no longer in the table (expired?)",
				news[0].SnapshotID, *news[0].ParentSnapshotID)
		}
	case !found && len(chain) == 0:
		return nil, nil, fmt.Errorf("main has no snapshot any more; the read was at sequence number %d", last)
	case !found:
		return nil, nil, fmt.Errorf("the snapshot read last (sequence number %d) is no longer an ancestor of main's current snapshot %d: main was rolled back or replaced, or the snapshot expired before the read reached its children",
			last, meta.CurrentSnapshot().SnapshotID)
	}
	for i, s := range news {
		if s.SequenceNumber <= last || i > 0 && s.SequenceNumber <= news[i-1].SequenceNumber {
			return nil, nil, fmt.Errorf("snapshot %d has sequence number %d, not after %d: cannot follow main by sequence number",
				s.SnapshotID, s.SequenceNumber, last)
		}
	}
	return prev, news, nil
}

// liveFiles returns the live data files of snapshot id, from the cache when it was
// the snapshot planned last.
func (w *watchBase) liveFiles(ctx context.Context, tbl *table.Table, id int64) (map[string]table.FileScanTask, error) {
	if id == w.liveID && w.live != nil {
		return w.live, nil
	}
	live, err := liveFiles(ctx, tbl, w.spec, id)
	if err != nil {
		return nil, err
	}
	w.liveID, w.live = id, live
	return live, nil
}

// diff returns the change tasks of snapshot s against its parent prev (nil: none),
// all kinds; Replace snapshots change no rows and return none.
func (w *watchBase) diff(ctx context.Context, tbl *table.Table, prev, s *table.Snapshot) ([]ChangeTask, error) {
	var before map[string]table.FileScanTask
	if prev != nil {
		var err error
		if before, err = w.liveFiles(ctx, tbl, prev.SnapshotID); err != nil {
			return nil, err
		}
	}
	after, err := w.liveFiles(ctx, tbl, s.SnapshotID)
	if err != nil {
		return nil, err
	}
	if s.Summary != nil && s.Summary.Operation == table.OpReplace {
		return nil, nil
	}
	return diffLive(tbl.Metadata(), tbl.MetadataLocation(), s, before, after)
}
