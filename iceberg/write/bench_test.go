package write

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// benchRows builds n rows of 10 columns (5 longs, 3 strings, a double, a timestamp).
func benchRows(n int) []row.Row {
	names := []string{"id", "a", "b", "c", "d", "s1", "s2", "s3", "x", "ts"}
	p := ibg.PrimitiveTypes
	sc := row.NewSchema(names, []ibg.Type{p.Int64, p.Int64, p.Int64, p.Int64, p.Int64, p.String, p.String, p.String, p.Float64, p.TimestampTz})
	out := make([]row.Row, n)
	for i := range n {
		out[i] = row.Of(sc, []any{int64(i), int64(i * 2), int64(i % 97), int64(i % 13), int64(-i),
			fmt.Sprintf("s%d", i%1000), "constant", fmt.Sprintf("k%d", i), float64(i) / 3, ibg.Timestamp(int64(i) * 1000)})
	}
	return out
}

// BenchmarkAppend compares the Beam append on prism with table.WriteRecords plus one
// commit of the same rows (already in memory as Rows; the direct path includes the
// Row to Arrow conversion). Run with -benchtime=1x; ICEBEAM_BENCH_ROWS overrides n.
func BenchmarkAppend(b *testing.B) {
	const n = 1_000_000
	rows := benchRows(n)
	ctx := context.Background()
	var direct, pipeline time.Duration
	for i := range b.N {
		lc := icebergtest.NewLocalCatalog(b)
		sc, err := row.InferSchema(rows[0])
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tbl, _, err := EnsureTable(ctx, lc.Catalog, table.Identifier{"db", "direct"}, sc, CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		bb, err := row.NewBatchBuilder(tbl.Schema(), memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		var batches []arrow.RecordBatch
		for j, r := range rows {
			if err := bb.AppendRow(r); err != nil {
				b.Fatal(err)
			}
			if (j+1)%batchRows == 0 {
				batches = append(batches, bb.NewBatch())
			}
		}
		batches = append(batches, bb.NewBatch())
		files, err := WriteDataFiles(ctx, tbl, bb.ArrowSchema(), batches, FileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Commit(ctx, lc.Catalog, tbl.Identifier(), CommitRequest{SinkID: "d", WindowEndMs: 1, DataFiles: files}); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(start)

		spec := Spec{Table: "db.beam", CatalogName: lc.Name, SinkID: fmt.Sprint("bench", i)}
		spec.CatalogProps = mustJSON(b, lc.Props)
		p, s := beam.NewPipelineWithRoot()
		snaps, _, err := Append(s, spec, beam.CreateList(s, rows))
		if err != nil {
			b.Fatal(err)
		}
		_ = snaps
		start = time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		pipeline += time.Since(start)
		if got := countRows(b, lc.Catalog, table.Identifier{"db", "beam"}); got != n {
			b.Fatalf("pipeline wrote %d rows", got)
		}
	}
	b.ReportMetric(float64(n*b.N)/direct.Seconds(), "direct_rows/s")
	b.ReportMetric(float64(n*b.N)/pipeline.Seconds(), "beam_rows/s")
	b.ReportMetric(pipeline.Seconds()/direct.Seconds(), "beam/direct")
}
