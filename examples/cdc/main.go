// Command cdc is the example change-data-capture pipeline: it reads Debezium JSON
// change events (envelopes: before, after, op, source.lsn, ts_ms; a null line is the
// tombstone Debezium sends after a delete) and writes them, as they are, to a
// merge-on-read format-version 3 table by configuration alone: only (the after-image),
// before_field (the before-image of deletes), change_type_column with change_type_map
// (op), sequence_number_column (source.lsn). Prior rows are deleted with deletion
// vectors, in Puffin files. It reads the table back with a filter and prints a summary.
//
// By default it runs on the embedded prism runner with an embedded SQLite catalog and
// the sample events in testdata/orders.jsonl, applied as three batches (three commits):
//
//	go run ./examples/cdc
//	go run ./examples/cdc --generate 100000 --batches 5   # a synthetic stream instead
//	go run ./examples/cdc --generate 20000 --streaming      # one streaming pipeline, 2 s commit windows
//
// With --streaming the events come from an unbounded source (a periodic impulse) at
// --rate per second of event time and the write commits each --window_seconds window in
// order (triggering_frequency_seconds), as a streaming Dataflow job would.
//
// With --input (a file or glob: local paths and gs:// alike) it runs one batch
// pipeline that reads the events on the workers with textio, applies them in one
// commit, and then, in the same pipeline after the commit, reads the table back with
// the filter; the dead letters and the read-back go to files under the --output prefix
// (<output>dead-letters.txt, <output>orders.txt), written by the workers. Nothing
// is read or written on the launcher's disk but the embedded catalog, when no
// --catalog_properties are given. The pipeline is built without reaching the catalog
// (WithoutCatalogAtConstruction, WithSchema), so Dataflow's --dry_run needs no
// credentials. On Dataflow, with a GCS warehouse and BigLake's REST catalog:
//
//	go run ./examples/cdc --runner=dataflow --project=P --region=R \
//	  --staging_location=gs://B/staging --temp_location=gs://B/tmp \
//	  --input='gs://B/events/*.json' --output=gs://B/cdc-out/ \
//	  --catalog_name=lake --catalog_properties='{"type":"rest",
//	    "uri":"https://biglake.googleapis.com/iceberg/v1/restcatalog",
//	    "warehouse":"gs://B/warehouse","rest.auth.type":"google",
//	    "header.x-goog-user-project":"P"}'
//
// On a portable Flink or Spark job server: --runner=universal --endpoint=localhost:8099
// --environment_type=LOOPBACK (or DOCKER), with a catalog the workers can reach.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"   // textio on gs://
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // textio on local paths
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg"
	// The embedded SQLite catalog (type=sql) and, for the Dataflow run below,
	// gs:// storage; the rest catalog (BigLake) is always linked.
	sqlcatalog "github.com/icebeam/icebeam/iceberg/catalogs/sql"
	"github.com/icebeam/icebeam/iceberg/jobrun"
	_ "github.com/icebeam/icebeam/iceberg/storage/gcs"
)

//go:embed testdata/orders.jsonl
var sampleEvents string

var (
	input       = flag.String("input", "", "Debezium JSON change events, one per line: a file or glob the workers read (local or gs://); runs one pipeline writing to --output (default: the embedded sample, in --batches runs)")
	output      = flag.String("output", "", "with --input: prefix of the files the workers write, <output>dead-letters.txt and <output>orders.txt (local or gs://; default: a temporary directory)")
	sinkID      = flag.String("sink_id", "", "with --input: the write's sink_id; a rerun with the same id commits nothing (default: a fresh id per run)")
	generate    = flag.Int("generate", 0, "generate this many synthetic change events instead of reading --input")
	batches     = flag.Int("batches", 3, "number of commits the events are applied in (prism only: each is a pipeline run)")
	warehouse   = flag.String("warehouse", "", "directory of the embedded SQLite catalog and table files (default: a temporary directory, removed at exit)")
	catalogName = flag.String("catalog_name", "", "catalog name (default: the embedded catalog)")
	catalogJSON = flag.String("catalog_properties", "", "catalog properties as a JSON object (default: the embedded catalog)")
	tableName   = flag.String("table", "shop.orders", "the table to write")
	numShards   = flag.Int("num_shards", 4, "key-hash shards per window (each writes its own files per partition)")
	streaming   = flag.Bool("streaming", false, "run one streaming pipeline instead of batches: the events arrive from an unbounded source at --rate per second of event time and the write commits every --window_seconds")
	rate        = flag.Int("rate", 1000, "with --streaming: change events per second")
	windowSecs  = flag.Int("window_seconds", 2, "with --streaming: triggering_frequency_seconds, the length of each commit window")
	maintainFlg = flag.Bool("maintain", false, "afterwards, maintain the table: compact its files folding every deletion vector in, expire all snapshots but the newest, and remove orphan files older than an hour; print files and DVs before and after")
)

