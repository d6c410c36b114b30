package read

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func init() {
	beam.RegisterType(reflect.TypeFor[watchAppendsFn]())
	register.Emitter2[beam.EventTime, Task]()
}

// AppendsSpec is everything a worker needs for a continuous read of the rows appended
// to a table (Read with streaming: true): the scan's Spec (catalog, table, filter,
// columns; no snapshot fields), the Stream, and the base.
type AppendsSpec struct {
	Spec
	Stream Stream `json:"stream"`
	// BaseScan makes the base the whole table at Stream.BaseSnapshotID (with its
	// deletes applied). Otherwise the base is the rows appended by the snapshots in
	// (FromSnapshotID, Stream.BaseSnapshotID], none when the two are equal.
	BaseScan bool `json:"base_scan,omitempty"`
	// FromSnapshotID is the exclusive start of the base's appends (0: from the oldest
	// ancestor of the base, inclusive).
	FromSnapshotID int64 `json:"from_snapshot_id,omitempty"`
}

// StreamOptions are the settings of a continuous read of appended rows that
// ResolveAppends validates against a table. Nil pointers are unset.
type StreamOptions struct {
	PollSeconds   int
	FromSnapshot  *int64
	ToSnapshot    *int64
	FromTimestamp *int64 // epoch millis
	ToTimestamp   *int64 // epoch millis
	// Latest starts after the current snapshot (nothing of it is read) when neither
	// FromSnapshot nor FromTimestamp is set; otherwise the read starts with the rows
	// live in the current snapshot.
	Latest bool
}

// ResolveAppends validates a continuous read of appended rows against the loaded
// table: base is the resolved Spec of the scan (filter and columns), opts where the
// read starts and ends. Every problem is reported at once.
func ResolveAppends(tbl *table.Table, base Spec, opts StreamOptions) (AppendsSpec, error) {
	meta := tbl.Metadata()
	ro := rangeOptions{fromSnapshot: opts.FromSnapshot, toSnapshot: opts.ToSnapshot, fromTimestamp: opts.FromTimestamp,
		toTimestamp: opts.ToTimestamp, latest: opts.Latest, streaming: true}
	from, to, err := resolveRange(meta, base.Table, ro)
	if err != nil {
		return AppendsSpec{}, err
	}
	st, err := newStream(meta, base.Table, opts.PollSeconds, to, ro)
	if err != nil {
		return AppendsSpec{}, err
	}
	spec := AppendsSpec{Spec: base, Stream: st, FromSnapshotID: from}
	switch {
	case opts.FromSnapshot != nil || opts.FromTimestamp != nil:
	case opts.Latest:
		spec.FromSnapshotID = to // nothing of the current snapshot
	default:
		spec.BaseScan, spec.FromSnapshotID = to != 0, 0
	}
	return spec, nil
}

// watchAppendsFn is the planning step of a continuous Read: an unbounded splittable
// DoFn (after an Impulse) that plans the base, then polls the table and plans the
// data files each new append snapshot on main adds. It emits Tasks, at the commit time
// of their snapshot (see snapshotWatermark), for the same read DoFn as a batch Read.
//
// Snapshots that are not appends are skipped, as Beam Java's IcebergIO and Iceberg's
// incremental append scans do: replace snapshots (compactions) change no rows;
// overwrite and delete snapshots are logged and counted (snapshots_skipped) because
// the rows they remove or replace stay in the read's output; ReadChanges reads them.
type watchAppendsFn struct {
	// Spec is the read, resolved at construction.
	Spec AppendsSpec

	watchBase
}

// init prepares the DoFn's state once: Setup and CreateInitialRestriction both call it.
func (fn *watchAppendsFn) init() {
	if fn.ready() {
		return
	}
	fn.setup(fn.Spec.Spec, fn.Spec.Stream)
}

// Setup prepares the DoFn's state.
func (fn *watchAppendsFn) Setup() { fn.init() }

// CreateInitialRestriction covers the base and every later snapshot up to the end.
func (fn *watchAppendsFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	fn.init()
	return fn.restriction()
}

// ProcessElement runs one poll.
func (fn *watchAppendsFn) ProcessElement(ctx context.Context, we *snapshotWatermark, rt *sdf.LockRTracker, _ []byte,
	emit func(beam.EventTime, Task)) (sdf.ProcessContinuation, error) {
	return fn.process(ctx, we, rt, appendsOps{fn: fn, emit: emit})
}

// appendsOps emits read tasks for watchBase.
type appendsOps struct {
	fn   *watchAppendsFn
	emit func(beam.EventTime, Task)
}

