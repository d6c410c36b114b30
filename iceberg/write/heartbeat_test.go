package write

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// newHeartbeatCatalog is a local catalog (reachable by name and properties, as the
// heartbeat's DoFn needs) with the namespace db.
func newHeartbeatCatalog(t *testing.T) *icebergtest.LocalCatalog {
	t.Helper()
	lc := icebergtest.NewLocalCatalog(t)
	if err := lc.Catalog.CreateNamespace(context.Background(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return lc
}

// expireAllButNewest expires every snapshot of ident but the current one, as a
// maintenance job with a short retention would.
func expireAllButNewest(t *testing.T, lc *icebergtest.LocalCatalog, ident table.Identifier) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := lc.Catalog.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots left after expiry, want 1", n)
	}
	return tbl
}

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
			lc := newHeartbeatCatalog(t)
			tbl := createTestTable(t, lc.Catalog, "hb", idNameSchema())
			ident := tbl.Identifier()
			spec := testSpec(t, lc, "db.hb")
			commit := func() CommitResult {
				t.Helper()
				res, err := fastCommitter.Commit(ctx, lc.Catalog, ident, CommitRequest{
					SinkID: spec.SinkID, WindowEndMs: 5000, DataFiles: writeIDFiles(t, tbl, 0, 5)})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := commit(); res.Skipped {
				t.Fatal("first commit skipped")
			}
			// Another writer keeps committing while the sink is idle.
			for i := range 3 {
				if _, err := fastCommitter.Commit(ctx, lc.Catalog, ident, CommitRequest{
					SinkID: "other", WindowEndMs: int64(i + 1), DataFiles: writeIDFiles(t, tbl, 100+int64(i)*10, 2)}); err != nil {
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
			cur := expireAllButNewest(t, lc, ident)
			tok, found, err := FindToken(cur.Metadata(), "", spec.SinkID)
			if err != nil {
				t.Fatal(err)
			}
			if found != heartbeat {
				t.Fatalf("token found after expiry = %v, want %v", found, heartbeat)
			}
			if !heartbeat {
				// The token's snapshots are gone, but the table property the committer
				// keeps still holds the window: a rerun is skipped, not replayed.
				if res := commit(); !res.Skipped {
					t.Errorf("rerun after the token expired = %+v, want skipped (from the table property)", res)
				}
				if got := countRows(t, lc.Catalog, ident); got != 11 {
					t.Errorf("rows = %d, want 11", got)
				}
				return
			}
			if tok.CommittedThroughMs != 5000 || tok.Summary.Properties[SummaryHeartbeat] != "true" {
				t.Errorf("token after expiry = %+v, want the heartbeat's copy of 5000", tok)
			}
			if res := commit(); !res.Skipped {
				t.Errorf("rerun of the committed window after expiry = %+v, want skipped", res)
			}
			if got := countRows(t, lc.Catalog, ident); got != 11 {
				t.Errorf("rows = %d, want 11 (5 of the sink, 6 of the other writer)", got)
			}
		})
	}
}

