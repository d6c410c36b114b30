package row

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ibg "github.com/apache/iceberg-go"
)

// benchSchema is a typical 10-column fact table.
func benchSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "user_id", Type: ibg.PrimitiveTypes.Int32},
		ibg.NestedField{ID: 3, Name: "amount", Type: ibg.PrimitiveTypes.Float64},
		ibg.NestedField{ID: 4, Name: "price", Type: ibg.DecimalTypeOf(10, 2)},
		ibg.NestedField{ID: 5, Name: "ts", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 6, Name: "day", Type: ibg.PrimitiveTypes.Date},
		ibg.NestedField{ID: 7, Name: "name", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 8, Name: "city", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 9, Name: "flag", Type: ibg.PrimitiveTypes.Bool},
		ibg.NestedField{ID: 10, Name: "score", Type: ibg.PrimitiveTypes.Float32},
	)
}

// benchRecord is the struct form of benchSchema.
type benchRecord struct {
	ID     int64 `iceberg:"id"`
	UserID int32 `iceberg:"user_id"`
	Amount float64
	Price  ibg.Decimal
	TS     time.Time
	Day    time.Time
	Name   string
	City   string
	Flag   bool
	Score  float32
}

var cities = []string{"New York", "Boston", "Chicago", "Seattle", "Austin", "Denver", "Miami", "Portland"}

func benchValues(s *Schema, k int) []any {
	return []any{
		int64(k), int32(k % 50_000), float64(k%10_000) * 1.25,
		ibg.Decimal{Val: decimal128.FromI64(int64(k % 100_000)), Scale: 2},
		ibg.Timestamp(1_700_000_000_000_000 + int64(k)*1_000_003), ibg.Date(19_700 + k/100_000),
		fmt.Sprintf("customer-%07d", k%200_000), cities[k%len(cities)], k%3 == 0, float32(k%1000) / 10,
	}
}

var (
	benchOnce sync.Once
	benchBig  arrow.RecordBatch // 1,000,000 rows
)

func bigBatch(b *testing.B) arrow.RecordBatch {
	b.Helper()
	benchOnce.Do(func() {
		sc := benchSchema()
		bb, err := NewBatchBuilder(sc, memory.NewGoAllocator())
		if err != nil {
			b.Fatal(err)
		}
		defer bb.Release()
		s := bb.RowSchema()
		vals := make([]any, s.Len())
		for k := range 1_000_000 {
			copy(vals, benchValues(s, k))
			if err := bb.AppendValues(vals); err != nil {
				b.Fatal(err)
			}
		}
		benchBig = bb.NewBatch()
	})
	return benchBig
}

func benchRows(b *testing.B, n int) []Row {
	b.Helper()
	s := rowSchemaOf(benchSchema())
	rows := make([]Row, n)
	for k := range rows {
		rows[k] = Of(s, benchValues(s, k))
	}
	return rows
}

// parquetSize writes rows of benchSchema as one snappy Parquet file and returns its size.
func parquetSize(b *testing.B, n int) int {
	b.Helper()
	rec := bigBatch(b).NewSlice(0, int64(n))
	defer rec.Release()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	if err := pqarrow.WriteTable(tbl, &buf, int64(n), props, pqarrow.DefaultWriterProps()); err != nil {
		b.Fatal(err)
	}
	return buf.Len()
}

// BenchmarkCoder encodes and decodes 100,000 rows of 10 columns per iteration.
func BenchmarkCoder(b *testing.B) {
	const n = 100_000
	rows := benchRows(b, n)
	total, body := 0, 0
	for _, r := range rows {
		total += len(mustEncode(b, r))
		bb, err := AppendBody(nil, r)
		if err != nil {
			b.Fatal(err)
		}
		body += len(bb)
	}
	pq := parquetSize(b, n)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range rows {
			enc, err := Encode(r)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(total)/n, "B/row")
	b.ReportMetric(float64(body)/n, "body-B/row")
	b.ReportMetric(float64(pq)/n, "parquet-B/row")
}