// base emits the whole table at the base snapshot, or the appends of the base range.
func (o appendsOps) base(ctx context.Context, tbl *table.Table, we *snapshotWatermark) error {
	spec := o.fn.Spec
	id := spec.Stream.BaseSnapshotID
	if id == 0 {
		return nil
	}
	meta := tbl.Metadata()
	base := meta.SnapshotByID(id)
	if spec.BaseScan {
		at := we.stamp(base.TimestampMs)
		n, err := o.scan(ctx, tbl, id, at)
		if err != nil {
			return err
		}
		we.passed(at)
		log.Infof(ctx, "iceberg: read %s: planned %d file scan tasks of snapshot %d; following main from there", spec.Table, n, id)
		return nil
	}
	var chain []*table.Snapshot // (FromSnapshotID, base], oldest first
	for _, s := range ancestry(meta, base) {
		if s.SnapshotID == spec.FromSnapshotID {
			break
		}
		chain = append([]*table.Snapshot{s}, chain...)
	}
	for i, s := range chain {
		var prev *table.Snapshot
		switch {
		case i > 0:
			prev = chain[i-1]
		case s.ParentSnapshotID != nil:
			if prev = meta.SnapshotByID(*s.ParentSnapshotID); prev == nil && spec.FromSnapshotID != 0 {
				return config.OpErrorf("read", spec.Table, "snapshot %d is no longer an ancestor of %d (expired?)", spec.FromSnapshotID, id)
			}
		}
		at := we.stamp(s.TimestampMs)
		if err := o.step(ctx, tbl, prev, s, at); err != nil {
			return err
		}
		we.passed(at)
	}
	return nil
}

// scan emits the tasks of a scan of the whole table at snapshot id.
func (o appendsOps) scan(ctx context.Context, tbl *table.Table, id int64, at mtime.Time) (int, error) {
	spec := o.fn.Spec.Spec
	spec.SnapshotID = id
	tasks, err := planFiltered(ctx, spec, func(s Spec) (*table.Scan, error) { return s.NewScan(tbl) })
	if err != nil {
		return 0, config.OpErrorf("read", spec.Table, "plan: %w", err)
	}
	for _, t := range tasks {
		task, err := newTask(tbl.Metadata(), tbl.MetadataLocation(), t)
		if err != nil {
			return 0, config.WrapOp("read", spec.Table, err)
		}
		o.emit(at, task)
	}
	filesPlanned.Inc(ctx, int64(len(tasks)))
	return len(tasks), nil
}

// step emits the data files snapshot s appends. A snapshot whose parent is unknown
// (the first of the table, or of the history left) is read whole.
func (o appendsOps) step(ctx context.Context, tbl *table.Table, prev, s *table.Snapshot, at mtime.Time) error {
	spec := o.fn.Spec
	var op table.Operation
	if s.Summary != nil {
		op = s.Summary.Operation
	}
	switch {
	case prev == nil:
		_, err := o.scan(ctx, tbl, s.SnapshotID, at)
		return err
	case op == table.OpReplace:
		return nil
	case op != table.OpAppend:
		snapshotsSkipped.Inc(ctx, 1)
		log.Warnf(ctx, "iceberg: read %s: skipped snapshot %d (operation %q): a continuous Read emits appended rows only, "+
			"so the rows this snapshot removes or replaces are not retracted; use ReadChanges to see them", spec.Table, s.SnapshotID, op)
		return nil
	}
	changes, err := o.fn.diff(ctx, tbl, prev, s)
	if err != nil {
		return config.OpErrorf("read", spec.Table, "plan snapshot %d: %w", s.SnapshotID, err)
	}
	n := 0
	for _, ct := range changes {
		if ct.Kind == changeAdded {
			o.emit(at, ct.After)
			n++
		}
	}
	filesPlanned.Inc(ctx, int64(n))
	return nil
}

// ScanStream adds a continuous read of appended rows to the pipeline: the planning
// SDF (watchAppendsFn), a reshuffle of its tasks and the batch read's splittable read
// DoFn. It emits row.Row values, or values of outType when it is not nil; the output
// is unbounded, in the global window, each row timestamped at the commit time of the
// snapshot that appended it (the base snapshot's for the base scan).
func ScanStream(s beam.Scope, spec AppendsSpec, outType reflect.Type) beam.PCollection {
	s = s.Scope("iceberg.Read")
	tasks := beam.ParDo(s.Scope("Watch"), &watchAppendsFn{Spec: spec}, beam.Impulse(s))
	return readTasks(s, spec.Spec, tasks, outType)
}

// ScanStreamBatches is ScanStream emitting RecordBatch values (see ScanBatches), each
// timestamped like the rows it holds.
func ScanStreamBatches(s beam.Scope, spec AppendsSpec) beam.PCollection {
	s = s.Scope("iceberg.ReadBatches")
	tasks := beam.ParDo(s.Scope("Watch"), &watchAppendsFn{Spec: spec}, beam.Impulse(s))
	return readRecords(s, spec.Spec, tasks)
}
