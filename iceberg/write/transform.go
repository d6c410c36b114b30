package write

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

var rowType = reflect.TypeFor[row.Row]()

// StructSchema returns the schema of the rows a write of spec makes of struct type t:
// the type's inferred schema (row.InferStructSchema, with spec's NanoTimes) after spec's
// keep, drop or only.
// An error names a field keep, drop or only lists that t lacks.
func StructSchema(spec Spec, t reflect.Type) (*ibg.Schema, error) {
	sc, err := row.InferStructSchema(t)
	if err != nil {
		return nil, err
	}
	sc = row.WithNanoTimes(sc, spec.NanoTimes)
	proj, err := schema.NewProjection(spec.Keep, spec.Drop, spec.Only)
	if err != nil {
		return nil, err
	}
	return proj.Schema(sc)
}

// toRows returns col (a PCollection of row.Row, or of one struct type or pointers to
// it) as a PCollection of row.Row: structs become Rows of their inferred schema
// (row.InferStructSchema, with spec's NanoTimes), and a struct that cannot be
// converted goes to dead, a PCollection of DeadLetter naming spec's table (dead is the
// zero PCollection for Rows). Any other element type is an error wrapping
// config.ErrInvalidConfig.
func toRows(s beam.Scope, spec Spec, col beam.PCollection) (rows, dead beam.PCollection, err error) {
	if col.Type().Type() == rowType {
		return col, beam.PCollection{}, nil
	}
	table := spec.Table
	if err := checkStructs(table, col); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	outs, err := beam.TryParDo(s.Scope("ToRow"), &structToRowFn{Table: table, NanoTimes: spec.NanoTimes}, col)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	return outs[0], outs[1], nil
}

// checkStructs reports whether col's elements are structs of a type (or pointers to
// one) whose schema can be inferred: what toRows converts to Rows.
func checkStructs(table string, col beam.PCollection) error {
	t := col.Type().Type()
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct || typex.IsKV(col.Type()) {
		return config.OpErrorf("write", table,
			"%w: rows must be iceberg.Row or a struct, got %s", config.ErrInvalidConfig, col.Type())
	}
	if _, err := row.InferStructSchema(t); err != nil {
		return config.OpErrorf("write", table, "%w: %w", config.ErrInvalidConfig, err)
	}
	return nil
}

// Append adds the append write of rows (a PCollection of row.Row or of one struct
// type) to s: rows are routed to their tables and checked (rejects to the dead letter
// output), projected (keep/drop/only), written to Parquet by per-bundle writers (or,
// with spec.Hash, shuffled in packed batches by table and partition and written by one
// writer per partition; unpartitioned tables are written as without it), grouped by table (one group per table and window) and
// committed by the Committer. It returns the PCollection of
// SnapshotInfo and the PCollection of DeadLetter.
func Append(s beam.Scope, spec Spec, rows beam.PCollection) (snapshots, dead beam.PCollection, err error) {
	s = s.Scope("iceberg.Append")
	if _, err := spec.runtime(); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if t := rows.Type().Type(); t != rowType {
		if _, err := StructSchema(spec, t); err != nil {
			return beam.PCollection{}, beam.PCollection{}, config.OpErrorf("write", spec.Table, "%w: %w", config.ErrInvalidConfig, err)
		}
	}
	if err := checkWindows(spec.Table, rows); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	var deads []beam.PCollection
	var files beam.PCollection
	if spec.Hash || spec.DirectLimit > 0 {
		rows, structDead, err := toRows(s, spec, rows)
		if err != nil {
			return beam.PCollection{}, beam.PCollection{}, err
		}
		if structDead.IsValid() {
			deads = append(deads, structDead)
		}
		outs, err := beam.TryParDo(s.Scope("RouteByPartition"), &hashRouteFn{Spec: spec}, rows)
		if err != nil {
			return beam.PCollection{}, beam.PCollection{}, err
		}
		deads = append(deads, rewindow(s, rows, outs[2]))
		direct := outs[1]
		packets := beam.GroupByKey(s.Scope("GroupByPartition"), rewindow(s, rows, outs[0]))
		if outs, err = beam.TryParDo(s.Scope("WriteFiles"), &hashWriteFn{Spec: spec}, packets); err != nil {
			return beam.PCollection{}, beam.PCollection{}, err
		}
		// Direct: lifted bundles (DirectLimit) and the rows of unpartitioned tables.
		files = beam.Flatten(s.Scope("DirectAndShuffled"), rewindow(s, rows, direct), outs[0])
	} else {
		// Structs become Rows inside the write DoFn (structWriteFn).
		var fn any = &writeFn{Spec: spec}
		if rows.Type().Type() != rowType {
			if err := checkStructs(spec.Table, rows); err != nil {
				return beam.PCollection{}, beam.PCollection{}, err
			}
			fn = &structWriteFn{Spec: spec}
		}
		outs, err := beam.TryParDo(s.Scope("WriteFiles"), fn, rows)
		if err != nil {
			return beam.PCollection{}, beam.PCollection{}, err
		}
		files = rewindow(s, rows, outs[0])
		deads = append(deads, outs[1])
	}
	if snapshots, err = commitFiles(s, spec, files); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	dead = deads[0]
	if len(deads) > 1 {
		dead = beam.Flatten(s.Scope("DeadLetters"), deads...)
	}
	return snapshots, dead, nil
}

// commitFiles adds the commit step of an append write: files (table -> Part, in
// their windows) become one commit per table and window, oldest window first, and
// the maintenance the spec asks for runs after the commits. It returns the
// PCollection of SnapshotInfo.
func commitFiles(s beam.Scope, spec Spec, files beam.PCollection) (beam.PCollection, error) {
	commits, err := beam.TryParDo(s.Scope("CommitWindowsInOrder"), newCommitFn(spec), orderPanes(s, files))
	if err != nil {
		return beam.PCollection{}, err
	}
	maintain.AfterCommits(s, spec.inlineMaintenance(), commits[0])
	return commits[0], nil
}
