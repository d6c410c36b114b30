package write

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/iceberg/write/schema"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// benchSchema is the row schema of the benchmark rows: 5 longs, 3 strings, a double
// and a timestamp.
var benchSchema = func() *row.Schema {
	p := ibg.PrimitiveTypes
	return row.NewSchema([]string{"id", "a", "b", "c", "d", "s1", "s2", "s3", "x", "ts"},
		[]ibg.Type{p.Int64, p.Int64, p.Int64, p.Int64, p.Int64, p.String, p.String, p.String, p.Float64, p.TimestampTz})
}()

// benchRow returns benchmark row i.
func benchRow(i int) row.Row {
	return row.Of(benchSchema, []any{int64(i), int64(i * 2), int64(i % 97), int64(i % 13), int64(-i),
		"s" + strconv.Itoa(i%1000), "constant", "k" + strconv.Itoa(i), float64(i) / 3, ibg.Timestamp(int64(i) * 1000)})
}

// benchRows builds rows [0, n).
func benchRows(n int) []row.Row {
	out := make([]row.Row, n)
	for i := range n {
		out[i] = benchRow(i)
	}
	return out
}

// genRowsFn emits rows [seed*Per, (seed+1)*Per): the benchmark's source, which
// generates rows inside the pipeline so that no source dominates the measurement.
type genRowsFn struct {
	Per int
}

func (f *genRowsFn) ProcessElement(seed int, emit func(row.Row)) {
	for i := seed * f.Per; i < (seed+1)*f.Per; i++ {
		emit(benchRow(i))
	}
}

func init() {
	register.DoFn2x0[int, func(row.Row)](&genRowsFn{})
}

// BenchmarkAppend compares the Beam append on prism with table.WriteRecords plus one
// commit of the same rows. The direct path starts from Rows already in memory and
// includes the Row to Arrow conversion; the pipeline generates the rows from a few
// seeds inside the pipeline (genRowsFn), so its time includes making the rows. The
// direct path's rows are dropped before the pipeline runs, so that neither pays for
// the garbage collector scanning the other's rows. Run with -benchtime=1x.
func BenchmarkAppend(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	var direct, pipeline time.Duration
	for i := range b.N {
		rows := benchRows(n)
		goruntime.GC()
		lc := icebergtest.NewLocalCatalog(b)
		sc, err := row.InferSchema(rows[0])
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tbl, _, err := schema.EnsureTable(ctx, lc.Catalog, table.Identifier{"db", "direct"}, sc, schema.CreateOptions{})
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
		fw, err := datafile.NewWriter(ctx, tbl, bb.ArrowSchema(), datafile.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, rec := range batches {
			fw.Write(rec)
		}
		files, err := fw.Close()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := commit.Commit(ctx, lc.Catalog, tbl.Identifier(), commit.CommitRequest{SinkID: "d", WindowEndMs: 1, DataFiles: files}); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(start)
		rows, batches = nil, nil
		goruntime.GC()

		spec := Spec{Table: "db.beam", CatalogName: lc.Name, SinkID: fmt.Sprint("bench", i)}
		spec.CatalogProps = lc.Props
		p, s := beam.NewPipelineWithRoot()
		const seeds = 4
		seedList := make([]int, seeds)
		for j := range seedList {
			seedList[j] = j
		}
		gen := beam.ParDo(s, &genRowsFn{Per: n / seeds}, beam.CreateList(s, seedList))
		snaps, _, err := Append(s, spec, gen)
		if err != nil {
			b.Fatal(err)
		}
		_ = snaps
		start = time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		pipeline += time.Since(start)
		if got := writetest.CountRows(b, lc.Catalog, table.Identifier{"db", "beam"}); got != n {
			b.Fatalf("pipeline wrote %d rows", got)
		}
	}
	b.ReportMetric(float64(n*b.N)/direct.Seconds(), "direct_rows/s")
	b.ReportMetric(float64(n*b.N)/pipeline.Seconds(), "beam_rows/s")
	b.ReportMetric(pipeline.Seconds()/direct.Seconds(), "beam/direct")
}

// BenchmarkAppendPeakMemory appends 5,000,000 generated rows on prism and reports the
// peak heap in use while the pipeline runs, sampled every 10 ms: it must stay bounded by
// batch and file sizes, not grow with the input (compare with -rows). Run with
// -benchtime=1x.
func BenchmarkAppendPeakMemory(b *testing.B) {
	const n = 5_000_000
	lc := icebergtest.NewLocalCatalog(b)
	for i := 0; i < b.N; i++ {
		spec := Spec{Table: "db.big", CatalogName: lc.Name, SinkID: fmt.Sprint("peak", i)}
		spec.CatalogProps = lc.Props
		p, s := beam.NewPipelineWithRoot()
		seeds := make([]int, 50)
		for j := range seeds {
			seeds[j] = j
		}
		gen := beam.ParDo(s, &genRowsFn{Per: n / len(seeds)}, beam.CreateList(s, seeds))
		if _, _, err := Append(s, spec, gen); err != nil {
			b.Fatal(err)
		}
		goruntime.GC()
		var before goruntime.MemStats
		goruntime.ReadMemStats(&before)
		done := make(chan struct{})
		peakc := make(chan uint64)
		go func() {
			var peak uint64
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				var ms goruntime.MemStats
				goruntime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				select {
				case <-done:
					peakc <- peak
					return
				case <-t.C:
				}
			}
		}()
		start := time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		close(done)
		peak := <-peakc
		if got := writetest.CountRows(b, lc.Catalog, table.Identifier{"db", "big"}); got != int64(n*(i+1)) {
			b.Fatalf("pipeline wrote %d rows in all", got)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(before.HeapInuse)/(1<<20), "base-heap-MiB")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "rows/s")
	}
}

