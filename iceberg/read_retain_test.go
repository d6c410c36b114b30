package iceberg_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func init() {
	register.DoFn2x1[iceberg.RecordBatch, func(string), error](&keepBatchesFn{})
	register.DoFn2x1[row.Row, func(string), error](&keepRowsFn{})
}

// keepBatchesFn keeps every batch of its bundle and reads them only when the bundle
// ends, emitting "id=name" for each row: a batch the read released or reused after
// emitting it would show up as wrong or missing values.
type keepBatchesFn struct{ kept []iceberg.RecordBatch }

func (fn *keepBatchesFn) StartBundle(func(string)) { fn.kept = nil }
func (fn *keepBatchesFn) ProcessElement(b iceberg.RecordBatch, _ func(string)) error {
	fn.kept = append(fn.kept, b)
	return nil
}
func (fn *keepBatchesFn) FinishBundle(emit func(string)) error {
	for _, b := range fn.kept {
		ids, ok1 := b.Column(0).(*array.Int64)
		names, ok2 := b.Column(1).(*array.String)
		if !ok1 || !ok2 {
			return fmt.Errorf("batch columns %v", b.Schema())
		}
		for i := 0; i < int(b.NumRows()); i++ {
			emit(fmt.Sprintf("%d=%s", ids.Value(i), names.Value(i)))
		}
	}
	return nil
}

// keepRowsFn is keepBatchesFn for Read's rows (views of the batch read).
type keepRowsFn struct{ kept []row.Row }

func (fn *keepRowsFn) StartBundle(func(string)) { fn.kept = nil }
func (fn *keepRowsFn) ProcessElement(r row.Row, _ func(string)) error {
	fn.kept = append(fn.kept, r)
	return nil
}
func (fn *keepRowsFn) FinishBundle(emit func(string)) error {
	for _, r := range fn.kept {
		id, _ := r.Get("id")
		name, _ := r.Get("name")
		emit(fmt.Sprintf("%v=%v", id, name))
	}
	return nil
}

// TestReadKeepsBatchesAlive reads a table of many small record batches (three files,
// read.parquet.batch-size 64) with ReadBatches and Read into DoFns fused with the read
// that look at what they were given only when the bundle ends. The read passes its
// batches by reference, so this fails if a batch (or a row viewing it) is released,
// freed or overwritten once ProcessElement moves on.
func TestReadKeepsBatchesAlive(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	p := ibg.PrimitiveTypes
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: p.String, Required: true})
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.kept", sc,
		icebergtest.WithProperties(map[string]string{"read.parquet.batch-size": "64"}))
	var want []string
	for f := 0; f < 3; f++ {
		var rows [][]any
		for i := f * 1000; i < (f+1)*1000; i++ {
			name := fmt.Sprintf("name-%d-%s", i, string(rune('a'+i%26)))
			rows = append(rows, []any{int64(i), name})
			want = append(want, fmt.Sprintf("%d=%s", i, name))
		}
		rec := icebergtest.Records(t, sc, rows)
		tbl = icebergtest.AppendRecords(t, tbl, rec)
		rec.Release()
	}
	cfg := iceberg.ReadConfig{Table: "db.kept", CatalogName: cat.Name, CatalogProperties: cat.Props}

	pl, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, &keepBatchesFn{}, iceberg.ReadBatches(s.Scope("batches"), cfg)), want)
	passert.EqualsList(s, beam.ParDo(s, &keepRowsFn{}, iceberg.Read(s.Scope("rows"), cfg)), want)
	ptest.RunAndValidate(t, pl)
}
