// Command mirror is the example table mirror: it builds a source table with icebeam's
// own writes (an append, then two merge-on-read batches of updates, deletes and
// inserts), reads every change of the source with ReadChanges and applies them to a
// second table with a merge-on-read Write, in one pipeline, then prints a summary.
//
// It runs on the embedded prism runner with an embedded SQLite catalog:
//
//	go run ./examples/mirror
//	go run ./examples/mirror --warehouse /tmp/wh   # keep the tables
//
// ReadChanges emits each changed row with _change_type, _commit_snapshot_id and
// _commit_snapshot_sequence_number. The merge-on-read write consumes the first (its
// change_type_column) and the last (its default sequence_number_column) and writes
// neither; _commit_snapshot_id is dropped by a small DoFn (dropColumnFn), since the
// merge-on-read write does not take keep or drop.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	sqlcatalog "github.com/icebeam/icebeam/iceberg/catalogs/sql" // the embedded SQLite catalog (type=sql)
	"github.com/icebeam/icebeam/iceberg/jobrun"
)

var warehouse = flag.String("warehouse", "", "directory of the embedded SQLite catalog and table files (default: a temporary directory, removed at exit)")

// The tables of the example.
const (
	sourceTable = "shop.orders_src"
	mirrorTable = "shop.orders_mirror"
)

// Order is one row of the source table.
type Order struct {
	ID     int64   `iceberg:"id"`
	State  string  `iceberg:"state"`
	Amount float64 `iceberg:"amount"`
}

// Change is a change of the source table: an Order plus the control columns `op` (the
// change type, possibly mapped) and `seq` (the order of one key's changes).
type Change struct {
	Op     string  `iceberg:"op"`
	Seq    int64   `iceberg:"seq"`
	ID     int64   `iceberg:"id"`
	State  string  `iceberg:"state"`
	Amount float64 `iceberg:"amount"`
}

// dropColumnFn rebuilds each Row without Column. The output schema is built once per
// input schema (rows of one schema share one *RowSchema).
type dropColumnFn struct {
	Column string

	cache map[*iceberg.RowSchema]dropPlan
}

// dropPlan is the output schema and the kept input positions of one input schema.
type dropPlan struct {
	schema *iceberg.RowSchema
	keep   []int
}

func (f *dropColumnFn) plan(in *iceberg.RowSchema) dropPlan {
	if p, ok := f.cache[in]; ok {
		return p
	}
	if f.cache == nil {
		f.cache = map[*iceberg.RowSchema]dropPlan{}
	}
	var (
		names []string
		types []ibg.Type
		keep  []int
	)
	inTypes := in.Types()
	for i, n := range in.Names() {
		if n == f.Column {
			continue
		}
		names = append(names, n)
		types = append(types, inTypes[i])
		keep = append(keep, i)
	}
	p := dropPlan{schema: iceberg.NewRowSchema(names, types), keep: keep}
	f.cache[in] = p
	return p
}

// ProcessElement emits r without Column.
func (f *dropColumnFn) ProcessElement(r iceberg.Row) iceberg.Row {
	p := f.plan(r.Schema())
	in := r.Values()
	vals := make([]any, len(p.keep))
	for j, i := range p.keep {
		vals[j] = in[i]
	}
	return iceberg.RowOf(p.schema, vals)
}

func init() {
	beam.RegisterType(reflect.TypeOf(Order{}))
	beam.RegisterType(reflect.TypeOf(Change{}))
	register.DoFn1x1[iceberg.Row, iceberg.Row](&dropColumnFn{})
}

// target is the catalog the example uses.
type target struct {
	name  string
	props map[string]string
	cat   catalog.Catalog
}

func main() {
	flag.Parse()
	beam.Init()
	ctx := context.Background()
	dir := *warehouse
	if dir == "" {
		tmp, err := os.MkdirTemp("", "icebeam-mirror-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	props, err := sqlcatalog.EmbeddedProperties(dir)
	if err != nil {
		log.Fatal(err)
	}
	cat, err := sqlcatalog.Open(ctx, "local", props)
	if err != nil {
		log.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	if err := run(ctx, os.Stdout, target{name: "local", props: props, cat: cat}); err != nil {
		log.Fatal(err)
	}
}

// run builds the source table, mirrors it and prints the summary to w.
func run(ctx context.Context, w io.Writer, t target) error {
	start := time.Now()
	if err := buildSource(ctx, t); err != nil {
		return err
	}
	if err := mirror(ctx, t, sourceTable, mirrorTable, nil, nil); err != nil {
		return err
	}
	src, dst, diff, err := compare(ctx, t, sourceTable, mirrorTable)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "source %s: %d rows\n", sourceTable, src)
	fmt.Fprintf(w, "mirror %s: %d rows\n", mirrorTable, dst)
	if diff == "" {
		fmt.Fprintf(w, "equal: true\n")
	} else {
		fmt.Fprintf(w, "equal: false\n%s", diff)
	}
	fmt.Fprintf(w, "done in %s\n", time.Since(start).Round(time.Millisecond))
	if diff != "" {
		return errors.New("mirror differs from source")
	}
	return nil
}

// sourceSchema is the source table: id is a required identifier field, so that
// ReadChanges pairs a key's DELETE and INSERT in one snapshot into an update.
func sourceSchema() *ibg.Schema {
	return ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "state", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "amount", Type: ibg.PrimitiveTypes.Float64})
}

