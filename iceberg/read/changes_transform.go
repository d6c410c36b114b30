package read

import (
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*ChangeTask)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*ChangeBatch)(nil)).Elem())
	beam.RegisterType(reflect.TypeFor[changesPlanFn]())
	register.Emitter1[ChangeTask]()
	beam.RegisterType(reflect.TypeFor[changesReadFn]())
	register.Emitter1[ChangeBatch]()
	beam.RegisterType(reflect.TypeFor[toChangeRowsFn]())
	beam.RegisterType(reflect.TypeFor[keyChangeRowsFn]())
	register.Emitter2[row.Row, row.Row]()
	register.DoFn3x1[row.Row, func(*row.Row) bool, func(row.Row), error](&netChangesFn{})
	register.Iter1[row.Row]()
	beam.RegisterType(reflect.TypeFor[watchChangesFn]())
	register.Emitter2[beam.EventTime, ChangeTask]()
}

// Changes adds the changelog read of a validated ChangesSpec to the pipeline: one
// planning step at run time, a reshuffle of the change tasks, a DoFn that reads them,
// and, for a table with identifier fields, a GroupByKey by (commit snapshot, key) that
// turns a DELETE and an INSERT of one key into UPDATE_BEFORE and UPDATE_AFTER. It
// emits row.Row values: the emitted columns, then _change_type,
// _commit_snapshot_id and _commit_snapshot_sequence_number.
//
// With spec.Stream set the planning step is watchChangesFn, an unbounded splittable
// DoFn that follows main: the output is unbounded, each row timestamped at its
// snapshot's commit time (see snapshotWatermark). The GroupByKey then runs in
// one-millisecond fixed windows, which hold exactly the rows of the snapshots
// committed in that millisecond and close as soon as the watermark passes the
// snapshot; the rows go back to the global window after it.
func Changes(s beam.Scope, spec ChangesSpec) beam.PCollection {
	s = s.Scope("iceberg.ReadChanges")
	var tasks beam.PCollection
	if spec.Stream != nil {
		tasks = beam.ParDo(s.Scope("Watch"), &watchChangesFn{Spec: spec}, beam.Impulse(s))
	} else {
		tasks = beam.ParDo(s.Scope("Plan"), &changesPlanFn{Spec: spec}, beam.Impulse(s))
	}
	tasks = beam.Reshuffle(s, tasks)
	batches := beam.ParDo(s.Scope("ReadChanges"), &changesReadFn{Spec: spec}, tasks)
	if len(spec.KeyColumns) == 0 {
		return beam.ParDo(s.Scope("ToRows"), &toChangeRowsFn{}, batches)
	}
	keyed := beam.ParDo(s.Scope("KeyRows"), &keyChangeRowsFn{KeyColumns: spec.KeyColumns}, batches)
	if spec.Stream != nil {
		keyed = beam.WindowInto(s.Scope("PerCommit"), window.NewFixedWindows(time.Millisecond), keyed)
	}
	grouped := beam.GroupByKey(s.Scope("ByCommitAndKey"), keyed)
	out := beam.ParDo(s.Scope("NetChanges"), &netChangesFn{Columns: spec.Columns}, grouped)
	if spec.Stream != nil {
		out = beam.WindowInto(s.Scope("GlobalWindow"), window.NewGlobalWindows(), out)
	}
	return out
}
