// Command colbench is the icebeam side of bench_columnar.py (see
// testing/interop/README.md, "Columnar bench"): in one process it reads a table
// with iceberg-go's own scan (Scan.ToArrowRecords, the raw baseline), with
// iceberg.Read (Row output), with iceberg.ReadBatches, with a filtered and
// projected iceberg.Read, and appends generated rows into a new table with
// iceberg.Write; then it prints the seconds and row counts of each as one JSON object.
// Pipelines run on prism; each time is the pipeline run alone (built beforehand).
//
// The table lives in the SQLite SQL catalog "local" of --catalog_dir (catalog.db,
// warehouse/), as icebergtest.NewLocalCatalogAt opens it.
//
//	colbench --catalog_dir DIR --table bench.t --filter "id >= 100000 AND id < 152000" \
//	    --keep id,amount --append_table bench.ib_append_1 --append_rows 1000000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"reflect"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

var (
	catalogDir  = flag.String("catalog_dir", "", "folder of the SQLite catalog (catalog.db) and its warehouse/ (required)")
	tableName   = flag.String("table", "", "table to read, e.g. bench.t (required)")
	filter      = flag.String("filter", "", "filter of the filtered read")
	keep        = flag.String("keep", "", "comma-separated columns of the filtered read")
	appendTable = flag.String("append_table", "", "new table the append writes (none: no append)")
	appendRows  = flag.Int("append_rows", 1_000_000, "rows the append writes")
	ops         = flag.String("ops", "raw,read,batches,filtered,append,append_batches", "what to run, in order")
	cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
)

var (
	rowsSeen  = beam.NewCounter("colbench", "rows")
	snapshots = beam.NewCounter("colbench", "snapshots")
	dead      = beam.NewCounter("colbench", "dead_letters")
)

// Gen is one generated row of the append: the columns of bench_columnar.py's
// table, with the same values Spark's INSERT computes from id.
type Gen struct {
	ID     int64   `iceberg:"id"`
	Qty    int64   `iceberg:"qty"`
	Amount float64 `iceberg:"amount"`
	Name   string  `iceberg:"name"`
	State  string  `iceberg:"state"`
	Flag   bool    `iceberg:"flag"`
}

// States are the state values, indexed by id % 16 (the same list as the script's).
var States = []string{"CA", "NY", "TX", "WA", "OR", "NV", "AZ", "CO", "UT", "FL", "GA", "IL", "MA", "NJ", "PA", "OH"}

func init() {
	beam.RegisterType(reflect.TypeOf(Gen{}))
	register.DoFn2x0[iceberg.Row, func(int64)](&countRowsFn{})
	register.DoFn2x0[iceberg.RecordBatch, func(int64)](&countBatchesFn{})
	register.Function2x0(recordRows)
	register.DoFn2x0[int64, func(Gen)](&genFn{})
	register.DoFn2x0[int64, func(iceberg.RecordBatch)](&genBatchFn{})
	register.Emitter1[iceberg.RecordBatch]()
	register.Emitter1[Gen]()
	register.Function2x0(countSnapshot)
	register.Function2x0(countDead)
}

// countRowsFn counts the rows of a bundle and emits the count when the bundle ends;
// countAll adds the counts up into the rows counter.
type countRowsFn struct{ n int64 }

func (fn *countRowsFn) StartBundle(func(int64))                     { fn.n = 0 }
func (fn *countRowsFn) ProcessElement(_ iceberg.Row, _ func(int64)) { fn.n++ }
func (fn *countRowsFn) FinishBundle(emit func(int64))               { emit(fn.n) }

// countBatchesFn is countRowsFn for record batches.
type countBatchesFn struct{ n int64 }

func (fn *countBatchesFn) StartBundle(func(int64)) { fn.n = 0 }
func (fn *countBatchesFn) ProcessElement(b iceberg.RecordBatch, _ func(int64)) {
	fn.n += b.NumRows()
}
func (fn *countBatchesFn) FinishBundle(emit func(int64)) { emit(fn.n) }

func recordRows(ctx context.Context, n int64) { rowsSeen.Inc(ctx, n) }

// countAll adds the per-bundle counts into the rows counter. The counts cross a
// shuffle (stats.Sum), as a read's output does in a real pipeline: prism spins a core
// for the whole bundle of a stage without consumed outputs (worker.B closes DataWait
// at once and stage.Execute's select loop takes the closed channel again and again),
// which on two cores took about half the machine from the read it measured.
func countAll(s beam.Scope, counts beam.PCollection) {
	beam.ParDo0(s, recordRows, stats.Sum(s, counts))
}

// genFn emits the rows with ids part*Per .. (part+1)*Per-1 for each part.
type genFn struct{ Per int64 }

func (fn *genFn) ProcessElement(part int64, emit func(Gen)) {
	for id := part * fn.Per; id < (part+1)*fn.Per; id++ {
		emit(Gen{ID: id, Qty: id % 1000, Amount: float64(id%100000) / 100, Name: fmt.Sprintf("name-%d", id),
			State: States[id%16], Flag: id%2 == 0})
	}
}

// genBatchFn emits the rows genFn emits as Arrow record batches of 8192 rows.
type genBatchFn struct{ Per int64 }

