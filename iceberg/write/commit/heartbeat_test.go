package commit_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// TestRefreshTokenOnlyWhenOld: a fresh token is left alone; no token, nothing to do.
func TestRefreshTokenOnlyWhenOld(t *testing.T) {
	ctx := context.Background()
	lc := writetest.NewLocalCatalog(t)
	tbl := writetest.CreateTable(t, lc.Catalog, "hb2", writetest.IDNameSchema())
	ident := tbl.Identifier()
	if id, err := commit.RefreshToken(ctx, lc.Catalog, ident, "s", 0); err != nil || id != 0 {
		t.Fatalf("RefreshToken without token = %d, %v; want 0, nil", id, err)
	}
	if _, err := writetest.FastCommitter.Commit(ctx, lc.Catalog, ident, commit.CommitRequest{SinkID: "s", WindowEndMs: 7, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if id, err := commit.RefreshToken(ctx, lc.Catalog, ident, "s", time.Hour); err != nil || id != 0 {
		t.Fatalf("RefreshToken of a fresh token = %d, %v; want 0, nil", id, err)
	}
	id, err := commit.RefreshToken(ctx, lc.Catalog, ident, "s", 0)
	if err != nil || id == 0 {
		t.Fatalf("RefreshToken of an old token = %d, %v", id, err)
	}
	cur, err := lc.Catalog.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	snap := cur.Metadata().CurrentSnapshot()
	if snap.SnapshotID != id || snap.Summary.Properties[commit.CommittedThroughKey("s")] != "7" || snap.Summary.Properties["added-data-files"] != "" && snap.Summary.Properties["added-data-files"] != "0" {
		t.Errorf("heartbeat snapshot summary = %+v", snap.Summary)
	}
	if got := writetest.CountRows(t, lc.Catalog, ident); got != 1 {
		t.Errorf("rows = %d, want 1", got)
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
						writetest.CommitOther(t, inner, ident, 100, 1)
					}
				}
			},
			wantCalls: 2},
		{name: "lost response is found", after: writetest.LostFirstResponse, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := writetest.NewCatalog(t)
			tbl := writetest.CreateTable(t, inner, "hb", writetest.IDNameSchema())
			ident := tbl.Identifier()
			if _, err := writetest.FastCommitter.Commit(ctx, inner, ident, commit.CommitRequest{SinkID: "s", WindowEndMs: 7, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 1)}); err != nil {
				t.Fatal(err)
			}
			fc := &writetest.FaultCatalog{Catalog: inner, After: tc.after}
			if tc.before != nil {
				fc.Before = tc.before(t, inner, ident)
			}
			id, err := commit.RefreshToken(ctx, fc, ident, "s", 0)
			if err != nil || id == 0 {
				t.Fatalf("RefreshToken = %d, %v; want a heartbeat snapshot", id, err)
			}
			if fc.Commits != tc.wantCalls {
				t.Errorf("CommitTable calls = %d, want %d", fc.Commits, tc.wantCalls)
			}
			cur, err := inner.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			beats := 0
			for _, s := range cur.Metadata().Snapshots() {
				if s.Summary != nil && s.Summary.Properties[commit.SummaryHeartbeat] == "true" {
					beats++
				}
			}
			if head := cur.CurrentSnapshot(); beats != 1 || head.SnapshotID != id || head.Summary.Properties[commit.CommittedThroughKey("s")] != "7" {
				t.Errorf("%d heartbeat snapshots, head %d (%v), want one, snapshot %d", beats, head.SnapshotID, head.Summary, id)
			}
		})
	}
}
