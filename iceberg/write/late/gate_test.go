package late

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// win is the 10 s window ending at second end (epoch): its token value is
// end*1000-1, its max timestamp in milliseconds.
func win(end int64) beam.Window {
	return window.IntervalWindow{Start: mtime.FromMilliseconds((end - 10) * 1000), End: mtime.FromMilliseconds(end * 1000)}
}

// commitWindow commits the rows ids of the window ending at second end to ident as
// run runID of sink "s".
func commitWindow(t *testing.T, cat catalog.Catalog, ident table.Identifier, runID string, end int64, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commit.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "s", RunID: runID, WindowEndMs: commit.WindowEnd(win(end)),
		DataFiles: writetest.WriteIDs(t, tbl, ids)}); err != nil {
		t.Fatal(err)
	}
}

// loadCounter counts the LoadTable calls through it.
type loadCounter struct {
	catalog.Catalog
	loads atomic.Int64
}

func (c *loadCounter) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.loads.Add(1)
	return c.Catalog.LoadTable(ctx, ident)
}

// TestGateVerdicts: after a restart, rows of windows the earlier run committed are
// Replayed; rows of windows this run committed pass within the lateness, measured
// from the sink's newest committed window, and are TooLate beyond it, with a
// reason naming the windows, the lateness and the sink; rows of open windows, of
// the global window, of a sink with no token, and every row of a disabled or nil
// gate pass.
func TestGateVerdicts(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	ident := writetest.CreateTable(t, cat, "gate", writetest.IDNameSchema()).Identifier()
	commitWindow(t, cat, ident, "run-1", 20, 1)
	commitWindow(t, cat, ident, "run-2", 30, 2)

	g := &Gate{SinkID: "s", RunID: "run-2", LatenessMs: 5_000}
	for _, tc := range []struct {
		end  int64
		want Verdict
	}{
		{40, Pass},     // open
		{30, Pass},     // committed by this run, within the lateness
		{25, Pass},     // closed 5 s before the newest committed window
		{24, TooLate},  // closed 6 s before it
		{20, Replayed}, // the earlier run committed it
		{10, Replayed},
	} {
		v, reason, tok, err := g.Check(ctx, cat, "db.gate", ident, win(tc.end))
		if err != nil {
			t.Fatal(err)
		}
		if v != tc.want {
			t.Errorf("window ending %d: verdict %d, want %d (reason %q)", tc.end, v, tc.want, reason)
		}
		if tok.CommittedThroughMs != 29_999 {
			t.Errorf("window ending %d: token through %d, want 29999", tc.end, tok.CommittedThroughMs)
		}
		if (reason != "") != (v == TooLate) {
			t.Errorf("window ending %d: verdict %d with reason %q", tc.end, v, reason)
		}
		if v == TooLate {
			for _, want := range []string{"late:", "allowed_lateness_seconds=5", "sink s", "db.gate", "1970-01-01T00:00:24Z", "1970-01-01T00:00:30Z"} {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q does not say %q", reason, want)
				}
			}
		}
	}

	pass := map[string]func() (Verdict, error){
		"global window": func() (Verdict, error) {
			v, _, _, err := g.Check(ctx, cat, "db.gate", ident, window.GlobalWindow{})
			return v, err
		},
		"sink without a token": func() (Verdict, error) {
			v, _, _, err := (&Gate{SinkID: "other", RunID: "run-2", LatenessMs: 5_000}).Check(ctx, cat, "db.gate", ident, win(10))
			return v, err
		},
		"gate of a write without windows": func() (Verdict, error) {
			v, _, _, err := NewGate("s", "run-2", false, 5_000).Check(ctx, cat, "db.gate", ident, win(24))
			return v, err
		},
		"nil gate": func() (Verdict, error) {
			var nilGate *Gate
			v, _, _, err := nilGate.Check(ctx, cat, "db.gate", ident, win(24))
			return v, err
		},
	}
	for name, check := range pass {
		if v, err := check(); err != nil || v != Pass {
			t.Errorf("%s: verdict %d, err %v; want Pass", name, v, err)
		}
	}
	if v, _, _, err := NewGate("s", "run-2", true, 5_000).Check(ctx, cat, "db.gate", ident, win(24)); err != nil || v != TooLate {
		t.Errorf("NewGate of a windowed write: verdict %d, err %v; want TooLate", v, err)
	}
}

// TestGateRereadsToken: the gate reads a table's token once per Refresh; a row the
// token it holds calls committed (or much older than the newest row seen) makes
// it read the token again sooner, after Refresh/100, so that a window another
// worker committed meanwhile gates the row.
func TestGateRereadsToken(t *testing.T) {
	ctx := context.Background()
	inner := writetest.NewCatalog(t)
	ident := writetest.CreateTable(t, inner, "reread", writetest.IDNameSchema()).Identifier()
	commitWindow(t, inner, ident, "run-1", 30, 1)
	cat := &loadCounter{Catalog: inner}
	g := &Gate{SinkID: "s", RunID: "run-1", LatenessMs: 5_000, Refresh: time.Minute}
	check := func(end int64, want Verdict, loads int64) {
		t.Helper()
		v, _, _, err := g.Check(ctx, cat, "db.reread", ident, win(end))
		if err != nil {
			t.Fatal(err)
		}
		if v != want || cat.loads.Load() != loads {
			t.Fatalf("window ending %d: verdict %d after %d token reads, want %d after %d", end, v, cat.loads.Load(), want, loads)
		}
	}
	check(40, Pass, 1)
	// Another worker commits the windows ending at 40 s and 50 s.
	commitWindow(t, inner, ident, "run-1", 40, 2)
	commitWindow(t, inner, ident, "run-1", 50, 3)
	// Not suspect with the token held (through 30 s): no read.
	check(41, Pass, 1)
	// Suspect (the token held says its window is committed): read again once
	// Refresh/100 has passed, and found too late for the newer token.
	time.Sleep(time.Minute/100 + 100*time.Millisecond)
	check(29, TooLate, 2)
	// Past Refresh every row reads the token again.
	g.Refresh = time.Millisecond
	time.Sleep(5 * time.Millisecond)
	check(60, Pass, 3)
}
