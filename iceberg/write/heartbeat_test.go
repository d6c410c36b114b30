package write

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// TestHeartbeatKeepsTokenAcrossExpiry: an idle sink whose token sits in an old
// snapshot loses it when other writers' commits push it out and snapshots expire,
// unless the heartbeat (a pipeline on prism) refreshed it into a recent snapshot; a
// rerun of the committed window is then still skipped. Without the heartbeat the
// rerun is still skipped, from the committed-through table property.
func TestHeartbeatKeepsTokenAcrossExpiry(t *testing.T) {
	ctx := context.Background()
	for _, heartbeat := range []bool{false, true} {
		name := map[bool]string{false: "without heartbeat", true: "with heartbeat"}[heartbeat]
		t.Run(name, func(t *testing.T) {
			lc := writetest.NewLocalCatalog(t)
			tbl := writetest.CreateTable(t, lc.Catalog, "hb", writetest.IDNameSchema())
			ident := tbl.Identifier()
			spec := testSpec(t, lc, "db.hb")
			commitWindow := func() commit.CommitResult {
				t.Helper()
				res, err := writetest.FastCommitter.Commit(ctx, lc.Catalog, ident, commit.CommitRequest{
					SinkID: spec.SinkID, WindowEndMs: 5000, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 5)})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := commitWindow(); res.Skipped {
				t.Fatal("first commit skipped")
			}
			// Another writer keeps committing while the sink is idle.
			for i := range 3 {
				if _, err := writetest.FastCommitter.Commit(ctx, lc.Catalog, ident, commit.CommitRequest{
					SinkID: "other", WindowEndMs: int64(i + 1), DataFiles: writetest.WriteIDFiles(t, tbl, 100+int64(i)*10, 2)}); err != nil {
					t.Fatal(err)
				}
			}
			if heartbeat {
				p, s := beam.NewPipelineWithRoot()
				Heartbeat(s, spec, time.Now(), time.Now().Add(1500*time.Millisecond), 500*time.Millisecond)
				if err := ptest.Run(p); err != nil {
					t.Fatal(err)
				}
			}
			cur := writetest.ExpireAllButNewest(t, lc, ident)
			tok, found, err := commit.FindToken(cur.Metadata(), "", spec.SinkID)
			if err != nil {
				t.Fatal(err)
			}
			if found != heartbeat {
				t.Fatalf("token found after expiry = %v, want %v", found, heartbeat)
			}
			if !heartbeat {
				// The token's snapshots are gone, but the table property the committer
				// keeps still holds the window: a rerun is skipped, not replayed.
				if res := commitWindow(); !res.Skipped {
					t.Errorf("rerun after the token expired = %+v, want skipped (from the table property)", res)
				}
				if got := writetest.CountRows(t, lc.Catalog, ident); got != 11 {
					t.Errorf("rows = %d, want 11", got)
				}
				return
			}
			if tok.CommittedThroughMs != 5000 || tok.Summary.Properties[commit.SummaryHeartbeat] != "true" {
				t.Errorf("token after expiry = %+v, want the heartbeat's copy of 5000", tok)
			}
			if res := commitWindow(); !res.Skipped {
				t.Errorf("rerun of the committed window after expiry = %+v, want skipped", res)
			}
			if got := writetest.CountRows(t, lc.Catalog, ident); got != 11 {
				t.Errorf("rows = %d, want 11 (5 of the sink, 6 of the other writer)", got)
			}
		})
	}
}

// TestHeartbeatCadence: over an idle span of 6 s with token_heartbeat_seconds of 1 s,
// the heartbeat refreshes the sink's token at every tick (within one tick): 5 to 7
// refresh snapshots. Before the fix a tick skipped a token refreshed by the previous
// one (its commit came a little after that tick), so it fired every other tick.
func TestHeartbeatCadence(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6 s pipeline")
	}
	ctx := context.Background()
	lc := writetest.NewLocalCatalog(t)
	tbl := writetest.CreateTable(t, lc.Catalog, "cadence", writetest.IDNameSchema())
	spec := testSpec(t, lc, "db.cadence")
	if _, err := writetest.FastCommitter.Commit(ctx, lc.Catalog, tbl.Identifier(), commit.CommitRequest{
		SinkID: spec.SinkID, WindowEndMs: 5000, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the token is due at the first tick
	const span, interval = 6 * time.Second, time.Second
	p, s := beam.NewPipelineWithRoot()
	start := time.Now()
	Heartbeat(s, spec, start, start.Add(span), interval)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	cur, err := lc.Catalog.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	var beats []int64
	for _, snap := range cur.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[commit.SummaryHeartbeat] == "true" {
			beats = append(beats, snap.TimestampMs-start.UnixMilli())
		}
	}
	if n := len(beats); n < 5 || n > 7 {
		t.Errorf("%d heartbeats in %s at %s (at ms %v), want 6 ± 1", n, span, interval, beats)
	}
}
