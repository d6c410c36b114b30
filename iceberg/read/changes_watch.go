package read

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// watchChangesFn is the planning step of a continuous changelog read: an unbounded
// splittable DoFn (after an Impulse) that plans the base range like changesPlanFn,
// then polls the table and plans each new snapshot on main against its parent. It
// emits the ChangeTasks of each snapshot at the snapshot's commit time (see
// snapshotWatermark), for the same read DoFn as the bounded read.
type watchChangesFn struct {
	// Spec is the changelog read, resolved at construction; its Stream is set.
	Spec ChangesSpec

	watchBase
}

// init prepares the DoFn's state once: Setup and CreateInitialRestriction both call it.
func (fn *watchChangesFn) init() error {
	if fn.ready() {
		return nil
	}
	if fn.Spec.Stream == nil {
		return config.OpErrorf("read changes", fn.Spec.Table, "spec without stream settings")
	}
	fn.setup(fn.Spec.Spec, *fn.Spec.Stream)
	return nil
}

// Setup prepares the DoFn's state.
func (fn *watchChangesFn) Setup() error { return fn.init() }

// CreateInitialRestriction covers the base and every later snapshot up to the end.
func (fn *watchChangesFn) CreateInitialRestriction(_ []byte) (offsetrange.Restriction, error) {
	if err := fn.init(); err != nil {
		return offsetrange.Restriction{}, err
	}
	return fn.restriction(), nil
}

// ProcessElement runs one poll.
func (fn *watchChangesFn) ProcessElement(ctx context.Context, we *snapshotWatermark, rt *sdf.LockRTracker, _ []byte,
	emit func(beam.EventTime, ChangeTask)) (sdf.ProcessContinuation, error) {
	return fn.process(ctx, we, rt, changesOps{fn: fn, emit: emit})
}

// changesOps emits change tasks for watchBase.
type changesOps struct {
	fn   *watchChangesFn
	emit func(beam.EventTime, ChangeTask)
}

// base plans the range (FromSnapshotID, ToSnapshotID] as the bounded read does.
func (o changesOps) base(ctx context.Context, tbl *table.Table, we *snapshotWatermark) error {
	spec := o.fn.Spec
	if spec.ToSnapshotID == 0 {
		return nil
	}
	tasks, err := planChanges(ctx, tbl, spec)
	if err != nil {
		return config.OpErrorf("read changes", spec.Table, "plan: %w", err)
	}
	meta := tbl.Metadata()
	var cur int64 // the snapshot whose tasks are being emitted
	var at mtime.Time
	for _, t := range tasks { // in commit order
		if t.SnapshotID != cur {
			if cur != 0 {
				we.passed(at)
			}
			cur, at = t.SnapshotID, we.stamp(meta.SnapshotByID(t.SnapshotID).TimestampMs)
		}
		o.emit(at, t)
	}
	if cur != 0 {
		we.passed(at)
	}
	we.passed(we.stamp(meta.SnapshotByID(spec.ToSnapshotID).TimestampMs))
	filesPlanned.Inc(ctx, int64(len(tasks)))
	log.Infof(ctx, "iceberg: read changes %s: planned %d changed data files in (%d, %d]; following main from there",
		spec.Table, len(tasks), spec.FromSnapshotID, spec.ToSnapshotID)
	return nil
}

// step plans the changes of snapshot s against its parent.
func (o changesOps) step(ctx context.Context, tbl *table.Table, prev, s *table.Snapshot, at mtime.Time) error {
	spec := o.fn.Spec
	var prevID int64
	if prev != nil {
		prevID = prev.SnapshotID
	}
	if err := checkRowLineage(tbl.Metadata(), spec.Table, prevID, s.SnapshotID); err != nil {
		return err
	}
	tasks, err := o.fn.diff(ctx, tbl, prev, s)
	if err != nil {
		return config.OpErrorf("read changes", spec.Table, "plan snapshot %d: %w", s.SnapshotID, err)
	}
	for _, t := range tasks {
		o.emit(at, t)
	}
	filesPlanned.Inc(ctx, int64(len(tasks)))
	return nil
}
