package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestMain(m *testing.M) { runnertest.Main(m) }

// TestQuickstart runs the example and checks its report against the rows computed
// directly from the generator, minus the deleted orders.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	got := out.String()

	gone := map[int64]bool{}
	for _, k := range deleted {
		gone[k] = true
	}
	var want []string
	var orders []Order
	generateOrders(nil, func(o Order) { orders = append(orders, o) })
	for _, o := range orders {
		if o.State == "NY" && o.Amount > 480 && o.OrderID <= 600 && !gone[o.OrderID] {
			want = append(want, "  "+formatOrder(OrderAmount{OrderID: o.OrderID, Amount: o.Amount}))
		}
	}
	for _, line := range []string{
		"wrote 1000 orders to shop.orders (format-version 3)",
		fmt.Sprintf("deleted orders %v with deletion vectors: 5 positions,", deleted),
		"5 position deletes, 995 rows live",
		fmt.Sprintf("read %d orders where", len(want)),
		strings.Join(want, "\n") + "\ndone in",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("output lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "order   13 ") || strings.Contains(got, "order  108 ") {
		t.Errorf("deleted orders were read back:\n%s", got)
	}
}

// TestQuickstartStreaming runs the streaming variant on prism for 3 s of ticks
// (15 ticks in three 1 s windows) and checks both tables: each sink committed more
// than one window, oldest first (its committed-through token strictly increases
// from snapshot to snapshot), the append table holds every order once, and the
// merge-on-read table exactly the orders the changes leave, with their last amount.
func TestQuickstartStreaming(t *testing.T) {
	runnertest.PlainUniversal(t) // the example itself must get past a failed metrics call
	const d = 3 * time.Second
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runStreaming(context.Background(), &out, dir, d); err != nil {
		t.Fatal(err)
	}
	ticks := int64(d / streamTick)
	cat, err := openLocalCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })

	var orders, live []string
	for i := range ticks {
		tickOrders(i, func(o Order) { orders = append(orders, fmt.Sprintf("{order_id=%d}", o.OrderID)) })
	}
	model := map[int64]float64{}
	for i := range ticks {
		tickChanges(i, func(c OrderChange) {
			if c.Op == "d" {
				delete(model, c.OrderID)
			} else {
				model[c.OrderID] = c.Amount
			}
		})
	}
	for id, amount := range model {
		live = append(live, fmt.Sprintf("{order_id=%d, amount=%s}", id, strconv.FormatFloat(amount, 'g', -1, 64)))
	}
	for _, tc := range []struct {
		table, sink string
		cols        []string
		want        []string
	}{
		{streamTable, "quickstart-stream", []string{"order_id"}, orders},
		{changesTable, "quickstart-changes", []string{"order_id", "amount"}, live},
	} {
		tbl, err := cat.Catalog.LoadTable(context.Background(), strings.Split(tc.table, "."))
		if err != nil {
			t.Fatal(err)
		}
		icebergtest.RequireValid(t, tbl)
		var through []int64
		for _, snap := range tbl.Metadata().Snapshots() {
			if snap.Summary == nil {
				continue
			}
			if v, ok := snap.Summary.Properties["beam.cdc.committed-through-ms."+tc.sink]; ok {
				ms, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				through = append(through, ms)
			}
		}
		increasing := len(through) > 1
		for i := 1; i < len(through); i++ {
			increasing = increasing && through[i] > through[i-1]
		}
		if !increasing {
			t.Errorf("%s: committed-through tokens %v, want more than one, increasing", tc.table, through)
		}
		got := icebergtest.RowStrings(icebergtest.ReadAll(t, tbl, nil, tc.cols...), tc.cols)
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s rows:\n got %v\nwant %v", tc.table, got, tc.want)
		}
		if line := fmt.Sprintf("%s: %d window commits, %d rows live", tc.table, len(through), len(tc.want)); !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
}