// TestRefreshTokenOnlyWhenOld: a fresh token is left alone; no token, nothing to do.
func TestRefreshTokenOnlyWhenOld(t *testing.T) {
	ctx := context.Background()
	lc := newHeartbeatCatalog(t)
	tbl := createTestTable(t, lc.Catalog, "hb2", idNameSchema())
	ident := tbl.Identifier()
	if id, err := RefreshToken(ctx, lc.Catalog, ident, "s", 0); err != nil || id != 0 {
		t.Fatalf("RefreshToken without token = %d, %v; want 0, nil", id, err)
	}
	if _, err := fastCommitter.Commit(ctx, lc.Catalog, ident, CommitRequest{SinkID: "s", WindowEndMs: 7, DataFiles: writeIDFiles(t, tbl, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if id, err := RefreshToken(ctx, lc.Catalog, ident, "s", time.Hour); err != nil || id != 0 {
		t.Fatalf("RefreshToken of a fresh token = %d, %v; want 0, nil", id, err)
	}
	id, err := RefreshToken(ctx, lc.Catalog, ident, "s", 0)
	if err != nil || id == 0 {
		t.Fatalf("RefreshToken of an old token = %d, %v", id, err)
	}
	cur, err := lc.Catalog.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	snap := cur.Metadata().CurrentSnapshot()
	if snap.SnapshotID != id || snap.Summary.Properties[CommittedThroughKey("s")] != "7" || snap.Summary.Properties["added-data-files"] != "" && snap.Summary.Properties["added-data-files"] != "0" {
		t.Errorf("heartbeat snapshot summary = %+v", snap.Summary)
	}
	if got := countRows(t, lc.Catalog, ident); got != 1 {
		t.Errorf("rows = %d, want 1", got)
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
	lc := newHeartbeatCatalog(t)
	tbl := createTestTable(t, lc.Catalog, "cadence", idNameSchema())
	spec := testSpec(t, lc, "db.cadence")
	if _, err := fastCommitter.Commit(ctx, lc.Catalog, tbl.Identifier(), CommitRequest{
		SinkID: spec.SinkID, WindowEndMs: 5000, DataFiles: writeIDFiles(t, tbl, 0, 5)}); err != nil {
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
		if snap.Summary != nil && snap.Summary.Properties[SummaryHeartbeat] == "true" {
			beats = append(beats, snap.TimestampMs-start.UnixMilli())
		}
	}
	if n := len(beats); n < 5 || n > 7 {
		t.Errorf("%d heartbeats in %s at %s (at ms %v), want 6 ± 1", n, span, interval, beats)
	}
}

// TestRefreshTokenFaults: the heartbeat commits through the Committer's loop: a
// concurrent commit is retried, and a heartbeat whose response was lost is found
// (the heartbeat snapshot holds the token) and reported, not made twice.
func TestRefreshTokenFaults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		before    func(t *testing.T, inner catalog.Catalog, ident table.Identifier) func(n int)
		after     func(n int, err error) error
		wantCalls int
	}{
		{name: "concurrent commit is retried",
			before: func(t *testing.T, inner catalog.Catalog, ident table.Identifier) func(n int) {
				return func(n int) {
					if n == 0 {
						commitOther(t, inner, ident, 100, 1)
					}
				}
			},
			wantCalls: 2},
		{name: "lost response is found", after: lostFirstResponse, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newTestCatalog(t)
			tbl := createTestTable(t, inner, "hb", idNameSchema())
			ident := tbl.Identifier()
			if _, err := fastCommitter.Commit(ctx, inner, ident, CommitRequest{SinkID: "s", WindowEndMs: 7, DataFiles: writeIDFiles(t, tbl, 0, 1)}); err != nil {
				t.Fatal(err)
			}
			fc := &faultCatalog{Catalog: inner, after: tc.after}
			if tc.before != nil {
				fc.before = tc.before(t, inner, ident)
			}
			id, err := RefreshToken(ctx, fc, ident, "s", 0)
			if err != nil || id == 0 {
				t.Fatalf("RefreshToken = %d, %v; want a heartbeat snapshot", id, err)
			}
			if fc.commits != tc.wantCalls {
				t.Errorf("CommitTable calls = %d, want %d", fc.commits, tc.wantCalls)
			}
			cur, err := inner.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			beats := 0
			for _, s := range cur.Metadata().Snapshots() {
				if s.Summary != nil && s.Summary.Properties[SummaryHeartbeat] == "true" {
					beats++
				}
			}
			if head := cur.CurrentSnapshot(); beats != 1 || head.SnapshotID != id || head.Summary.Properties[CommittedThroughKey("s")] != "7" {
				t.Errorf("%d heartbeat snapshots, head %d (%v), want one, snapshot %d", beats, head.SnapshotID, head.Summary, id)
			}
		})
	}
}
