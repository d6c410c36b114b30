package iceberg_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// Order is the row type of the examples.
type Order struct {
	OrderID int64   `iceberg:"order_id"`
	State   string  `iceberg:"state"`
	Amount  float64 `iceberg:"amount"`
}

// OrderChange is a Debezium-style change of an order: op is c, u or d, lsn orders
// the changes.
type OrderChange struct {
	OrderID int64   `iceberg:"order_id"`
	State   string  `iceberg:"state"`
	Amount  float64 `iceberg:"amount"`
	Op      string  `iceberg:"op"`
	LSN     int64   `iceberg:"lsn"`
}

// OrderEvent is a Debezium change event of an order, unflattened: before and after
// are the row images (nil when null), op is r, c, u or d, source.lsn orders the
// changes. The zero OrderEvent is a tombstone.
type OrderEvent struct {
	Before *Order       `iceberg:"before"`
	After  *Order       `iceberg:"after"`
	Op     *string      `iceberg:"op"`
	Source *OrderSource `iceberg:"source"`
}

// OrderSource is the source block of an OrderEvent.
type OrderSource struct {
	LSN int64 `iceberg:"lsn"`
}

func init() {
	register.Function1x0(printReport)
	register.Function1x0(sumAmounts)
	beam.RegisterType(reflect.TypeFor[Order]())
	beam.RegisterType(reflect.TypeFor[OrderChange]())
	beam.RegisterType(reflect.TypeFor[OrderEvent]())
	beam.RegisterType(reflect.TypeFor[OrderSource]())
}

// exampleCatalog opens an embedded SQLite catalog in a new temporary folder; close
// removes it.
func exampleCatalog() (lc *icebergtest.LocalCatalog, close func()) {
	dir, err := os.MkdirTemp("", "icebeam-example")
	if err != nil {
		log.Fatal(err)
	}
	lc, err = icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		log.Fatal(err)
	}
	return lc, func() { lc.Close(); os.RemoveAll(dir) }
}

// run runs p on prism (the SDK's embedded runner).
func run(p *beam.Pipeline) {
	if err := ptest.Run(p); err != nil {
		log.Fatal(err)
	}
}

// writeOrders appends orders to db.orders of lc.
func writeOrders(lc *icebergtest.LocalCatalog, orders ...Order) {
	p, s := beam.NewPipelineWithRoot()
	iceberg.Write(s, iceberg.WriteConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props},
		beam.CreateList(s, orders))
	run(p)
}

// printRows reads db.orders of lc (all columns, deletes applied) and prints its rows
// in order.
func printRows(lc *icebergtest.LocalCatalog) {
	p, s := beam.NewPipelineWithRoot()
	rows := iceberg.Read(s, iceberg.ReadConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props})
	printCollected(p, s, rows)
}

// printCollected runs p, collecting the Rows of col, and prints them sorted: whole,
// or the values of cols.
func printCollected(p *beam.Pipeline, s beam.Scope, col beam.PCollection, cols ...string) {
	key := fmt.Sprintf("example-%p", p)
	beam.ParDo0(s, &recordFn{Key: key}, col)
	run(p)
	var out []string
	for _, a := range arrivals(key) {
		if len(cols) == 0 {
			out = append(out, a.row.String())
			continue
		}
		var vals []string
		for _, c := range cols {
			v, _ := a.row.Get(c)
			vals = append(vals, fmt.Sprint(v))
		}
		out = append(out, strings.Join(vals, " "))
	}
	slices.Sort(out)
	fmt.Println(strings.Join(out, "\n"))
}

// ExampleWrite appends structs to a table, which the write creates from the struct
// type (format-version 3), and reads it back.
func ExampleWrite() {
	lc, done := exampleCatalog()
	defer done()

	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80}, Order{3, "NY", 45.5})
	printRows(lc)
	// Output:
	// {order_id: 1, state: "NY", amount: 120}
	// {order_id: 2, state: "CA", amount: 80}
	// {order_id: 3, state: "NY", amount: 45.5}
}

// ExampleRead reads with a SQL filter and a projection: only the kept columns are
// emitted, as Rows.
func ExampleRead() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80}, Order{3, "NY", 45.5}, Order{4, "NY", 300})

	p, s := beam.NewPipelineWithRoot()
	rows := iceberg.Read(s, iceberg.ReadConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Filter: "state = 'NY' AND amount > 100", Keep: []string{"order_id", "amount"}})
	printCollected(p, s, rows)
	// Output:
	// {order_id: 1, amount: 120}
	// {order_id: 4, amount: 300}
}

