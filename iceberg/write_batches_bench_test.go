package iceberg_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func init() {
	register.DoFn2x0[int, func(iceberg.Row)](&genBenchRowsFn{})
	register.DoFn2x0[int, func(iceberg.RecordBatch)](&genBenchBatchesFn{})
}

// benchWriteSchema is the schema of the write benchmark's rows: 3 longs, 2 strings,
// a double and a timestamptz.
var benchWriteSchema = func() *iceberg.RowSchema {
	p := ibg.PrimitiveTypes
	return iceberg.NewRowSchema([]string{"id", "a", "b", "s1", "s2", "x", "ts"},
		[]ibg.Type{p.Int64, p.Int64, p.Int64, p.String, p.String, p.Float64, p.TimestampTz})
}()

// genBenchRowsFn emits rows [seed*Per, (seed+1)*Per) as Rows.
type genBenchRowsFn struct{ Per int }

func (f *genBenchRowsFn) ProcessElement(seed int, emit func(iceberg.Row)) {
	for i := seed * f.Per; i < (seed+1)*f.Per; i++ {
		emit(iceberg.RowOf(benchWriteSchema, []any{int64(i), int64(i * 2), int64(i % 97),
			"s" + strconv.Itoa(i%1000), "k" + strconv.Itoa(i), float64(i) / 3, ibg.Timestamp(int64(i) * 1000)}))
	}
}

// genBenchBatchesFn emits the same rows as genBenchRowsFn, as record batches of
// 8192 rows.
type genBenchBatchesFn struct{ Per int }

func (f *genBenchBatchesFn) ProcessElement(seed int, emit func(iceberg.RecordBatch)) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s1", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "s2", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	n := 0
	for i := seed * f.Per; i < (seed+1)*f.Per; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Int64Builder).Append(int64(i * 2))
		bld.Field(2).(*array.Int64Builder).Append(int64(i % 97))
		bld.Field(3).(*array.StringBuilder).Append("s" + strconv.Itoa(i%1000))
		bld.Field(4).(*array.StringBuilder).Append("k" + strconv.Itoa(i))
		bld.Field(5).(*array.Float64Builder).Append(float64(i) / 3)
		bld.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1000))
		if n++; n == 8192 {
			emit(iceberg.RecordBatch{RecordBatch: bld.NewRecordBatch()})
			n = 0
		}
	}
	if n > 0 {
		emit(iceberg.RecordBatch{RecordBatch: bld.NewRecordBatch()})
	}
}

// BenchmarkWriteBatches appends the same 1,000,000 generated rows on prism with Write
// (as Rows) and with WriteBatches (as Arrow record batches of 8192 rows) into new
// tables, in turn within every iteration, and reports both throughputs and their
// ratio. Each source generates its rows inside the pipeline. Run with -benchtime=1x
// (or more for steadier ratios).
func BenchmarkWriteBatches(b *testing.B) {
	const n, seeds = 1_000_000, 4
	seedList := make([]int, seeds)
	for i := range seedList {
		seedList[i] = i
	}
	var rowsTook, batchesTook time.Duration
	b.ReportAllocs()
	for i := range b.N {
		for _, batches := range []bool{false, true} {
			lc := icebergtest.NewLocalCatalog(b)
			cfg := iceberg.WriteConfig{Table: "db.w", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: fmt.Sprint("w", i)}
			p, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, seedList)
			if batches {
				iceberg.WriteBatches(s, cfg, beam.ParDo(s, &genBenchBatchesFn{Per: n / seeds}, in))
			} else {
				iceberg.Write(s, cfg, beam.ParDo(s, &genBenchRowsFn{Per: n / seeds}, in))
			}
			start := time.Now()
			if err := ptest.Run(p); err != nil {
				b.Fatal(err)
			}
			if batches {
				batchesTook += time.Since(start)
			} else {
				rowsTook += time.Since(start)
			}
			tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "w"})
			if err != nil {
				b.Fatal(err)
			}
			if got := tbl.CurrentSnapshot().Summary.Properties["total-records"]; got != strconv.Itoa(n) {
				b.Fatalf("batches=%v: table has %s rows, want %d", batches, got, n)
			}
		}
	}
	perSec := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() }
	b.ReportMetric(perSec(rowsTook), "write-rows/s")
	b.ReportMetric(perSec(batchesTook), "writebatches-rows/s")
	b.ReportMetric(rowsTook.Seconds()/batchesTook.Seconds(), "writebatches/write")
}
