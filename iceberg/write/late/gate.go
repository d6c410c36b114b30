package late

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Verdict is what Gate.Check decides for a row.
type Verdict int

const (
	// Pass: write the row. Its window is open, or committed by this run less than the
	// allowed lateness ago (the row then reaches the commit step as a late pane).
	Pass Verdict = iota
	// TooLate: the row's window closed more than the allowed lateness before the
	// sink's newest committed window; the row goes to the dead letter output.
	TooLate
	// Replayed: an earlier run of the sink committed the row's window. The row is a
	// replay unless that run did not commit it: the caller checks it against what
	// that run committed (ReplayIndex for appends, the sequence number for changes).
	Replayed
)

// Gate sorts the rows of a windowed write by their window against the sink's
// token (the newest window it committed, and how far earlier runs had committed):
// see Verdict. Lateness follows Beam's definition, measured from the end of the row's
// window, with the sink's newest committed window standing in for the watermark the
// DoFn cannot see: the commit step commits a window when the watermark passes its end,
// so that window trails the watermark by the commit latency, and a row the gate lets
// through is never dropped by the runner, whose allowed lateness is longer. The gate
// reads the token at most once per table and Refresh, and again (at most every
// Refresh/100) for a row of a window the token it holds says is committed or older
// than the newest row it has seen by more than the lateness. A nil Gate lets
// every row pass.
type Gate struct {
	// SinkID is the sink whose token is compared; RunID is this run of it.
	SinkID, RunID string
	// LatenessMs is allowed_lateness_seconds in milliseconds; negative disables the
	// gate (writes without windows).
	LatenessMs int64
	// Refresh bounds how long a token read stays in use (default 1 s).
	Refresh time.Duration

	tokens map[string]gateToken
}

type gateToken struct {
	found   bool
	tok     commit.Token
	through int64 // committed-through; 0 when the sink has no token
	prior   int64 // how far earlier runs committed
	read    time.Time
	newest  int64 // the newest window end of the table's rows seen so far
}

// NewGate returns the gate of sink sinkID's run runID: disabled unless the write
// is windowed.
func NewGate(sinkID, runID string, windowed bool, latenessMs int64) *Gate {
	g := &Gate{SinkID: sinkID, RunID: runID, LatenessMs: -1}
	if windowed {
		g.LatenessMs = latenessMs
	}
	return g
}

// Check returns the verdict for a row of window w bound for table dest (ident in
// cat), with the reason when TooLate, and the sink's token as last read (found
// false when it has none); err is a failure to read the table.
func (g *Gate) Check(ctx context.Context, cat catalog.Catalog, dest string, ident table.Identifier, w beam.Window) (v Verdict, reason string, tok commit.Token, err error) {
	if g == nil || g.LatenessMs < 0 {
		return Pass, "", commit.Token{}, nil
	}
	if _, ok := w.(window.GlobalWindow); ok {
		return Pass, "", commit.Token{}, nil
	}
	if g.tokens == nil {
		g.tokens = map[string]gateToken{}
	}
	refresh := g.Refresh
	if refresh <= 0 {
		refresh = time.Second
	}
	end := commit.WindowEnd(w)
	gt, ok := g.tokens[dest]
	// A row of a window the held token says is committed, or older than the newest
	// row seen by more than the lateness, may be late: read the token again.
	suspect := ok && (end <= gt.through || end+g.LatenessMs < gt.newest) && time.Since(gt.read) > refresh/100
	if !ok || suspect || time.Since(gt.read) > refresh {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return Pass, "", commit.Token{}, config.WrapOp("write", dest, err)
		}
		w, err := commit.CheckWindow(tbl.Metadata(), table.MainBranch, commit.WindowRef{SinkID: g.SinkID, RunID: g.RunID})
		if err != nil {
			return Pass, "", commit.Token{}, config.WrapOp("write", dest, err)
		}
		gt = gateToken{found: w.Found, tok: w.Newest, read: time.Now(), newest: gt.newest}
		if w.Found {
			gt.through = w.Newest.CommittedThroughMs
			gt.prior = w.Newest.PriorThrough(g.SinkID, g.RunID)
		}
	}
	gt.newest = max(gt.newest, end)
	g.tokens[dest] = gt
	switch {
	case !gt.found || end > gt.through:
		return Pass, "", gt.tok, nil
	case end <= gt.prior:
		return Replayed, "", gt.tok, nil
	case end+g.LatenessMs < gt.through:
		return TooLate, fmt.Sprintf("late: its window ending %s closed more than allowed_lateness_seconds=%d before the window ending %s that sink %s has already committed to %s",
			time.UnixMilli(end+1).UTC().Format(time.RFC3339Nano), g.LatenessMs/1000,
			time.UnixMilli(gt.through+1).UTC().Format(time.RFC3339Nano), g.SinkID, dest), gt.tok, nil
	default:
		return Pass, "", gt.tok, nil
	}
}

// rowSeed makes the row hashes of one process comparable.
var rowSeed = maphash.MakeSeed()