// ExampleWrite_mergeOnRead applies a Debezium-style change stream, configured as the
// managed-style map Dataflow's managed Iceberg I/O takes: the table keeps the latest
// version of each order, and older versions are deleted with deletion vectors. Debezium
// updates carry only the after-image, so "u" maps to UPDATE_AFTER with upsert: true
// (without it the old row would stay).
func ExampleWrite_mergeOnRead() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80})

	cfg, err := iceberg.ParseWriteConfig(map[string]any{
		"table": "db.orders", "catalog_name": lc.Name, "catalog_properties": lc.Props,
		"mode": "merge-on-read", "change_type_column": "op",
		"change_type_map":        map[string]any{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"},
		"upsert":                 true,
		"equality_columns":       []any{"order_id"},
		"sequence_number_column": "lsn",
		"sink_id":                "orders-cdc",
	})
	if err != nil {
		log.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	changes := beam.CreateList(s, []OrderChange{
		{OrderID: 1, State: "NY", Amount: 150, Op: "u", LSN: 10}, // update order 1
		{OrderID: 2, Op: "d", LSN: 11},                           // delete order 2
		{OrderID: 3, State: "TX", Amount: 60, Op: "c", LSN: 12},  // new order 3
		{OrderID: 3, State: "TX", Amount: 65, Op: "u", LSN: 13},  // and its update
	})
	iceberg.Write(s, cfg, changes)
	run(p)
	printRows(lc)
	// Output:
	// {order_id: 1, state: "NY", amount: 150}
	// {order_id: 3, state: "TX", amount: 65}
}

// ExampleWrite_debezium applies Debezium change events as the connector sends them
// (envelopes, not flattened) by configuration alone, here as YAML: the row image is
// after, or before for a delete; op gives the change type and source.lsn the order;
// the tombstone after the delete is skipped.
func ExampleWrite_debezium() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80})

	must := func(b []byte, err error) []byte { // lc.Props as a JSON object (JSON is YAML)
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	cfg, err := iceberg.ParseWriteConfigYAML([]byte(fmt.Sprintf(`
table: db.orders
catalog_name: %s
catalog_properties: %s
mode: merge-on-read
only: after
before_field: before
change_type_column: op
change_type_map: {r: INSERT, c: INSERT, u: UPDATE_AFTER, d: DELETE}
upsert: true
sequence_number_column: source.lsn
equality_columns: [order_id]
`, lc.Name, must(json.Marshal(lc.Props)))))
	if err != nil {
		log.Fatal(err)
	}
	op := func(s string) *string { return &s }
	at := func(lsn int64) *OrderSource { return &OrderSource{LSN: lsn} }
	p, s := beam.NewPipelineWithRoot()
	events := beam.CreateList(s, []OrderEvent{
		{Before: &Order{1, "NY", 120}, After: &Order{1, "NY", 150}, Op: op("u"), Source: at(10)},
		{Before: &Order{2, "CA", 80}, Op: op("d"), Source: at(11)},
		{}, // the tombstone of the delete
		{After: &Order{3, "TX", 60}, Op: op("c"), Source: at(12)},
	})
	iceberg.Write(s, cfg, events)
	run(p)
	printRows(lc)
	// Output:
	// {order_id: 1, state: "NY", amount: 150}
	// {order_id: 3, state: "TX", amount: 60}
}

// ExampleReadChanges reads a table's changelog: every change since the table was
// created, with its change type (here: two appends, then an overwrite by a
// merge-on-read write that deletes order 2).
func ExampleReadChanges() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80})
	p, s := beam.NewPipelineWithRoot()
	iceberg.Write(s, iceberg.WriteConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", EqualityColumns: []string{"order_id"},
		SequenceNumberColumn: "lsn", ChangeTypeMap: map[string]string{"d": iceberg.ChangeDelete}},
		beam.CreateList(s, []OrderChange{{OrderID: 2, Op: "d", LSN: 1}}))
	run(p)

	p, s = beam.NewPipelineWithRoot()
	changed := iceberg.ReadChanges(s, iceberg.ChangesConfig{Table: "db.orders", CatalogName: lc.Name,
		CatalogProperties: lc.Props, Keep: []string{"order_id"}})
	printCollected(p, s, changed, "_commit_snapshot_sequence_number", "_change_type", "order_id")
	// Output:
	// 1 INSERT 1
	// 1 INSERT 2
	// 2 DELETE 2
}