// BenchmarkArrowToRow converts 1,000,000 rows of 10 columns per iteration.
func BenchmarkArrowToRow(b *testing.B) {
	rec := bigBatch(b)
	rd, err := NewArrowReader(rec.Schema(), benchSchema())
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]Row, 0, rec.NumRows())
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = rd.AppendRows(rec, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkArrowToStruct converts 1,000,000 rows of 10 columns per iteration.
func BenchmarkArrowToStruct(b *testing.B) {
	rec := bigBatch(b)
	sr, err := NewStructReader(reflect.TypeOf(benchRecord{}), rec.Schema(), benchSchema())
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]benchRecord, 0, rec.NumRows())
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = appendStructs(sr, rec, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkBatchBuilder appends 100,000 rows of 10 columns per iteration.
func BenchmarkBatchBuilder(b *testing.B) {
	const n = 100_000
	rows := benchRows(b, n)
	bb, err := NewBatchBuilder(benchSchema(), memory.NewGoAllocator())
	if err != nil {
		b.Fatal(err)
	}
	defer bb.Release()
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range rows {
			if err := bb.AppendRow(r); err != nil {
				b.Fatal(err)
			}
		}
		bb.NewBatch().Release()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchGen is the struct of the append benchmarks (testing/interop's colbench).
type benchGen struct {
	ID     int64   `iceberg:"id"`
	Qty    int64   `iceberg:"qty"`
	Amount float64 `iceberg:"amount"`
	Name   string  `iceberg:"name"`
	State  string  `iceberg:"state"`
	Flag   bool    `iceberg:"flag"`
}

// BenchmarkBatchBuilderStruct appends 100,000 structs per iteration: direct is
// AppendStruct (fields straight to Arrow, see structPlan), boxed the values as
// StructValues boxes them through AppendValues, as every struct went before.
func BenchmarkBatchBuilderStruct(b *testing.B) {
	const n = 100_000
	sc, err := InferStructSchema(reflect.TypeFor[benchGen]())
	if err != nil {
		b.Fatal(err)
	}
	in := make([]benchGen, n)
	for i := range in {
		in[i] = benchGen{ID: int64(i), Qty: int64(i % 1000), Amount: float64(i%100000) / 100,
			Name: fmt.Sprintf("name-%d", i), State: []string{"CA", "NY", "TX"}[i%3], Flag: i%2 == 0}
	}
	sv, err := NewStructValues(reflect.TypeFor[benchGen](), sc)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"direct", "boxed"} {
		b.Run(mode, func(b *testing.B) {
			bb, err := NewBatchBuilder(sc, memory.NewGoAllocator())
			if err != nil {
				b.Fatal(err)
			}
			defer bb.Release()
			var vals []any
			b.ReportAllocs()
			for b.Loop() {
				for i := range in {
					if mode == "direct" {
						err = bb.AppendStruct(&in[i])
					} else if vals, err = sv.AppendValues(vals[:0], &in[i]); err == nil {
						err = bb.AppendValues(vals)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				bb.NewBatch().Release()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// changeRow is a change row as a CDC pipeline's struct: control columns, a key,
// optional (pointer) columns.
type changeRow struct {
	Op     string   `iceberg:"op"`
	Seq    int64    `iceberg:"seq"`
	ID     int64    `iceberg:"id"`
	Name   *string  `iceberg:"name"`
	State  *string  `iceberg:"state"`
	Amount *float64 `iceberg:"amount"`
}

// BenchmarkStructValues turns 100,000 change structs into Rows (StructValues.Row):
// flat reads the fields without reflection and boxes them into two slabs per row,
// reflect is the reflection path every field took before (sv.flat unset).
func BenchmarkStructValues(b *testing.B) {
	const n = 100_000
	sc, err := InferStructSchema(reflect.TypeFor[changeRow]())
	if err != nil {
		b.Fatal(err)
	}
	in := make([]any, n)
	for i := range in {
		name, state, amount := fmt.Sprintf("name-%d", i), []string{"CA", "NY", "TX"}[i%3], float64(i%100000)/100
		in[i] = changeRow{Op: "U", Seq: int64(i), ID: int64(i * 7), Name: &name, State: &state, Amount: &amount}
	}
	for _, mode := range []string{"flat", "reflect"} {
		b.Run(mode, func(b *testing.B) {
			sv, err := NewStructValues(reflect.TypeFor[changeRow](), sc)
			if err != nil {
				b.Fatal(err)
			}
			if mode == "reflect" {
				sv.flat = nil
			} else if sv.flat == nil {
				b.Fatal("changeRow does not take the flat path")
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, v := range in {
					if _, err := sv.Row(v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