// BenchmarkAppendDistribution appends the same 200,000 generated rows on prism with
// the per-bundle writers (distribution_mode none, the baseline) and with each other
// way to distribute them, in turn within every iteration: the hash distribution,
// hash with auto_sharding, direct_write_byte_limit with a limit the benchmark's
// bundles exceed (they overflow into the shuffle) and one they stay within (written
// directly); the same on a table partitioned into 13 partitions for none and hash.
// It reports each variant's time over none's, measured in the same process, and the
// data files each wrote. Run with -benchtime=1x (or more for steadier ratios).
func BenchmarkAppendDistribution(b *testing.B) {
	const n = 200_000
	type variant struct {
		name string
		part bool // table partitioned by identity(c): 13 partitions
		set  func(*Spec)
	}
	variants := []variant{
		{"none", false, func(*Spec) {}},
		{"hash", false, func(s *Spec) { s.Hash = true }},
		{"auto_sharding", false, func(s *Spec) { s.Hash, s.AutoShard = true, true }},
		{"direct_overflow", false, func(s *Spec) { s.DirectLimit = 1 << 20 }},
		{"direct", false, func(s *Spec) { s.DirectLimit = 1 << 30 }},
		{"none_part", true, func(*Spec) {}},
		{"hash_part", true, func(s *Spec) { s.Hash = true }},
	}
	took := make([]time.Duration, len(variants))
	files := make([]int, len(variants))
	b.ReportAllocs()
	for i := range b.N {
		for v, vr := range variants {
			lc := icebergtest.NewLocalCatalog(b)
			spec := Spec{Table: "db.dist", CatalogName: lc.Name, SinkID: fmt.Sprint("dist", i)}
			if vr.part {
				spec.PartitionFields = []string{"c"}
			}
			vr.set(&spec)
			spec.CatalogProps = lc.Props
			p, s := beam.NewPipelineWithRoot()
			seedList := []int{0, 1, 2, 3}
			gen := beam.ParDo(s, &genRowsFn{Per: n / len(seedList)}, beam.CreateList(s, seedList))
			if _, _, err := Append(s, spec, gen); err != nil {
				b.Fatal(err)
			}
			goruntime.GC()
			start := time.Now()
			if err := ptest.Run(p); err != nil {
				b.Fatal(err)
			}
			took[v] += time.Since(start)
			ident := table.Identifier{"db", "dist"}
			if got := writetest.CountRows(b, lc.Catalog, ident); got != n {
				b.Fatalf("%s: wrote %d rows, want %d", vr.name, got, n)
			}
			tbl, err := lc.Catalog.LoadTable(context.Background(), ident)
			if err != nil {
				b.Fatal(err)
			}
			dfs, err := icebergtest.DataFilesContext(context.Background(), tbl)
			if err != nil {
				b.Fatal(err)
			}
			files[v] = len(dfs)
		}
	}
	b.ReportMetric(float64(n*b.N)/took[0].Seconds(), "none_rows/s")
	for v, vr := range variants {
		if v > 0 {
			base, baseName := took[0], "none"
			if vr.part && v != 5 {
				base, baseName = took[5], "none_part"
			}
			b.ReportMetric(took[v].Seconds()/base.Seconds(), vr.name+"/"+baseName)
		}
		b.ReportMetric(float64(files[v]), vr.name+"_files")
	}
}
