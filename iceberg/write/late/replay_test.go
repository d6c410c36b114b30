package late

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// idRow is a row of writetest's id/name tables as WriteIDs writes it.
func idRow(id int64) row.Row { return row.New([]string{"id", "name"}, []any{id, "n"}) }

// seen reports x.Seen for the row id of the window ending at second end.
func seen(t *testing.T, x *ReplayIndex, cat catalog.Catalog, ident table.Identifier, end, id int64) bool {
	t.Helper()
	ok, err := x.Seen(context.Background(), cat, ident, commit.WindowEnd(win(end)), idRow(id))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestReplayIndex: after a restart, a row of a window the earlier run committed is
// a replay as many times as that run committed it, in that window only; a row
// that run did not commit, or of a window only this run committed, is new. The
// matches of a bundle that fails are undone (Begin), those of one that ends
// (Done) stay.
func TestReplayIndex(t *testing.T) {
	cat := writetest.NewCatalog(t)
	ident := writetest.CreateTable(t, cat, "replay", writetest.IDNameSchema()).Identifier()
	commitWindow(t, cat, ident, "run-1", 10, 1, 2, 2)
	commitWindow(t, cat, ident, "run-1", 20, 7)
	commitWindow(t, cat, ident, "run-2", 30, 8)

	x := NewReplayIndex("s", "run-2")
	x.Begin()
	for _, tc := range []struct {
		end, id int64
		want    bool
	}{
		{10, 1, true},
		{10, 1, false}, // committed once
		{10, 2, true},
		{10, 2, true},
		{10, 2, false}, // committed twice
		{10, 3, false}, // never committed
		{10, 7, false}, // committed to another window
		{20, 7, true},
		{30, 8, false}, // committed by this run: not a replay
	} {
		if got := seen(t, x, cat, ident, tc.end, tc.id); got != tc.want {
			t.Errorf("row %d of the window ending at %d s: seen %v, want %v", tc.id, tc.end, got, tc.want)
		}
	}
	// The bundle failed: its retry matches the same rows again.
	x.Begin()
	if !seen(t, x, cat, ident, 10, 1) || !seen(t, x, cat, ident, 20, 7) {
		t.Error("the matches of a failed bundle were not undone")
	}
	x.Done()
	x.Begin()
	if seen(t, x, cat, ident, 10, 1) || seen(t, x, cat, ident, 20, 7) {
		t.Error("the matches of a bundle that ended were undone")
	}
}

// TestReplayIndexExpiredHistory: when snapshot expiry has removed part of the
// history that may hold a window, its rows cannot be told from replays: each
// counts as replayed.
func TestReplayIndexExpiredHistory(t *testing.T) {
	lc := writetest.NewLocalCatalog(t)
	ident := writetest.CreateTable(t, lc.Catalog, "expired", writetest.IDNameSchema()).Identifier()
	commitWindow(t, lc.Catalog, ident, "run-1", 10, 1)
	commitWindow(t, lc.Catalog, ident, "run-1", 20, 2)
	writetest.ExpireAllButNewest(t, lc, ident)

	x := NewReplayIndex("s", "run-2")
	x.Begin()
	for _, id := range []int64{1, 1, 99} {
		if !seen(t, x, lc.Catalog, ident, 10, id) {
			t.Errorf("row %d of a window whose history expired: not counted as replayed", id)
		}
	}
}
