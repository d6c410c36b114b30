// Command quickstart shows icebeam end to end on the embedded prism runner and an
// embedded SQLite catalog: it writes 1,000 orders to a new format-version 3 table,
// deletes a few of them with deletion vectors, and reads the table back with a SQL
// filter and a column projection.
//
//	go run ./examples/quickstart [--warehouse DIR]
//	go run ./examples/quickstart --streaming [--warehouse DIR]
//
// With --streaming it runs the streaming variant instead: a periodic impulse (an
// unbounded source) ticks every 200 ms for 5 s, each tick bringing 5 new orders
// and a change stream of them (inserts, an update, a delete). One pipeline appends
// the orders to shop.orders_stream and applies the changes merge-on-read, with
// deletion vectors, to shop.orders_changes; both writes commit each 1 s event-time
// window once, in window order (triggering_frequency_seconds). The example's
// pipeline ends with its source, so it sets no token_heartbeat_seconds (its periodic
// refresh lasts as long as the pipeline, which would then never end); a long-running
// job would, as the streaming pipelines this example's tests translate for Dataflow
// do (buildStreamingAppend and buildStreamingChanges with a heartbeat).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg"
	sqlcatalog "github.com/icebeam/icebeam/iceberg/catalogs/sql" // the embedded SQLite catalog (type=sql)
	"github.com/icebeam/icebeam/iceberg/jobrun"
)

var (
	warehouse = flag.String("warehouse", "", "directory for the SQLite catalog and the table files (default: a temporary directory, removed at exit)")
	streaming = flag.Bool("streaming", false, "run the streaming variant: orders and changes from a periodic source for 5 s, committed in 1 s windows")
)

// Order is one row of the example table.
type Order struct {
	OrderID int64   `iceberg:"order_id"`
	City    string  `iceberg:"city"`
	State   string  `iceberg:"state"`
	Amount  float64 `iceberg:"amount"`
}

// OrderAmount is the typed output of the read: only the kept columns.
type OrderAmount struct {
	OrderID int64   `iceberg:"order_id"`
	Amount  float64 `iceberg:"amount"`
}

// numOrders is the number of orders the example writes.
const numOrders = 1000

// table is the example's table.
const table = "shop.orders"

// deleted are the orders the example deletes with deletion vectors.
var deleted = []int64{7, 13, 108, 503, 998}

func init() {
	beam.RegisterType(reflect.TypeOf(Order{}))
	beam.RegisterType(reflect.TypeOf(OrderAmount{}))
	register.Function2x0(generateOrders)
	register.Emitter1[Order]()
	register.Function1x1(formatOrder)
	beam.RegisterType(reflect.TypeOf(OrderChange{}))
	register.DoFn3x0[beam.EventTime, []byte, func(Order)](&tickOrdersFn{})
	register.DoFn3x0[beam.EventTime, []byte, func(OrderChange)](&tickChangesFn{})
	register.Emitter1[OrderChange]()
}

// makeOrder returns order i of the example, deterministically.
func makeOrder(i int64) Order {
	cities := [][2]string{{"Albany", "NY"}, {"Boston", "MA"}, {"Austin", "TX"}, {"Buffalo", "NY"}, {"Denver", "CO"}}
	c := cities[i%int64(len(cities))]
	return Order{OrderID: i, City: c[0], State: c[1], Amount: float64((i*37)%500) + 0.25}
}

// generateOrders emits the example's orders, deterministically.
func generateOrders(_ []byte, emit func(Order)) {
	for i := int64(1); i <= numOrders; i++ {
		emit(makeOrder(i))
	}
}

// formatOrder renders one read row for printing.
func formatOrder(o OrderAmount) string {
	return fmt.Sprintf("order %4d  amount %6.2f", o.OrderID, o.Amount)
}

