package iceberg_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TimedInstant has a time.Time field: an instant.
type TimedInstant struct {
	ID int64     `iceberg:"id"`
	TS time.Time `iceberg:"ts"`
}

// TimedMicros has an ibg.Timestamp field: microseconds, with no time zone.
type TimedMicros struct {
	ID int64         `iceberg:"id"`
	TS ibg.Timestamp `iceberg:"ts"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[TimedInstant]())
	beam.RegisterType(reflect.TypeFor[TimedMicros]())
}

// TestWriteTimestampInference: a Row's ibg.Timestamp value and a struct's
// ibg.Timestamp field create a timestamp column (not timestamptz), a struct's
// time.Time field a timestamptz column, and a write to an existing table keeps
// the column's declared type whichever the Go type, with the same microseconds.
func TestWriteTimestampInference(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 30, 0, 123456000, time.UTC)
	us := at.UnixMicro()
	tsSchema := func(tt ibg.Type) *ibg.Schema {
		return ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
			ibg.NestedField{ID: 2, Name: "ts", Type: tt})
	}
	tests := []struct {
		name     string
		existing ibg.Type // nil: the write creates the table
		build    func(s beam.Scope) beam.PCollection
		want     ibg.Type
	}{
		{"row ibg.Timestamp creates timestamp", nil, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []iceberg.Row{iceberg.NewRow([]string{"id", "ts"}, []any{int64(1), ibg.Timestamp(us)})})
		}, ibg.PrimitiveTypes.Timestamp},
		{"row ibg.Timestamp keeps timestamptz", ibg.PrimitiveTypes.TimestampTz, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []iceberg.Row{iceberg.NewRow([]string{"id", "ts"}, []any{int64(1), ibg.Timestamp(us)})})
		}, ibg.PrimitiveTypes.TimestampTz},
		{"typed row timestamptz creates timestamptz", nil, func(s beam.Scope) beam.PCollection {
			rs := iceberg.NewRowSchema([]string{"id", "ts"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.TimestampTz})
			return beam.CreateList(s, []iceberg.Row{iceberg.RowOf(rs, []any{int64(1), ibg.Timestamp(us)})})
		}, ibg.PrimitiveTypes.TimestampTz},
		{"struct ibg.Timestamp creates timestamp", nil, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []TimedMicros{{ID: 1, TS: ibg.Timestamp(us)}})
		}, ibg.PrimitiveTypes.Timestamp},
		{"struct ibg.Timestamp keeps timestamptz", ibg.PrimitiveTypes.TimestampTz, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []TimedMicros{{ID: 1, TS: ibg.Timestamp(us)}})
		}, ibg.PrimitiveTypes.TimestampTz},
		{"struct time.Time creates timestamptz", nil, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []TimedInstant{{ID: 1, TS: at}})
		}, ibg.PrimitiveTypes.TimestampTz},
		{"struct time.Time keeps timestamp", ibg.PrimitiveTypes.Timestamp, func(s beam.Scope) beam.PCollection {
			return beam.CreateList(s, []TimedInstant{{ID: 1, TS: at}})
		}, ibg.PrimitiveTypes.Timestamp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			if tc.existing != nil {
				icebergtest.CreateTable(t, lc.Catalog, "db.times", tsSchema(tc.existing))
			}
			p, s := beam.NewPipelineWithRoot()
			res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.times", CatalogName: lc.Name, CatalogProperties: lc.Props}, tc.build(s))
			if err != nil {
				t.Fatal(err)
			}
			passert.Count(s, res.DeadLetter, "dead letters", 0)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
			tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "times"})
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			f, ok := tbl.Schema().FindFieldByName("ts")
			if !ok || !f.Type.Equals(tc.want) {
				t.Fatalf("column ts is %v, want %s", f.Type, tc.want)
			}
			data := icebergtest.ReadAll(t, tbl, nil, "ts")
			defer data.Release()
			col := data.Column(0).Data().Chunk(0).(*array.Timestamp)
			if data.NumRows() != 1 || col.Value(0) != arrow.Timestamp(us) {
				t.Fatalf("read %d rows, ts %v, want %d µs", data.NumRows(), col.Value(0), us)
			}
		})
	}
}
