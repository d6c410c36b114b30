package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestMain(m *testing.M) { runnertest.Main(m) }

// model applies the events in order to a map, the state the table must end in, and
// counts the tombstones (null events).
func model(t *testing.T, lines []string) (live map[int64]Order, tombstones int) {
	t.Helper()
	live = map[int64]Order{}
	for _, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Op == nil {
			tombstones++
			continue
		}
		switch *e.Op {
		case "r", "c", "u":
			live[e.After.OrderID] = *e.After
		case "d":
			delete(live, e.Before.OrderID)
		default:
			t.Fatalf("unknown op in %s", l)
		}
	}
	return live, tombstones
}

// checkOrders loads shop.orders from cat, checks the table's invariants and that
// it holds live rows (iceberg-go's own scan), and returns it.
func checkOrders(t *testing.T, cat *icebergtest.LocalCatalog, live int) *table.Table {
	t.Helper()
	tbl, err := cat.Catalog.LoadTable(context.Background(), []string{"shop", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	if n := icebergtest.ReadAll(t, tbl, nil).NumRows(); n != int64(live) {
		t.Errorf("table has %d rows, model %d", n, live)
	}
	return tbl
}

// TestCDCExample runs the example on the shipped sample (and on a generated stream) and
// checks its summary and the rows it reads back against the model of the events.
func TestCDCExample(t *testing.T) {
	cases := []struct {
		name    string
		lines   []string
		batches int
	}{
		{"sample", splitLines(sampleEvents), 3},
		{"generated", Generate(3000, 9), 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cat, err := icebergtest.NewLocalCatalogAt(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			*numShards = 4
			var out bytes.Buffer
			tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
			if err := run(context.Background(), &out, tg, c.lines, c.batches); err != nil {
				t.Fatal(err)
			}
			got := out.String()

			live, tombstones := model(t, c.lines)
			if tombstones == 0 {
				t.Fatal("the events hold no tombstone")
			}
			var want []string
			for _, o := range live {
				if o.State == "NY" && o.Amount >= 500 {
					want = append(want, formatOrder(o))
				}
			}
			sort.Strings(want)
			for _, line := range []string{
				fmt.Sprintf("applied %d change events in %d batches", len(c.lines), c.batches),
				fmt.Sprintf("format-version 3, %d snapshots, %d live rows", c.batches, len(live)),
				fmt.Sprintf("read %d orders where %s", len(want), readFilter),
				fmt.Sprintf("write metrics: commit_attempts=%d commits=%d ", c.batches, c.batches),
				fmt.Sprintf(" tombstones_skipped=%d", tombstones),
			} {
				if !strings.Contains(got, line) {
					t.Errorf("output lacks %q:\n%s", line, got)
				}
			}
			// The table is valid and holds the model's row count (iceberg-go's own scan).
			checkOrders(t, cat, len(live))
			// The read-back file holds exactly the filtered model rows.
			b, err := os.ReadFile(filepath.Join(dir, "read.txt"))
			if err != nil {
				t.Fatal(err)
			}
			gotRead := splitLines(string(b))
			sort.Strings(gotRead)
			if strings.Join(gotRead, "\n") != strings.Join(want, "\n") {
				t.Errorf("read back:\n%s\nwant:\n%s", strings.Join(gotRead, "\n"), strings.Join(want, "\n"))
			}
			// No event went to the dead letter output.
			deads, _ := filepath.Glob(filepath.Join(dir, "dead-letter-*"))
			for _, f := range deads {
				if b, _ := os.ReadFile(f); len(strings.TrimSpace(string(b))) > 0 {
					t.Errorf("dead letters in %s:\n%s", filepath.Base(f), b)
				}
			}
			// Prior rows were deleted with deletion vectors, in Puffin files.
			puffins, _ := filepath.Glob(filepath.Join(dir, "warehouse", "shop.db", "orders", "data", "*.puffin"))
			if len(puffins) == 0 {
				t.Errorf("no .puffin files in the table's data directory")
			}
		})
	}
}

// TestCDCExampleSeparateWorkerProcess runs the CDC pipeline with prism starting its
// workers as separate processes (as Dataflow does): everything the merge-on-read write
// and the read need must travel in their serialized configuration and the catalog.
func TestCDCExampleSeparateWorkerProcess(t *testing.T) {
	dir := t.TempDir()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	icebergtest.ProcessEnvironment(t)
	*numShards = 2
	lines := splitLines(sampleEvents)
	var out bytes.Buffer
	tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
	if err := run(context.Background(), &out, tg, lines, 2); err != nil {
		t.Fatal(err)
	}
	live, _ := model(t, lines)
	if want := fmt.Sprintf("%d live rows", len(live)); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	checkOrders(t, cat, len(live))
}

// TestCDCExampleStreaming runs the example as one streaming pipeline (an unbounded
// periodic source, 1 s commit windows) and checks the table against the model of the
// events, that several windows were committed in order, and the summary.
func TestCDCExampleStreaming(t *testing.T) {
	runnertest.PlainUniversal(t) // the example itself must get past a failed metrics call
	dir := t.TempDir()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	*numShards = 4
	lines := Generate(3000, 5)
	var out bytes.Buffer
	tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
	if err := runStreaming(context.Background(), &out, tg, lines, 1000, 1); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	live, _ := model(t, lines)
	tbl := checkOrders(t, cat, len(live))
	// Windows committed in order: the sink's committed-through only grows.
	var through []string
	for _, s := range tbl.Metadata().Snapshots() {
		through = append(through, s.Summary.Properties["beam.cdc.committed-through-ms.orders-cdc-stream"])
	}
	if len(through) < 2 || !slices.IsSorted(through) {
		t.Errorf("committed-through per snapshot = %v, want at least 2 windows in order", through)
	}
	for _, line := range []string{
		"streamed 3000 change events at 1000/s in 1s windows",
		fmt.Sprintf("applied 3000 change events in %d window commits", len(through)),
		fmt.Sprintf("%d live rows", len(live)),
	} {
		if !strings.Contains(got, line) {
			t.Errorf("output lacks %q:\n%s", line, got)
		}
	}
}

// TestCDCExampleMaintain runs the example's batches and then its maintenance mode: the
// table ends with no delete file, at most one data file per partition (state), and
// still the model's rows; expiry keeps every batch sink's token (they are recent).
func TestCDCExampleMaintain(t *testing.T) {
	dir := t.TempDir()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	*numShards = 4
	lines := Generate(2000, 11)
	var out bytes.Buffer
	tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
	ctx := context.Background()
	if err := run(ctx, &out, tg, lines, 3); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := maintain(ctx, &out, tg); err != nil {
		t.Fatal(err)
	}
	live, _ := model(t, lines)
	states := map[string]bool{}
	for _, o := range live {
		states[o.State] = true
	}
	tbl, err := cat.Catalog.LoadTable(ctx, []string{"shop", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	files, deletes := icebergtest.DataFiles(t, tbl), icebergtest.DeleteFiles(t, tbl)
	if len(deletes) != 0 || len(files) == 0 || len(files) > len(states) {
		t.Errorf("after maintenance: %d data files (%d states), %d delete files", len(files), len(states), len(deletes))
	}
	for b := range 3 {
		tok, found, err := commit.FindToken(tbl.Metadata(), "", fmt.Sprintf("orders-cdc-batch-%d", b))
		if err != nil || !found || tok.FromProperty {
			t.Errorf("token of batch %d after maintenance: %+v found=%v err=%v", b, tok, found, err)
		}
	}
	if n := icebergtest.ReadAll(t, tbl, nil).NumRows(); n != int64(len(live)) {
		t.Errorf("table has %d rows, model %d", n, len(live))
	}
	want := fmt.Sprintf("data files %d -> %d, delete files (DVs) ", 0, len(files))
	if got := out.String(); !strings.Contains(got, "-> 0;") || !strings.Contains(got, fmt.Sprintf("-> %d, delete files", len(files))) {
		t.Errorf("output %q; want the counts before and after (%s...)", got, want[len("data files 0 -> "):])
	}
}

// TestCDCExampleInput runs the Dataflow-ready path (--input, --output) on local
// globs: one pipeline reads the events with textio, writes them, reads the table back
// after the commit and writes the dead letters and the read-back under the output
// prefix. The table and the files must match the model of the events.
func TestCDCExampleInput(t *testing.T) {
	dir := t.TempDir()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	*numShards = 4
	// Two input files, one glob: the sample and a generated stream on other keys.
	in := t.TempDir()
	sample := splitLines(sampleEvents)
	gen := Generate(1500, 3)
	for i := range gen {
		gen[i] = strings.ReplaceAll(gen[i], `"order_id":`, `"order_id":10000`) // keys apart from the sample's
	}
	bad := `{"op":"c","after":{"order_id":"not a number"}}`
	for name, lines := range map[string][]string{"a.jsonl": sample, "b.jsonl": append(gen, bad)} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "run1-")
	var buf bytes.Buffer
	tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
	if err := runInput(context.Background(), &buf, tg, filepath.Join(in, "*.jsonl"), out, "input-test"); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	live, tombstones := model(t, append(slices.Clone(sample), gen...))
	var want []string
	for _, o := range live {
		if o.State == "NY" && o.Amount >= 500 {
			want = append(want, formatOrder(o))
		}
	}
	sort.Strings(want)
	total := len(sample) + len(gen) + 1
	for _, line := range []string{
		fmt.Sprintf("applied %d change events from %s", total, filepath.Join(in, "*.jsonl")),
		"commits=1 ",
		fmt.Sprintf(" tombstones_skipped=%d", tombstones),
		fmt.Sprintf("read %d orders where %s", len(want), readFilter),
		"1 dead letters",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("output lacks %q:\n%s", line, got)
		}
	}
	checkOrders(t, cat, len(live))
	gotRead, err := readLines(out + "orders.txt")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(gotRead, "\n") != strings.Join(want, "\n") {
		t.Errorf("read back %d orders, want %d:\n%s", len(gotRead), len(want), strings.Join(gotRead, "\n"))
	}
	dead, err := readLines(out + "dead-letters.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || !strings.Contains(dead[0], "not a number") {
		t.Errorf("dead letters = %q, want the one malformed event", dead)
	}
}