// Order is a row image of a change event, and the typed read of the table.
type Order struct {
	OrderID  int64   `iceberg:"order_id" json:"order_id"`
	Customer string  `iceberg:"customer" json:"customer"`
	State    string  `iceberg:"state" json:"state"`
	Amount   float64 `iceberg:"amount" json:"amount"`
}

// Event is one Debezium change event as its JSON converter writes it, unflattened:
// null fields are nil pointers, and a tombstone (a null event) is the zero Event.
type Event struct {
	Before *Order  `iceberg:"before" json:"before"`
	After  *Order  `iceberg:"after" json:"after"`
	Source *Source `iceberg:"source" json:"source"`
	Op     *string `iceberg:"op" json:"op"`
	TsMs   *int64  `iceberg:"ts_ms" json:"ts_ms"`
}

// Source is the source block of an Event: where the change was read. Its lsn, the
// position in the database's log, orders the changes of one key.
type Source struct {
	DB    string `iceberg:"db" json:"db"`
	Table string `iceberg:"table" json:"table"`
	LSN   int64  `iceberg:"lsn" json:"lsn"`
}

// debeziumOps maps Debezium operations to change types: snapshot reads and creates
// insert, updates carry only the after-image (so the write runs with upsert), deletes
// delete.
var debeziumOps = map[string]string{"r": "INSERT", "c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"}

func init() {
	beam.RegisterType(reflect.TypeOf(Event{}))
	beam.RegisterType(reflect.TypeOf(Source{}))
	beam.RegisterType(reflect.TypeOf(Order{}))
	register.Function4x0(parseEventOrDead)
	register.Emitter1[Event]()
	register.Emitter1[string]()
	register.Function1x1(formatOrder)
	register.Function1x1(formatDeadLetter)
	register.Function1x1(formatReport)
	register.DoFn3x0[beam.EventTime, int64, func(beam.EventTime, string)](&tickEventsFn{})
	register.Emitter2[beam.EventTime, string]()
	register.Function2x0(countCommit)
	register.Function2x0(logDeadLetter)
}

// parseEvent decodes one JSON line into an Event (a tombstone line, null, into the
// zero Event): the write reads the envelope itself.
func parseEvent(line string) (Event, error) {
	var e Event
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return Event{}, fmt.Errorf("change event %q: %w", line, err)
	}
	return e, nil
}

func formatOrder(o Order) string {
	return fmt.Sprintf("order %5d  %-4s %-3s %8.2f", o.OrderID, o.Customer, o.State, o.Amount)
}

// readFilter is the filter of the read-back.
const readFilter = "state = 'NY' AND amount >= 500"

