// Command quickstart shows icebeam end to end on the embedded prism runner and an
// embedded SQLite catalog: it writes 1,000 orders to a new format-version 3 table,
// deletes a few of them with deletion vectors, and reads the table back with a SQL
// filter and a column projection.
//
//	go run ./examples/quickstart [--warehouse DIR]
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
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

var warehouse = flag.String("warehouse", "", "directory for the SQLite catalog and the table files (default: a temporary directory, removed at exit)")

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
var deleted = []any{int64(7), int64(13), int64(108), int64(503), int64(998)}

func init() {
	beam.RegisterType(reflect.TypeOf(Order{}))
	beam.RegisterType(reflect.TypeOf(OrderAmount{}))
	register.Function2x0(generateOrders)
	register.Emitter1[Order]()
	register.Function1x1(formatOrder)
}

// generateOrders emits the example's orders, deterministically.
func generateOrders(_ []byte, emit func(Order)) {
	cities := [][2]string{{"Albany", "NY"}, {"Boston", "MA"}, {"Austin", "TX"}, {"Buffalo", "NY"}, {"Denver", "CO"}}
	for i := int64(1); i <= numOrders; i++ {
		c := cities[i%int64(len(cities))]
		emit(Order{OrderID: i, City: c[0], State: c[1], Amount: float64((i*37)%500) + 0.25})
	}
}

// formatOrder renders one read row for printing.
func formatOrder(o OrderAmount) string {
	return fmt.Sprintf("order %4d  amount %6.2f", o.OrderID, o.Amount)
}

func main() {
	flag.Parse()
	beam.Init()
	dir := *warehouse
	if dir == "" {
		tmp, err := os.MkdirTemp("", "icebeam-quickstart-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := run(context.Background(), os.Stdout, dir); err != nil {
		log.Fatal(err)
	}
}

// run is the whole example, writing its report to w.
func run(ctx context.Context, w io.Writer, dir string) error {
	start := time.Now()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		return err
	}
	defer cat.Close()

	// 1. Write: Write creates the table (format-version 3, partitioned by state).
	p, s := beam.NewPipelineWithRoot()
	if err := buildWrite(s, cat); err != nil {
		return err
	}
	if err := beamx.Run(ctx, p); err != nil {
		return fmt.Errorf("write pipeline: %w", err)
	}
	tbl, err := cat.Catalog.LoadTable(ctx, []string{"shop", "orders"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d orders to %s (format-version %d)\n", numOrders, table, tbl.Metadata().Version())

	// 2. Delete a few orders by key with deletion vectors (Puffin files).
	tbl, n, err := icebergtest.DeleteKeysDV(ctx, tbl, "order_id", deleted)
	if err != nil {
		return err
	}
	sum := tbl.CurrentSnapshot().Summary.Properties
	fmt.Fprintf(w, "deleted orders %v with deletion vectors: %d positions, %s delete files, %s position deletes, %s rows live\n",
		deleted, n, sum["total-delete-files"], sum["total-position-deletes"], liveRows(sum))

	// 3. Read back with a filter and a projection; deleted rows are skipped.
	out := filepath.Join(dir, "read.txt")
	p, s = beam.NewPipelineWithRoot()
	if err := buildRead(s, cat, out); err != nil {
		return err
	}
	if err := beamx.Run(ctx, p); err != nil {
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
func buildWrite(s beam.Scope, cat *icebergtest.LocalCatalog) error {
	orders := beam.ParDo(s, generateOrders, beam.Impulse(s))
	_, err := iceberg.TryWrite(s, iceberg.WriteConfig{
		Table: table, CatalogName: cat.Name, CatalogProperties: cat.Props,
		PartitionFields: []string{"state"}, SinkID: "quickstart-load",
	}, orders)
	return err
}

// readFilter is the SQL filter of the example's read.
const readFilter = "state = 'NY' AND amount > 480 AND order_id BETWEEN 1 AND 600"

// buildRead adds the filtered, projected read to the pipeline, written as text to out.
func buildRead(s beam.Scope, cat *icebergtest.LocalCatalog, out string) error {
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
