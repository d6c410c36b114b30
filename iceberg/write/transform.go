package write

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

var rowType = reflect.TypeFor[row.Row]()

// Append adds the append write of rows (a PCollection of row.Row or of one struct
// type) to s: rows are routed to their tables and checked (rejects to the dead letter
// output), written to Parquet by per-bundle writers, grouped by table (one group per
// table and window) and committed by the Committer. It returns the PCollection of
// SnapshotInfo and the PCollection of DeadLetter.
func Append(s beam.Scope, spec Spec, rows beam.PCollection) (snapshots, dead beam.PCollection, err error) {
	s = s.Scope("iceberg.Append")
	if _, err := spec.runtime(); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if spec.SinkID == "" {
		return beam.PCollection{}, beam.PCollection{}, config.Errorf(config.KeySinkID, "empty sink id")
	}
	t := rows.Type().Type()
	var deads []beam.PCollection
	if t != rowType {
		st := t
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		if st.Kind() != reflect.Struct || typex.IsKV(rows.Type()) {
			return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("%w: iceberg: write %s: rows must be iceberg.Row or a struct, got %s",
				config.ErrInvalidConfig, spec.Table, rows.Type())
		}
		if _, err := row.InferStructSchema(t); err != nil {
			return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("%w: iceberg: write %s: %w", config.ErrInvalidConfig, spec.Table, err)
		}
		outs, err := beam.TryParDo(s.Scope("ToRow"), &structToRowFn{}, rows)
		if err != nil {
			return beam.PCollection{}, beam.PCollection{}, err
		}
		rows = outs[0]
		deads = append(deads, outs[1])
	}
	outs, err := beam.TryParDo(s.Scope("WriteFiles"), &writeFn{Spec: spec}, rows)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	files, writeDead := outs[0], outs[1]
	deads = append(deads, writeDead)
	grouped := beam.GroupByKey(s.Scope("GroupByTable"), files)
	commits, err := beam.TryParDo(s.Scope("Commit"), &commitFn{Spec: spec}, grouped)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	snapshots = commits[0]
	dead = deads[0]
	if len(deads) > 1 {
		dead = beam.Flatten(s.Scope("DeadLetters"), deads...)
	}
	return snapshots, dead, nil
}
