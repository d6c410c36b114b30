package iceberg_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	register.DoFn1x0[row.Row](&recordFn{})
}

// arrival is one row a test pipeline emitted, with the time it reached recordFn.
type arrival struct {
	row row.Row
	at  time.Time
}

// recorded holds the rows recordFn saw, by key. prism runs a test's pipeline in the
// test process (loopback workers), so a streaming test can watch rows arrive while
// the pipeline runs.
var recorded = struct {
	sync.Mutex
	m map[string][]arrival
}{m: map[string][]arrival{}}

// recordFn records each row under Key with its arrival time.
type recordFn struct {
	Key string
}

func (fn *recordFn) ProcessElement(r row.Row) {
	recorded.Lock()
	defer recorded.Unlock()
	recorded.m[fn.Key] = append(recorded.m[fn.Key], arrival{row: r, at: time.Now()})
}

// arrivals returns the rows recorded under key so far.
func arrivals(key string) []arrival {
	recorded.Lock()
	defer recorded.Unlock()
	return slices.Clone(recorded.m[key])
}

// waitArrivals waits until at least n rows were recorded under key, or until deadline;
// it reports whether they were.
func waitArrivals(key string, n int, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		if len(arrivals(key)) >= n {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// sameRows fails the test unless got and want hold the same rows (as multisets).
func sameRows(t *testing.T, got []arrival, want []any) {
	t.Helper()
	var g, w []string
	for _, a := range got {
		g = append(g, fmt.Sprint(a.row))
	}
	for _, r := range want {
		w = append(w, fmt.Sprint(r))
	}
	slices.Sort(g)
	slices.Sort(w)
	if slices.Equal(g, w) {
		return
	}
	var missing, extra []string
	for _, r := range w {
		if i := slices.Index(g, r); i >= 0 {
			g = slices.Delete(g, i, i+1)
		} else {
			missing = append(missing, r)
		}
	}
	extra = g
	t.Errorf("rows differ: %d missing, %d unexpected\nmissing (first 5): %v\nunexpected (first 5): %v",
		len(missing), len(extra), missing[:min(5, len(missing))], extra[:min(5, len(extra))])
}
