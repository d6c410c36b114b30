package read

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Task)(nil)).Elem())
	beam.RegisterType(reflect.TypeFor[planFn]())
	beam.RegisterType(reflect.TypeFor[planAfterFn]())
	beam.RegisterType(reflect.TypeFor[signalFn]())
	register.Emitter1[int]()
	register.Iter1[int]()
	register.Emitter1[Task]()
	beam.RegisterType(reflect.TypeFor[readFn]())
	register.Emitter1[Batch]()
	beam.RegisterType(reflect.TypeFor[readRecordsFn]())
	register.Emitter1[RecordBatch]()
	beam.RegisterType(reflect.TypeFor[toRowsFn]())
	register.Emitter1[row.Row]()
	beam.RegisterType(reflect.TypeFor[toStructsFn]())
	register.Emitter1[beam.X]()
}

// Scan adds the read of a validated Spec to the pipeline: one planning step at run
// time, a reshuffle of the planned tasks, and a splittable DoFn that reads them. It
// emits row.Row values, or values of outType when outType is not nil (a struct type
// whose fields match the columns read).
//
// With after, the planning step waits until every PCollection of after is complete
// (in the global window): they are its side input.
func Scan(s beam.Scope, spec Spec, outType reflect.Type, after ...beam.PCollection) beam.PCollection {
	s = s.Scope("iceberg.Read")
	return readTasks(s, spec, plan(s, spec, after), outType)
}

// ScanBatches is Scan emitting RecordBatch values (one per non-empty record batch
// iceberg-go's ReadTasks yields, deletes and the residual filter applied) instead of
// rows.
func ScanBatches(s beam.Scope, spec Spec, after ...beam.PCollection) beam.PCollection {
	s = s.Scope("iceberg.ReadBatches")
	return readRecords(s, spec, plan(s, spec, after))
}

// plan adds the planning step of spec, after the PCollections of after when there
// are any.
func plan(s beam.Scope, spec Spec, after []beam.PCollection) beam.PCollection {
	if len(after) == 0 {
		return beam.ParDo(s.Scope("Plan"), &planFn{Spec: spec}, beam.Impulse(s))
	}
	ws := s.Scope("WaitOn")
	signals := make([]beam.PCollection, len(after))
	for i, c := range after {
		signals[i] = beam.ParDo(ws, &signalFn{}, beam.WindowInto(ws, window.NewGlobalWindows(), c))
	}
	done := beam.Flatten(ws, signals...)
	return beam.ParDo(s.Scope("Plan"), &planAfterFn{Spec: spec}, beam.Impulse(s), beam.SideInput{Input: done})
}

// signalFn turns a PCollection the read waits for into an empty PCollection of int,
// complete when its input is: the side input of planAfterFn.
type signalFn struct{}

func (*signalFn) ProcessElement(_ beam.T, _ func(int)) {}

// planAfterFn is planFn with a side input, which holds the planning back until the
// PCollections the read waits for are complete (a side input is read only when
// ready: Beam's model, on every runner).
type planAfterFn struct {
	// Spec is the scan, resolved at construction.
	Spec Spec
}

func (fn *planAfterFn) ProcessElement(ctx context.Context, b []byte, _ func(*int) bool, emit func(Task)) error {
	return (&planFn{Spec: fn.Spec}).ProcessElement(ctx, b, emit)
}

// readBatches reshuffles planned tasks and reads them with the splittable read DoFn,
// emitting Batch values.
func readBatches(s beam.Scope, spec Spec, tasks beam.PCollection) beam.PCollection {
	tasks = beam.Reshuffle(s, tasks)
	return beam.ParDo(s.Scope("ReadTasks"), &readFn{Spec: spec}, tasks)
}

// readRecords is readBatches emitting RecordBatch values.
func readRecords(s beam.Scope, spec Spec, tasks beam.PCollection) beam.PCollection {
	tasks = beam.Reshuffle(s, tasks)
	return beam.ParDo(s.Scope("ReadTasks"), &readRecordsFn{Spec: spec}, tasks)
}

// readTasks reshuffles planned tasks and reads them with the splittable read DoFn,
// emitting row.Row values or values of outType.
func readTasks(s beam.Scope, spec Spec, tasks beam.PCollection, outType reflect.Type) beam.PCollection {
	batches := readBatches(s, spec, tasks)
	if outType == nil {
		return beam.ParDo(s.Scope("ToRows"), &toRowsFn{}, batches)
	}
	return beam.ParDo(s.Scope("ToStructs"), &toStructsFn{Type: beam.EncodedType{T: outType}},
		batches, beam.TypeDefinition{Var: beam.XType, T: outType})
}

// CheckOutputType reports whether struct type t can receive the columns read (all
// table columns when columns is empty): every mapped field needs a column of a type it
// can hold. The error names the field.
func CheckOutputType(t reflect.Type, sc *ibg.Schema, columns []string) error {
	proj := sc
	if len(columns) > 0 {
		var user []string
		var lineage []ibg.NestedField
		for _, c := range columns {
			switch c {
			case ibg.RowIDColumnName:
				lineage = append(lineage, ibg.RowID())
			case ibg.LastUpdatedSequenceNumberColumnName:
				lineage = append(lineage, ibg.LastUpdatedSequenceNumber())
			default:
				user = append(user, c)
			}
		}
		var err error
		if proj, err = sc.Select(true, user...); err != nil {
			return fmt.Errorf("iceberg: read: %w", err)
		}
		if len(lineage) > 0 {
			proj = ibg.NewSchema(proj.ID, append(proj.Fields(), lineage...)...)
		}
	}
	as, err := table.SchemaToArrowSchema(proj, nil, true, false)
	if err != nil {
		return fmt.Errorf("iceberg: read: output type %v: %w", t, err)
	}
	if _, err := row.NewStructReader(t, as, proj); err != nil {
		return &config.ConfigError{Key: "output type", Err: err}
	}
	return nil
}