func main() {
	flag.Parse()
	beam.Init()
	runFn := run
	if *streaming {
		runFn = func(ctx context.Context, w io.Writer, dir string) error { return runStreaming(ctx, w, dir, streamFor) }
	}
	dir := *warehouse
	if dir == "" {
		tmp, err := os.MkdirTemp("", "icebeam-quickstart-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := runFn(context.Background(), os.Stdout, dir); err != nil {
		log.Fatal(err)
	}
}

// run is the whole example, writing its report to w.
func run(ctx context.Context, w io.Writer, dir string) error {
	start := time.Now()
	cat, err := openLocalCatalog(dir)
	if err != nil {
		return err
	}
	defer cat.Close()

	// 1. Write: Write creates the table (format-version 3, partitioned by state).
	p, s := beam.NewPipelineWithRoot()
	if err := buildWrite(s, cat); err != nil {
		return err
	}
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("write pipeline: %w", err)
	}
	tbl, err := cat.Catalog.LoadTable(ctx, []string{"shop", "orders"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d orders to %s (format-version %d)\n", numOrders, table, tbl.Metadata().Version())

	// 2. Delete a few orders by key with deletion vectors (Puffin files): a
	// merge-on-read write of DELETE changes.
	p, s = beam.NewPipelineWithRoot()
	if err := buildDeletes(s, cat); err != nil {
		return err
	}
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("delete pipeline: %w", err)
	}
	if tbl, err = cat.Catalog.LoadTable(ctx, []string{"shop", "orders"}); err != nil {
		return err
	}
	sum := tbl.CurrentSnapshot().Summary.Properties
	fmt.Fprintf(w, "deleted orders %v with deletion vectors: %s positions, %s delete files, %s position deletes, %s rows live\n",
		deleted, sum["added-position-deletes"], sum["total-delete-files"], sum["total-position-deletes"], liveRows(sum))

	// 3. Read back with a filter and a projection; deleted rows are skipped.
	out := filepath.Join(dir, "read.txt")
	p, s = beam.NewPipelineWithRoot()
	if err := buildRead(s, cat, out); err != nil {
		return err
	}
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("read pipeline: %w", err)
	}
	lines, err := readLines(out)
	if err != nil {
		return err
	}
	sort.Strings(lines)
	fmt.Fprintf(w, "read %d orders where %s:\n", len(lines), readFilter)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// buildWrite adds the write of the generated orders to the pipeline.
func buildWrite(s beam.Scope, cat *localCatalog) error {
	orders := beam.ParDo(s, generateOrders, beam.Impulse(s))
	_, err := iceberg.TryWrite(s, iceberg.WriteConfig{
		Table: table, CatalogName: cat.Name, CatalogProperties: cat.Props,
		PartitionFields: []string{"state"}, SinkID: "quickstart-load",
	}, orders)
	return err
}

// buildDeletes adds the merge-on-read write that deletes the orders of deleted: one
// DELETE change per key (order_id), which becomes a position in a deletion vector of
// the data file holding the order.
func buildDeletes(s beam.Scope, cat *localCatalog) error {
	var changes []OrderChange
	for i, k := range deleted {
		o := makeOrder(k)
		changes = append(changes, OrderChange{OrderID: o.OrderID, City: o.City, State: o.State, Amount: o.Amount, Op: "d", Seq: int64(i + 1)})
	}
	_, err := iceberg.TryWrite(s, iceberg.WriteConfig{
		Table: table, CatalogName: cat.Name, CatalogProperties: cat.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", SequenceNumberColumn: "seq",
		ChangeTypeMap:   map[string]string{"d": iceberg.ChangeDelete},
		EqualityColumns: []string{"order_id"}, SinkID: "quickstart-deletes",
	}, beam.CreateList(s, changes))
	return err
}

// localCatalog is the embedded catalog the example writes to: SQLite and a local
// warehouse in one directory.
type localCatalog struct {
	Name    string
	Props   map[string]string
	Catalog catalog.Catalog
}

// openLocalCatalog opens the embedded catalog in dir, creating it when missing.
func openLocalCatalog(dir string) (*localCatalog, error) {
	props, err := sqlcatalog.EmbeddedProperties(dir)
	if err != nil {
		return nil, err
	}
	cat, err := sqlcatalog.Open(context.Background(), "local", props)
	if err != nil {
		return nil, err
	}
	return &localCatalog{Name: "local", Props: props, Catalog: cat}, nil
}

// Close closes the catalog's database.
func (c *localCatalog) Close() error { return c.Catalog.(catalog.Closer).Close() }

// readFilter is the SQL filter of the example's read.
const readFilter = "state = 'NY' AND amount > 480 AND order_id BETWEEN 1 AND 600"

// buildRead adds the filtered, projected read to the pipeline, written as text to out.
func buildRead(s beam.Scope, cat *localCatalog, out string) error {
	rows, err := iceberg.TryRead(s, iceberg.ReadConfig{
		Table: table, CatalogName: cat.Name, CatalogProperties: cat.Props,
		Filter: readFilter, Keep: []string{"order_id", "amount"},
	}, iceberg.WithOutputType(reflect.TypeOf(OrderAmount{})))
	if err != nil {
		return err
	}
	textio.Write(s, out, beam.ParDo(s, formatOrder, rows))
	return nil
}

func liveRows(sum map[string]string) string {
	var total, deletes int
	fmt.Sscan(sum["total-records"], &total)
	fmt.Sscan(sum["total-position-deletes"], &deletes)
	return fmt.Sprint(total - deletes)
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// The streaming variant (--streaming).
const (
	// streamTick is the interval of the periodic source.
	streamTick = 200 * time.Millisecond
	// streamOrdersPerTick is the number of new orders each tick brings.
	streamOrdersPerTick = 5
	// streamWindow is the writes' triggering_frequency_seconds.
	streamWindow = time.Second
	// streamFor is how long the source of `go run . --streaming` ticks.
	streamFor = 5 * time.Second
	// streamTable and changesTable are the streaming variant's tables.
	streamTable  = "shop.orders_stream"
	changesTable = "shop.orders_changes"
)

// OrderChange is one change of the streaming variant's change stream: Op is "c"
// (insert), "u" (update, after-image only) or "d" (delete); Seq orders the changes.
type OrderChange struct {
	OrderID int64   `iceberg:"order_id"`
	City    string  `iceberg:"city"`
	State   string  `iceberg:"state"`
	Amount  float64 `iceberg:"amount"`
	Op      string  `iceberg:"op"`
	Seq     int64   `iceberg:"seq"`
}

// tickOrders calls emit with the new orders of tick i: orders i*5+1 to i*5+5.
func tickOrders(i int64, emit func(Order)) {
	for j := int64(1); j <= streamOrdersPerTick; j++ {
		emit(makeOrder(i*streamOrdersPerTick + j))
	}
}

// tickChanges calls emit with the changes of tick i, in sequence order: its new
// orders are inserted, then (from the second tick on) an order of the tick before
// gets a new amount and another one is deleted.
func tickChanges(i int64, emit func(OrderChange)) {
	seq := i * 10
	change := func(o Order, op string) {
		seq++
		emit(OrderChange{OrderID: o.OrderID, City: o.City, State: o.State, Amount: o.Amount, Op: op, Seq: seq})
	}
	tickOrders(i, func(o Order) { change(o, "c") })
	if i > 0 {
		o := makeOrder(i*streamOrdersPerTick - 2)
		o.Amount += 1000
		change(o, "u")
		change(makeOrder(i*streamOrdersPerTick-4), "d")
	}
}

// tickOrdersFn emits the orders of each tick of the periodic source; ticks start
// at StartMs, one every streamTick, and their orders carry the tick's timestamp.
type tickOrdersFn struct{ StartMs int64 }

func (f *tickOrdersFn) ProcessElement(ts beam.EventTime, _ []byte, emit func(Order)) {
	tickOrders((ts.Milliseconds()-f.StartMs)/streamTick.Milliseconds(), emit)
}

// tickChangesFn is tickOrdersFn for the change stream.
type tickChangesFn struct{ StartMs int64 }

func (f *tickChangesFn) ProcessElement(ts beam.EventTime, _ []byte, emit func(OrderChange)) {
	tickChanges((ts.Milliseconds()-f.StartMs)/streamTick.Milliseconds(), emit)
}

// streamSource adds the streaming variant's source: a periodic impulse every
// streamTick from start to end, an unbounded PCollection.
func streamSource(s beam.Scope, start, end time.Time) beam.PCollection {
	return periodic.Impulse(s, start, end, streamTick, false)
}

// streamConfig is the configuration shared by the streaming writes: a commit per
// streamWindow window and, when heartbeat is not 0, token_heartbeat_seconds.
func streamConfig(cfg iceberg.WriteConfig, heartbeat time.Duration) iceberg.WriteConfig {
	cfg = cfg.With(iceberg.WithTriggeringFrequency(streamWindow))
	if heartbeat > 0 {
		cfg = cfg.With(iceberg.WithTokenHeartbeat(heartbeat))
	}
	return cfg
}

// buildStreamingAppend adds the append of the orders of ticks (streamSource's
// output, started at start) to streamTable.
func buildStreamingAppend(s beam.Scope, cat *localCatalog, ticks beam.PCollection, start time.Time, heartbeat time.Duration) error {
	orders := beam.ParDo(s, &tickOrdersFn{StartMs: start.UnixMilli()}, ticks)
	_, err := iceberg.TryWrite(s, streamConfig(iceberg.WriteConfig{
		Table: streamTable, CatalogName: cat.Name, CatalogProperties: cat.Props,
		PartitionFields: []string{"state"}, SinkID: "quickstart-stream",
	}, heartbeat), orders)
	return err
}

// buildStreamingChanges adds the merge-on-read write of the changes of ticks
// (streamSource's output, started at start) to changesTable.
func buildStreamingChanges(s beam.Scope, cat *localCatalog, ticks beam.PCollection, start time.Time, heartbeat time.Duration) error {
	changes := beam.ParDo(s, &tickChangesFn{StartMs: start.UnixMilli()}, ticks)
	_, err := iceberg.TryWrite(s, streamConfig(iceberg.WriteConfig{
		Table: changesTable, CatalogName: cat.Name, CatalogProperties: cat.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", SequenceNumberColumn: "seq",
		ChangeTypeMap: map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
		Upsert:        true, EqualityColumns: []string{"order_id"}, SinkID: "quickstart-changes",
	}, heartbeat), changes)
	return err
}

// runStreaming is the streaming variant: one pipeline whose source ticks for d from
// the next window boundary (whole windows) and whose writes commit every window.
func runStreaming(ctx context.Context, w io.Writer, dir string, d time.Duration) error {
	begin := time.Now()
	cat, err := openLocalCatalog(dir)
	if err != nil {
		return err
	}
	defer cat.Close()
	start := time.Now().Add(500 * time.Millisecond).Truncate(streamWindow).Add(streamWindow)
	p, s := beam.NewPipelineWithRoot()
	ticks := streamSource(s, start, start.Add(d))
	if err := buildStreamingAppend(s.Scope("append"), cat, ticks, start, 0); err != nil {
		return err
	}
	if err := buildStreamingChanges(s.Scope("changes"), cat, ticks, start, 0); err != nil {
		return err
	}
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("streaming pipeline: %w", err)
	}
	for _, name := range []string{streamTable, changesTable} {
		tbl, err := cat.Catalog.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			return err
		}
		var windows int
		for _, snap := range tbl.Metadata().Snapshots() {
			if snap.Summary != nil && snap.Summary.Properties["beam.cdc.sink-id"] != "" {
				windows++
			}
		}
		sum := tbl.CurrentSnapshot().Summary.Properties
		fmt.Fprintf(w, "%s: %d window commits, %s rows live (%s delete files)\n", name, windows, liveRows(sum), sum["total-delete-files"])
	}
	fmt.Fprintf(w, "done in %s\n", time.Since(begin).Round(time.Millisecond))
	return nil
}