// initialOrders are the rows of the first (append) snapshot.
func initialOrders() []Order {
	states := []string{"new", "paid", "shipped"}
	out := make([]Order, 0, 10)
	for i := int64(1); i <= 10; i++ {
		out = append(out, Order{ID: i, State: states[i%3], Amount: float64(i) * 12.5})
	}
	return out
}

// secondBatch is Debezium-style (c, u with only the after-image, d), mapped with
// change_type_map and applied with upsert.
func secondBatch() []Change {
	return []Change{
		{Op: "u", Seq: 1, ID: 2, State: "shipped", Amount: 25},
		{Op: "d", Seq: 2, ID: 3, State: "shipped", Amount: 37.5},
		{Op: "c", Seq: 3, ID: 11, State: "new", Amount: 99.9},
		{Op: "u", Seq: 4, ID: 4, State: "paid", Amount: 50},
		{Op: "u", Seq: 5, ID: 4, State: "shipped", Amount: 55}, // the later change of id 4 wins
		{Op: "c", Seq: 6, ID: 12, State: "new", Amount: 7},
		{Op: "d", Seq: 7, ID: 12, State: "new", Amount: 7}, // inserted and deleted in one batch
	}
}

// thirdBatch uses the change types themselves, with before-images.
func thirdBatch() []Change {
	return []Change{
		{Op: "UPDATE_BEFORE", Seq: 1, ID: 2, State: "shipped", Amount: 25},
		{Op: "UPDATE_AFTER", Seq: 1, ID: 2, State: "delivered", Amount: 25},
		{Op: "DELETE", Seq: 2, ID: 5, State: "shipped", Amount: 62.5},
		{Op: "INSERT", Seq: 3, ID: 3, State: "new", Amount: 40}, // re-inserts a deleted key
		{Op: "INSERT", Seq: 4, ID: 13, State: "paid", Amount: 130},
		{Op: "UPDATE_BEFORE", Seq: 5, ID: 11, State: "new", Amount: 99.9},
		{Op: "UPDATE_AFTER", Seq: 5, ID: 11, State: "paid", Amount: 89.9},
	}
}

// buildSource creates the source table and writes its three snapshots.
func buildSource(ctx context.Context, t target) error {
	ident := catalog.ToIdentifier(sourceTable)
	ns := catalog.NamespaceFromIdent(ident)
	exists, err := t.cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return err
	}
	if !exists {
		if err := t.cat.CreateNamespace(ctx, ns, nil); err != nil {
			return err
		}
	}
	// Format version 3: ReadChanges finds the rows removed by deletion vectors
	// through row lineage.
	if _, err := t.cat.CreateTable(ctx, ident, sourceSchema(),
		catalog.WithProperties(ibg.Properties{table.PropertyFormatVersion: "3"})); err != nil {
		return fmt.Errorf("create %s: %w", sourceTable, err)
	}

	p, s := beam.NewPipelineWithRoot()
	iceberg.Write(s, iceberg.WriteConfig{
		Table: sourceTable, CatalogName: t.name, CatalogProperties: t.props,
		SinkID: "orders-src-append",
	}, beam.CreateList(s, initialOrders()))
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("append to %s: %w", sourceTable, err)
	}

	batches := []struct {
		changes []Change
		opMap   map[string]string
		upsert  bool
	}{
		{secondBatch(), map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"}, true},
		{thirdBatch(), nil, false},
	}
	for i, b := range batches {
		p, s := beam.NewPipelineWithRoot()
		iceberg.Write(s, iceberg.WriteConfig{
			Table: sourceTable, CatalogName: t.name, CatalogProperties: t.props,
			Mode:             iceberg.MergeOnRead,
			ChangeTypeColumn: "op", ChangeTypeMap: b.opMap, Upsert: b.upsert,
			SequenceNumberColumn: "seq", EqualityColumns: []string{"id"},
			SinkID: fmt.Sprintf("orders-src-changes-%d", i),
		}, beam.CreateList(s, b.changes))
		if _, err := jobrun.Run(ctx, p); err != nil {
			return fmt.Errorf("changes %d to %s: %w", i, sourceTable, err)
		}
	}
	return nil
}

