package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

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
		gone[k.(int64)] = true
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
