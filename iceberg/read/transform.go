package read

import (
	"context"
	"fmt"
	ibg "github.com/apache/iceberg-go"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Task)(nil)).Elem())
	register.DoFn3x1[context.Context, []byte, func(Task), error](&planFn{})
	register.Emitter1[Task]()
	register.DoFn4x1[context.Context, *sdf.LockRTracker, Task, func(row.Row), error](&readRowsFn{})
	register.Emitter1[row.Row]()
}

// Scan adds the read of a validated Spec to the pipeline: one planning step at run
// time, a reshuffle of the planned tasks, and a splittable DoFn that reads them. It
// emits row.Row values, or values of outType when outType is not nil (a struct type
// whose fields match the columns read).
func Scan(s beam.Scope, spec Spec, outType reflect.Type) beam.PCollection {
	s = s.Scope("iceberg.Read")
	js := spec.Encode()
	tasks := beam.ParDo(s.Scope("Plan"), &planFn{Spec: js}, beam.Impulse(s))
	tasks = beam.Reshuffle(s, tasks)
	return beam.ParDo(s.Scope("ReadTasks"), &readRowsFn{Spec: js}, tasks)
}

// CheckOutputType reports whether struct type t can receive the columns read.
func CheckOutputType(t reflect.Type, sc *ibg.Schema, columns []string) error {
	return fmt.Errorf("iceberg: read: typed output %v: %w (not yet)", t, config.ErrUnsupported)
}