func main() {
	flag.Parse()
	beam.Init()
	if err := runMain(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// runMain runs the example the flags ask for and writes its summary to w.
func runMain(ctx context.Context, w io.Writer) error {
	var cfg target
	if *catalogJSON != "" {
		cfg.name = *catalogName
		if err := json.Unmarshal([]byte(*catalogJSON), &cfg.props); err != nil {
			return fmt.Errorf("--catalog_properties: %w", err)
		}
	} else {
		dir := *warehouse
		if dir == "" {
			tmp, err := os.MkdirTemp("", "icebeam-cdc-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		props, err := sqlcatalog.EmbeddedProperties(dir)
		if err != nil {
			return err
		}
		cat, err := sqlcatalog.Open(ctx, "local", props)
		if err != nil {
			return err
		}
		defer cat.(catalog.Closer).Close()
		cfg = target{name: "local", props: props, local: cat, outDir: dir}
	}
	cfg.table = *tableName
	if *input != "" {
		if *streaming || *maintainFlg || *generate > 0 {
			return fmt.Errorf("--input runs one batch pipeline: not with --streaming, --maintain or --generate")
		}
		out := *output
		if out == "" {
			tmp, err := os.MkdirTemp("", "icebeam-cdc-out-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			out = tmp + string(os.PathSeparator)
		}
		return runInput(ctx, w, cfg, *input, out, *sinkID)
	}
	if cfg.local == nil {
		return fmt.Errorf("--catalog_properties needs --input: the sample and --generate runs read the table back on this machine")
	}
	lines := splitLines(sampleEvents)
	if *generate > 0 {
		lines = Generate(*generate, 1)
	}
	var err error
	if *streaming {
		err = runStreaming(ctx, w, cfg, lines, *rate, *windowSecs)
	} else {
		err = run(ctx, w, cfg, lines, *batches)
	}
	if err == nil && *maintainFlg {
		err = maintain(ctx, w, cfg)
	}
	return err
}

// orderSchema is the schema of the table the write creates from Order (the
// after-image), given to the read-back so that the pipeline builds without the
// catalog: the read checks it against the table when it plans.
func orderSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "order_id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "customer", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "state", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 4, Name: "amount", Type: ibg.PrimitiveTypes.Float64})
}

// buildInput adds the one pipeline of --input to s: the workers read the events of
// input (a file or glob) with textio, the merge-on-read write applies them, and after
// its commit the table is read back with the filter; dead letters (unparsable lines
// and rows the write refused) and the read-back go to files under the output prefix.
// It reaches no catalog: a --dry_run needs no credentials.
func buildInput(s beam.Scope, t target, input, output, sinkID string) error {
	changes, bad := beam.ParDo2(s, parseEventOrDead, textio.Read(s, input))
	res, err := iceberg.TryWrite(s, t.writeConfig(sinkID), changes, iceberg.WithoutCatalogAtConstruction())
	if err != nil {
		return err
	}
	textio.Write(s, output+"dead-letters.txt", beam.Flatten(s, bad, beam.ParDo(s, formatDeadLetter, res.DeadLetter)))
	rows, err := iceberg.TryRead(s, iceberg.ReadConfig{
		Table: t.table, CatalogName: t.name, CatalogProperties: t.props, Filter: readFilter,
	}, iceberg.WithOutputType(reflect.TypeOf(Order{})), iceberg.WithSchema(orderSchema()),
		iceberg.WithReadAfter(res.Snapshots))
	if err != nil {
		return err
	}
	textio.Write(s, output+"orders.txt", beam.ParDo(s, formatOrder, rows))
	return nil
}

// runInput runs buildInput's pipeline and reports to w: the write counters, and, for
// a local output, what the files hold.
func runInput(ctx context.Context, w io.Writer, t target, input, output, sinkID string) error {
	start := time.Now()
	p, s := beam.NewPipelineWithRoot()
	if err := buildInput(s, t, input, output, sinkID); err != nil {
		return err
	}
	pr, err := jobrun.Run(ctx, p)
	if err != nil {
		return err
	}
	if !jobrun.HasMetrics(pr) {
		fmt.Fprintf(w, "pipeline done (the runner returned no metrics: a dry run, or a job service without them)\n")
		return nil
	}
	metrics := map[string]int64{}
	addWriteMetrics(metrics, pr)
	events := int64(0)
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "icebeam.example.cdc" && c.Key.Name == "events" {
			events += c.Result()
		}
	}
	fmt.Fprintf(w, "applied %d change events from %s in one pipeline to %s (merge-on-read, deletion vectors)\n", events, input, t.table)
	printWriteMetrics(w, metrics)
	if strings.Contains(output, "://") {
		fmt.Fprintf(w, "read-back: %sorders.txt, dead letters: %sdead-letters.txt\n", output, output)
	} else {
		orders, err := readLines(output + "orders.txt")
		if err != nil {
			return err
		}
		dead, err := readLines(output + "dead-letters.txt")
		if err != nil {
			return err
		}
		printOrders(w, orders)
		fmt.Fprintf(w, "%d dead letters (%sdead-letters.txt)\n", len(dead), output)
	}
	fmt.Fprintf(w, "done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// readLines returns the sorted lines of the local file at path, none when the
// pipeline wrote none (textio writes no file for an empty PCollection).
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	lines := splitLines(string(b))
	sort.Strings(lines)
	return lines, nil
}

// printOrders prints how many orders the read-back found, and the first five.
func printOrders(w io.Writer, lines []string) {
	fmt.Fprintf(w, "read %d orders where %s\n", len(lines), readFilter)
	for _, l := range lines[:min(5, len(lines))] {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(lines) > 5 {
		fmt.Fprintf(w, "  ...\n")
	}
}

// maintain runs iceberg.Maintain on t's table and prints its report: every data file
// with a deletion vector and every bin of small files is rewritten without deletes,
// every snapshot but the newest expires (the sinks' tokens are kept), and orphan files
// older than an hour go.
func maintain(ctx context.Context, w io.Writer, t target) error {
	one, hour := 1, 3600
	zero := 0
	p, s := beam.NewPipelineWithRoot()
	reports, err := iceberg.TryMaintain(s, iceberg.MaintainConfig{
		Table: t.table, CatalogName: t.name, CatalogProperties: t.props,
		DeleteFileThreshold: &one, MinInputFiles: &one,
		ExpireOlderThanSeconds: &zero, RetainLast: &one, OrphanOlderThanSeconds: &hour,
	})
	if err != nil {
		return err
	}
	out := t.outDir + "/maintenance.txt"
	textio.Write(s, out, beam.ParDo(s, formatReport, reports))
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("maintain: %w", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func formatReport(r iceberg.MaintenanceReport) string {
	return fmt.Sprintf("maintenance of %s: data files %d -> %d, delete files (DVs) %d -> %d; %d groups rewritten (%d files into %d); %d snapshots expired (%d kept for sink tokens); %d orphan files removed",
		r.Table, r.DataFilesBefore, r.DataFilesAfter, r.DeleteFilesBefore, r.DeleteFilesAfter, r.GroupsCommitted,
		r.FilesRewritten, r.FilesAdded, r.SnapshotsExpired, r.SnapshotsPinned, r.OrphansRemoved)
}

// target is where the example writes.
type target struct {
	name   string
	props  map[string]string
	table  string
	local  catalog.Catalog // the embedded catalog, nil for a remote one
	outDir string
}

// writeConfig is the merge-on-read write of the example's Debezium events to t,
// exactly once per sinkID. The row image is the envelope's after field (before for
// deletes, whose after is null); op, mapped, gives the change type and source.lsn
// orders the changes of a key; tombstones are skipped (tombstones_skipped).
func (t target) writeConfig(sinkID string) iceberg.WriteConfig {
	shards := *numShards
	return iceberg.WriteConfig{
		Table: t.table, CatalogName: t.name, CatalogProperties: t.props,
		Mode: iceberg.MergeOnRead, Only: "after", BeforeField: "before",
		ChangeTypeColumn: "op", ChangeTypeMap: debeziumOps, Upsert: true,
		SequenceNumberColumn: "source.lsn", EqualityColumns: []string{"order_id"},
		PartitionFields: []string{"state"}, NumShards: &shards,
		SinkID: sinkID,
	}
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

var eventsCounter = beam.NewCounter("icebeam.example.cdc", "events")

// parseEventOrDead decodes one line; malformed JSON goes to the second output with
// its reason, so nothing is lost silently.
func parseEventOrDead(ctx context.Context, line string, ok func(Event), bad func(string)) {
	eventsCounter.Inc(ctx, 1)
	c, err := parseEvent(line)
	if err != nil {
		bad(err.Error())
		return
	}
	ok(c)
}

// run applies lines in nbatches commits, reads the table back and reports to w.
func run(ctx context.Context, w io.Writer, t target, lines []string, nbatches int) error {
	start := time.Now()
	if nbatches < 1 {
		return fmt.Errorf("--batches must be at least 1, got %d", nbatches)
	}
	per := (len(lines) + nbatches - 1) / nbatches
	commits := 0
	metrics := map[string]int64{}
	for b := 0; b*per < len(lines); b++ {
		chunk := lines[b*per : min((b+1)*per, len(lines))]
		p, s := beam.NewPipelineWithRoot()
		if err := buildBatch(s, t, chunk, b); err != nil {
			return err
		}
		pr, err := jobrun.Run(ctx, p)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b, err)
		}
		addWriteMetrics(metrics, pr)
		commits++
	}
	if err := report(ctx, w, t, len(lines), commits, "batches", start); err != nil {
		return err
	}
	printWriteMetrics(w, metrics)
	return nil
}

// buildBatch adds the batch pipeline of batch b, which applies lines, to s.
func buildBatch(s beam.Scope, t target, lines []string, b int) error {
	changes, bad := beam.ParDo2(s, parseEventOrDead, beam.CreateList(s, lines))
	res, err := iceberg.TryWrite(s, t.writeConfig(fmt.Sprintf("orders-cdc-batch-%d", b)), changes)
	if err != nil {
		return err
	}
	textio.Write(s, fmt.Sprintf("%s/dead-letter-%d.txt", t.outDir, b),
		beam.Flatten(s, bad, beam.ParDo(s, formatDeadLetter, res.DeadLetter)))
	return nil
}

// tickInterval is how often the streaming source emits a slice of the events.
const tickInterval = 100 * time.Millisecond

// tickEventsFn emits, for tick i of the periodic sequence, the i-th slice of PerTick
// events, timestamped at the tick (so event time advances at the rate asked for).
type tickEventsFn struct {
	Lines   []string
	PerTick int
}

func (f *tickEventsFn) ProcessElement(ts beam.EventTime, i int64, emit func(beam.EventTime, string)) {
	from := int(i) * f.PerTick
	for j := from; j < min(from+f.PerTick, len(f.Lines)); j++ {
		emit(ts, f.Lines[j])
	}
}

// buildStreaming adds the streaming pipeline to s: from begin, a periodic sequence
// ticks every tickInterval for as long as lines last at rate per second, and the
// merge-on-read write commits windowSecs-second windows.
func buildStreaming(s beam.Scope, t target, lines []string, begin time.Time, rate, windowSecs int) error {
	perTick := max(1, rate*int(tickInterval/time.Millisecond)/1000)
	ticks := (len(lines) + perTick - 1) / perTick
	seq := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(begin, begin.Add(time.Duration(ticks)*tickInterval), tickInterval)))
	changes, bad := beam.ParDo2(s, parseEventOrDead, beam.ParDo(s, &tickEventsFn{Lines: lines, PerTick: perTick}, seq))
	res, err := iceberg.TryWrite(s, t.writeConfig("orders-cdc-stream"), changes,
		iceberg.WithTriggeringFrequency(time.Duration(windowSecs)*time.Second))
	if err != nil {
		return err
	}
	beam.ParDo0(s, countCommit, res.Snapshots)
	// textio.Write needs bounded input: log the dead letters instead.
	beam.ParDo0(s, logDeadLetter, beam.Flatten(s, bad, beam.ParDo(s, formatDeadLetter, res.DeadLetter)))
	return nil
}

// runStreaming applies lines in one streaming pipeline: a periodic sequence ticks
// every tickInterval for as long as the events last at rate per second, each tick
// emits its slice of the events, and the merge-on-read write commits each
// windowSecs-second window in order. The pipeline ends when the source does.
func runStreaming(ctx context.Context, w io.Writer, t target, lines []string, rate, windowSecs int) error {
	start := time.Now()
	if rate < 1 || windowSecs < 1 {
		return fmt.Errorf("--rate and --window_seconds must be at least 1, got %d and %d", rate, windowSecs)
	}
	p, s := beam.NewPipelineWithRoot()
	if err := buildStreaming(s, t, lines, time.Now().Add(500*time.Millisecond), rate, windowSecs); err != nil {
		return err
	}
	pr, err := jobrun.Run(ctx, p)
	if err != nil {
		return fmt.Errorf("streaming: %w", err)
	}
	commits := 0
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "icebeam.example.cdc" && c.Key.Name == "commits" {
			commits += int(c.Result())
		}
	}
	fmt.Fprintf(w, "streamed %d change events at %d/s in %ds windows\n", len(lines), rate, windowSecs)
	unit := "window commits"
	if !jobrun.HasMetrics(pr) {
		// The runner returned no metrics: count the sink's commits in the table.
		if commits, err = sinkCommits(ctx, t, "orders-cdc-stream"); err != nil {
			return err
		}
		if t.local == nil {
			unit = "window commits (not counted: the runner returned no metrics)"
		}
	}
	if err := report(ctx, w, t, len(lines), commits, unit, start); err != nil {
		return err
	}
	metrics := map[string]int64{}
	addWriteMetrics(metrics, pr)
	printWriteMetrics(w, metrics)
	return nil
}

// sinkCommits returns the number of snapshots of the embedded catalog's table that
// carry sinkID's committed-through token, 0 for a remote catalog.
func sinkCommits(ctx context.Context, t target, sinkID string) (int, error) {
	if t.local == nil {
		return 0, nil
	}
	tbl, err := t.local.LoadTable(ctx, strings.Split(t.table, "."))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sn := range tbl.Metadata().Snapshots() {
		if sn.Summary != nil {
			if _, ok := sn.Summary.Properties["beam.cdc.committed-through-ms."+sinkID]; ok {
				n++
			}
		}
	}
	return n, nil
}

var commitsCounter = beam.NewCounter("icebeam.example.cdc", "commits")

// addWriteMetrics adds the icebeam counters of a pipeline run (see the README's
// write counters) to m.
func addWriteMetrics(m map[string]int64, pr beam.PipelineResult) {
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "icebeam" {
			m[c.Key.Name] += c.Result()
		}
	}
}

// printWriteMetrics prints the icebeam counters of m that are not zero, by name.
func printWriteMetrics(w io.Writer, m map[string]int64) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	fmt.Fprintf(w, "write metrics: %s\n", strings.Join(parts, " "))
}

func countCommit(ctx context.Context, si iceberg.SnapshotInfo) {
	if !si.Skipped {
		commitsCounter.Inc(ctx, 1)
	}
}

func logDeadLetter(ctx context.Context, line string) {
	log.Printf("dead letter: %s", line)
}

func formatDeadLetter(d iceberg.DeadLetter) string {
	return fmt.Sprintf("%s: %s: %s", d.Table, d.Reason, d.Row)
}

// report reads the table back with a filter and prints the summary.
func report(ctx context.Context, w io.Writer, t target, events, batches int, unit string, start time.Time) error {
	out := t.outDir + "/read.txt"
	p, s := beam.NewPipelineWithRoot()
	rows, err := iceberg.TryRead(s, iceberg.ReadConfig{
		Table: t.table, CatalogName: t.name, CatalogProperties: t.props, Filter: readFilter,
	}, iceberg.WithOutputType(reflect.TypeOf(Order{})))
	if err != nil {
		return err
	}
	textio.Write(s, out, beam.ParDo(s, formatOrder, rows))
	if _, err := jobrun.Run(ctx, p); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	lines, err := readLines(out)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "applied %d change events in %d %s to %s (merge-on-read, deletion vectors)\n", events, batches, unit, t.table)
	if t.local != nil {
		tbl, err := t.local.LoadTable(ctx, strings.Split(t.table, "."))
		if err != nil {
			return err
		}
		sum := tbl.CurrentSnapshot().Summary.Properties
		snaps := 0
		for range tbl.Metadata().Snapshots() {
			snaps++
		}
		fmt.Fprintf(w, "table: format-version %d, %d snapshots, %s live rows, %s data files, %s deletion vectors, %s deleted positions\n",
			tbl.Metadata().Version(), snaps, liveRows(sum), sum["total-data-files"], sum["total-delete-files"], sum["total-position-deletes"])
	}
	printOrders(w, lines)
	fmt.Fprintf(w, "done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func liveRows(sum map[string]string) string {
	var total, deletes int
	fmt.Sscan(sum["total-records"], &total)
	fmt.Sscan(sum["total-position-deletes"], &deletes)
	return fmt.Sprint(total - deletes)
}

// Generate returns n synthetic Debezium change events, deterministic from seed:
// inserts, updates and deletes (each followed by its tombstone, a null event) over a
// growing key space.
func Generate(n int, seed int64) []string {
	r := rand.New(rand.NewSource(seed))
	states := []string{"NY", "CA", "TX", "WA", "MA"}
	live := map[int64]Order{}
	var keys []int64
	out := make([]string, 0, n)
	next := int64(1)
	emit := func(op string, before, after *Order, lsn int64) {
		e := map[string]any{"op": op, "ts_ms": 1732000000000 + lsn, "source": map[string]any{"lsn": lsn}, "before": before, "after": after}
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	for lsn := int64(1); len(out) < n; lsn++ {
		switch k := r.Float64(); {
		case k < 0.5 || len(keys) == 0:
			o := Order{OrderID: next, Customer: fmt.Sprintf("c%02d", next%37), State: states[r.Intn(len(states))], Amount: float64(r.Intn(100000)) / 100}
			next++
			live[o.OrderID] = o
			keys = append(keys, o.OrderID)
			emit("c", nil, &o, lsn)
		case k < 0.85:
			id := keys[r.Intn(len(keys))]
			old, nw := live[id], live[id]
			nw.State, nw.Amount = states[r.Intn(len(states))], float64(r.Intn(100000))/100
			live[id] = nw
			emit("u", &old, &nw, lsn)
		default:
			i := r.Intn(len(keys))
			id := keys[i]
			old := live[id]
			delete(live, id)
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			emit("d", &old, nil, lsn)
			if len(out) < n {
				out = append(out, "null") // the tombstone Debezium sends after a delete
			}
		}
	}
	return out
}
