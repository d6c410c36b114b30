package write

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// LateGate finds rows too late to write: a row is too late when its window ended more
// than the allowed lateness before the newest window its sink has committed to the
// table. Such a row can no longer be committed in window order (and the runner may
// already have closed its window), so it goes to the dead letter output rather than
// being dropped by the runner. The gate looks the sink's token up at most once per
// table and refresh interval, and again for a row whose window is older than the
// newest this gate has seen by more than the allowed lateness (a row that may be
// late). A row the gate misses because its token read was stale is not lost: it
// arrives in a late pane and is committed. A nil LateGate lets every row pass.
type LateGate struct {
	// SinkID is the sink whose token is compared.
	SinkID string
	// LatenessMs is allowed_lateness_seconds in milliseconds; negative disables the
	// gate (writes without windows).
	LatenessMs int64
	// Refresh bounds how long a token read stays in use (default 1 s).
	Refresh time.Duration

	through map[string]gateToken
}

type gateToken struct {
	through int64 // committed-through; 0 when the sink has no token
	read    time.Time
	newest  int64 // the newest window end of the table's rows seen so far
}

// NewLateGate returns the gate of spec: disabled unless spec.Windowed.
func NewLateGate(spec Spec) *LateGate {
	g := &LateGate{SinkID: spec.SinkID, LatenessMs: -1}
	if spec.Windowed {
		g.LatenessMs = spec.LatenessMs
	}
	return g
}

// Check returns a non-empty reason when a row of window w bound for table dest (ident
// in cat) is too late; err is a failure to read the table.
func (g *LateGate) Check(ctx context.Context, cat catalog.Catalog, dest string, ident table.Identifier, w beam.Window) (reason string, err error) {
	if g == nil || g.LatenessMs < 0 {
		return "", nil
	}
	if g.through == nil {
		g.through = map[string]gateToken{}
	}
	if _, ok := w.(window.GlobalWindow); ok {
		return "", nil
	}
	refresh := g.Refresh
	if refresh <= 0 {
		refresh = time.Second
	}
	end := WindowEnd(w)
	tok, ok := g.through[dest]
	suspect := ok && end+g.LatenessMs < tok.newest && time.Since(tok.read) > refresh/100
	if !ok || suspect || time.Since(tok.read) > refresh {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return "", fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
		t, found, err := FindToken(tbl.Metadata(), table.MainBranch, g.SinkID)
		if err != nil {
			return "", fmt.Errorf("iceberg: write %s: %w", dest, err)
		}
		tok = gateToken{read: time.Now(), newest: tok.newest}
		if found {
			tok.through = t.CommittedThroughMs
		}
	}
	tok.newest = max(tok.newest, end)
	g.through[dest] = tok
	if tok.through > 0 && end+g.LatenessMs < tok.through {
		return fmt.Sprintf("late: its window ending %s closed more than allowed_lateness_seconds=%d before the window ending %s that sink %s has already committed to %s",
			time.UnixMilli(end+1).UTC().Format(time.RFC3339Nano), g.LatenessMs/1000,
			time.UnixMilli(tok.through+1).UTC().Format(time.RFC3339Nano), g.SinkID, dest), nil
	}
	return "", nil
}