// ExampleParseWriteConfig parses a managed-style write configuration (the keys of
// Dataflow's managed Iceberg I/O); Map is its inverse, and a bad key is a ConfigError
// naming it.
func ExampleParseWriteConfig() {
	cfg, err := iceberg.ParseWriteConfig(map[string]any{
		"table":                        "shop.orders",
		"catalog_name":                 "lake",
		"catalog_properties":           map[string]any{"type": "sql", "uri": "file:/tmp/lake.db", "warehouse": "file:///tmp/lake"},
		"triggering_frequency_seconds": 60,
		"partition_fields":             []any{"day(created_at)", "bucket(16, order_id)"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Table, *cfg.TriggeringFrequencySeconds, cfg.PartitionFields)

	_, err = iceberg.ParseWriteConfig(map[string]any{"table": "shop.orders", "catalog_name": "lake", "num_shard": 4})
	var ce *iceberg.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Key)
	// Output:
	// shop.orders 60 [day(created_at) bucket(16, order_id)]
	// true num_shard
}

// ExampleParseWriteConfig_errors: every problem of a configuration is reported at
// once, each naming its key, and no secret is printed.
func ExampleParseWriteConfig_errors() {
	_, err := iceberg.ParseWriteConfig(map[string]any{
		"table":              "shop.orders",
		"catalog_name":       "lake",
		"catalog_properties": map[string]any{"type": "rest", "token": "never printed"},
		"num_shard":          4,
		"upsert":             true,
	})
	fmt.Println(errors.Is(err, iceberg.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// iceberg: 2 configuration problems:
	//   - iceberg: config key "num_shard": unknown key (did you mean "num_shards"?)
	//   - iceberg: config key "upsert": applies only to mode "merge-on-read" (mode is "append")
}

// ExampleMaintain compacts a table that three appends and a merge-on-read delete left in
// three small data files and a deletion vector: afterwards one file holds the live rows
// and no delete file is left.
func ExampleMaintain() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80})
	writeOrders(lc, Order{3, "NY", 45.5})
	writeOrders(lc, Order{4, "TX", 300})
	p, s := beam.NewPipelineWithRoot()
	iceberg.Write(s, iceberg.WriteConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", EqualityColumns: []string{"order_id"}, SequenceNumberColumn: "lsn",
		ChangeTypeMap: map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"}},
		beam.CreateList(s, []OrderChange{{OrderID: 2, Op: "d", LSN: 1}}))
	run(p)

	cfg, err := iceberg.ParseMaintainConfig(map[string]any{
		"table": "db.orders", "catalog_name": lc.Name, "catalog_properties": lc.Props,
		"operations": []any{"rewrite_data_files"}, "min_input_files": 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	p, s = beam.NewPipelineWithRoot()
	reports := iceberg.Maintain(s, cfg)
	beam.ParDo0(s, printReport, reports)
	run(p)
	printRows(lc)
	// Output:
	// data files 3 -> 1, delete files 1 -> 0
	// {order_id: 1, state: "NY", amount: 120}
	// {order_id: 3, state: "NY", amount: 45.5}
	// {order_id: 4, state: "TX", amount: 300}
}

// printReport prints the file counts of a maintenance report (prism runs the pipeline
// in this process).
func printReport(r iceberg.MaintenanceReport) {
	fmt.Printf("data files %d -> %d, delete files %d -> %d\n", r.DataFilesBefore, r.DataFilesAfter, r.DeleteFilesBefore, r.DeleteFilesAfter)
}

// ExampleReadBatches reads with a filter and a projection and emits Arrow record
// batches, deletes and filter applied, which the next DoFn processes column by column.
func ExampleReadBatches() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80}, Order{3, "NY", 45.5}, Order{4, "NY", 300})

	p, s := beam.NewPipelineWithRoot()
	batches := iceberg.ReadBatches(s, iceberg.ReadConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Filter: "state = 'NY'", Keep: []string{"order_id", "amount"}})
	beam.ParDo0(s, sumAmounts, batches)
	run(p)
	fmt.Println("columns:", batchTotals.columns)
	fmt.Println("rows:", batchTotals.rows, "amount:", batchTotals.amount)
	// Output:
	// columns: order_id,amount
	// rows: 3 amount: 465.5
}

// ExampleWriteBatches copies the NY orders into a new table with ReadBatches and
// WriteBatches: the Arrow record batches go into Parquet files as they are, with no
// conversion to rows, and the missing table is created from the batches' schema.
func ExampleWriteBatches() {
	lc, done := exampleCatalog()
	defer done()
	writeOrders(lc, Order{1, "NY", 120}, Order{2, "CA", 80}, Order{3, "NY", 45.5})

	p, s := beam.NewPipelineWithRoot()
	batches := iceberg.ReadBatches(s, iceberg.ReadConfig{Table: "db.orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Filter: "state = 'NY'"})
	iceberg.WriteBatches(s, iceberg.WriteConfig{Table: "db.ny_orders", CatalogName: lc.Name, CatalogProperties: lc.Props,
		SinkID: "ny-copy"}, batches)
	run(p)

	p, s = beam.NewPipelineWithRoot()
	printCollected(p, s, iceberg.Read(s, iceberg.ReadConfig{Table: "db.ny_orders", CatalogName: lc.Name, CatalogProperties: lc.Props}),
		"order_id", "state", "amount")
	// Output:
	// 1 NY 120
	// 3 NY 45.5
}

// batchTotals is what sumAmounts saw (prism runs the pipeline in this process).
var batchTotals struct {
	sync.Mutex
	columns string
	rows    int64
	amount  float64
}

// sumAmounts adds a batch's rows and the values of its amount column, read straight
// from the Arrow column. The batch is valid until it returns; it is not released here
// (ReadBatches' batches are garbage collected).
func sumAmounts(b iceberg.RecordBatch) {
	batchTotals.Lock()
	defer batchTotals.Unlock()
	var names []string
	for _, f := range b.Schema().Fields() {
		names = append(names, f.Name)
	}
	batchTotals.columns = strings.Join(names, ",")
	batchTotals.rows += b.NumRows()
	amounts := b.Column(b.Schema().FieldIndices("amount")[0]).(*array.Float64)
	for i := 0; i < amounts.Len(); i++ {
		if amounts.IsValid(i) {
			batchTotals.amount += amounts.Value(i)
		}
	}
}