func (fn *genBatchFn) ProcessElement(part int64, emit func(iceberg.RecordBatch)) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64}, {Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "state", Type: arrow.BinaryTypes.String}, {Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	end := (part + 1) * fn.Per
	for lo := part * fn.Per; lo < end; lo += 8192 {
		for id := lo; id < min(lo+8192, end); id++ {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Int64Builder).Append(id % 1000)
			b.Field(2).(*array.Float64Builder).Append(float64(id%100000) / 100)
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", id))
			b.Field(4).(*array.StringBuilder).Append(States[id%16])
			b.Field(5).(*array.BooleanBuilder).Append(id%2 == 0)
		}
		emit(iceberg.RecordBatch{RecordBatch: b.NewRecordBatch()})
	}
}

func countSnapshot(ctx context.Context, si iceberg.SnapshotInfo) { snapshots.Inc(ctx, 1) }

func countDead(ctx context.Context, d iceberg.DeadLetter) {
	dead.Inc(ctx, 1)
	log.Printf("colbench: dead letter: %s: %s", d.Table, d.Reason)
}

// Op is the result of one measured operation.
type Op struct {
	Seconds float64 `json:"s"`
	Rows    int64   `json:"rows"`
}

func main() {
	flag.Parse()
	beam.Init()
	if *catalogDir == "" || *tableName == "" {
		log.Fatal("colbench: --catalog_dir and --table are required")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	out, err := run(context.Background())
	pprof.StopCPUProfile()
	if err != nil {
		log.Fatalf("colbench: %v", err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) (map[string]Op, error) {
	cat, err := icebergtest.NewLocalCatalogAt(*catalogDir)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	rcfg := iceberg.ReadConfig{Table: *tableName, CatalogName: cat.Name, CatalogProperties: cat.Props}
	out := map[string]Op{}
	for _, op := range strings.Split(*ops, ",") {
		var res Op
		switch op {
		case "raw":
			res, err = raw(ctx, cat)
		case "read":
			res, err = pipeline(ctx, func(s beam.Scope) error {
				rows, err := iceberg.TryRead(s, rcfg)
				countAll(s, beam.ParDo(s, &countRowsFn{}, rows))
				return err
			})
		case "batches":
			res, err = pipeline(ctx, func(s beam.Scope) error {
				bs, err := iceberg.TryReadBatches(s, rcfg)
				countAll(s, beam.ParDo(s, &countBatchesFn{}, bs))
				return err
			})
		case "filtered":
			f := rcfg.With(iceberg.WithFilter(*filter))
			if *keep != "" {
				f = f.With(iceberg.WithKeep(strings.Split(*keep, ",")...))
			}
			res, err = pipeline(ctx, func(s beam.Scope) error {
				rows, err := iceberg.TryRead(s, f)
				countAll(s, beam.ParDo(s, &countRowsFn{}, rows))
				return err
			})
		case "append", "append_batches":
			if *appendTable == "" {
				continue
			}
			res, err = appendGen(ctx, cat, op == "append_batches")
		default:
			err = fmt.Errorf("unknown op %q", op)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out[op] = res
	}
	return out, nil
}

// raw reads the whole table with iceberg-go's Scan.ToArrowRecords.
func raw(ctx context.Context, cat *icebergtest.LocalCatalog) (Op, error) {
	start := time.Now()
	tbl, err := cat.Catalog.LoadTable(ctx, table.Identifier(strings.Split(*tableName, ".")))
	if err != nil {
		return Op{}, err
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return Op{}, err
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			return Op{}, err
		}
		n += rec.NumRows()
		rec.Release()
	}
	return Op{Seconds: time.Since(start).Seconds(), Rows: n}, nil
}

// pipeline builds a pipeline with build, runs it on prism and returns the run's time
// and the rows the colbench counter saw.
func pipeline(ctx context.Context, build func(beam.Scope) error) (Op, error) {
	p, s := beam.NewPipelineWithRoot()
	if err := build(s); err != nil {
		return Op{}, err
	}
	start := time.Now()
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return Op{}, err
	}
	took := time.Since(start).Seconds()
	return Op{Seconds: took, Rows: counter(pr, "rows")}, nil
}

func counter(pr beam.PipelineResult, name string) int64 {
	var n int64
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "colbench" && c.Key.Name == name {
			n += c.Result()
		}
	}
	return n
}

// appendGen appends --append_rows generated rows into a new table (created by the
// write, format version 3) in 4 generator parts: --append_table with Write of Gen
// structs, or --append_table + "_batches" with WriteBatches of Arrow batches.
func appendGen(ctx context.Context, cat *icebergtest.LocalCatalog, batches bool) (Op, error) {
	const parts = 4
	wcfg := iceberg.WriteConfig{Table: *appendTable, CatalogName: cat.Name, CatalogProperties: cat.Props,
		TableProperties: map[string]string{"format-version": "3"}}
	p, s := beam.NewPipelineWithRoot()
	seeds := beam.CreateList(s, []int64{0, 1, 2, 3})
	var res iceberg.WriteResult
	var err error
	if batches {
		wcfg.Table += "_batches"
		res, err = iceberg.TryWriteBatches(s, wcfg, beam.ParDo(s, &genBatchFn{Per: int64(*appendRows / parts)}, seeds))
	} else {
		res, err = iceberg.TryWrite(s, wcfg, beam.ParDo(s, &genFn{Per: int64(*appendRows / parts)}, seeds))
	}
	if err != nil {
		return Op{}, err
	}
	beam.ParDo0(s, countSnapshot, res.Snapshots)
	beam.ParDo0(s, countDead, res.DeadLetter)
	start := time.Now()
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return Op{}, err
	}
	took := time.Since(start).Seconds()
	if n := counter(pr, "dead_letters"); n != 0 {
		return Op{}, fmt.Errorf("%d dead letters", n)
	}
	return Op{Seconds: took, Rows: int64(*appendRows / parts * parts)}, nil
}