// mirror applies the changes of src after snapshot from (nil: from the earliest
// snapshot) up to snapshot to (nil: the current one) to dst, in one pipeline. dst is
// created by the write when it does not exist.
func mirror(ctx context.Context, t target, src, dst string, from, to *int64) error {
	cfg := iceberg.ChangesConfig{
		Table: src, CatalogName: t.name, CatalogProperties: t.props,
		FromSnapshot: from, ToSnapshot: to,
	}
	if from == nil {
		cfg.StartingStrategy = iceberg.StartEarliest
	}
	// The sink id names the snapshot range, so that a rerun of one range commits once
	// and the run of a later range is a new commit.
	end := to
	if end == nil {
		tbl, err := t.cat.LoadTable(ctx, catalog.ToIdentifier(src))
		if err != nil {
			return err
		}
		if cur := tbl.CurrentSnapshot(); cur != nil {
			end = &cur.SnapshotID
		}
	}
	sinkID := "mirror-" + src + "-" + dst
	if from != nil {
		sinkID += fmt.Sprintf("-after-%d", *from)
	}
	if end != nil {
		sinkID += fmt.Sprintf("-to-%d", *end)
	}
	p, s := beam.NewPipelineWithRoot()
	if err := buildMirror(s, t, cfg, dst, sinkID); err != nil {
		return err
	}
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("mirror %s to %s: %w", src, dst, err)
	}
	return nil
}

// buildMirror adds to s the pipeline that applies the changes cfg reads to dst,
// a merge-on-read write with sink id sinkID.
func buildMirror(s beam.Scope, t target, cfg iceberg.ChangesConfig, dst, sinkID string) error {
	changes, err := iceberg.TryReadChanges(s, cfg)
	if err != nil {
		return err
	}
	rows := beam.ParDo(s, &dropColumnFn{Column: iceberg.CommitSnapshotIDColumn}, changes)
	_, err = iceberg.TryWrite(s, iceberg.WriteConfig{
		Table: dst, CatalogName: t.name, CatalogProperties: t.props,
		Mode:             iceberg.MergeOnRead,
		ChangeTypeColumn: iceberg.ChangeTypeColumn,
		EqualityColumns:  []string{"id"},
		SinkID:           sinkID,
	}, rows)
	return err
}

// columns are the columns compared between source and mirror.
var columns = []string{"id", "state", "amount"}

// readTable reads the current rows of name (columns only).
func readTable(ctx context.Context, t target, name string) (arrow.Table, error) {
	tbl, err := t.cat.LoadTable(ctx, catalog.ToIdentifier(name))
	if err != nil {
		return nil, err
	}
	return tbl.Scan(table.WithSelectedFields(columns...)).ToArrowTable(ctx)
}

// compare returns the row counts of src and dst and their difference ("" when equal).
func compare(ctx context.Context, t target, src, dst string) (nsrc, ndst int64, diff string, err error) {
	a, err := readTable(ctx, t, src)
	if err != nil {
		return 0, 0, "", err
	}
	defer a.Release()
	b, err := readTable(ctx, t, dst)
	if err != nil {
		return 0, 0, "", err
	}
	defer b.Release()
	return a.NumRows(), b.NumRows(), diffRows(a, b), nil
}

// diffRows returns the rows (as text, columns in the order of columns) only one of
// a and b holds, "" when they hold the same rows.
func diffRows(a, b arrow.Table) string {
	counts := map[string]int{}
	for _, r := range rowStrings(a) {
		counts[r]++
	}
	for _, r := range rowStrings(b) {
		counts[r]--
	}
	var diff []string
	for r, n := range counts {
		switch {
		case n > 0:
			diff = append(diff, fmt.Sprintf("only in source (%d): %s", n, r))
		case n < 0:
			diff = append(diff, fmt.Sprintf("only in mirror (%d): %s", -n, r))
		}
	}
	sort.Strings(diff)
	if len(diff) == 0 {
		return ""
	}
	return strings.Join(diff, "\n") + "\n"
}

// rowStrings returns each row of t as its values, by the columns of columns.
func rowStrings(t arrow.Table) []string {
	tr := array.NewTableReader(t, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var vals []string
			for _, c := range columns {
				idx := rec.Schema().FieldIndices(c)
				if len(idx) == 0 {
					vals = append(vals, c+"=<missing>")
					continue
				}
				vals = append(vals, c+"="+rec.Column(idx[0]).ValueStr(i))
			}
			out = append(out, strings.Join(vals, " "))
		}
	}
	return out
}
