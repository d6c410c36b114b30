package write

import (
	"context"
	"errors"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// seededChangeTable creates db.<name> (id, name; format version 3) with ids 0..99 in
// one data file, committed by another sink.
func seededChangeTable(t *testing.T, cat catalog.Catalog, name string) *table.Table {
	t.Helper()
	tbl := createTestTable(t, cat, name, idNameSchema())
	if _, err := fastCommitter.Commit(context.Background(), cat, tbl.Identifier(),
		CommitRequest{SinkID: "seed", WindowEndMs: 1, DataFiles: writeIDFiles(t, tbl, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// deleteAndAdd is a window that deletes the rows of keys and adds rows [from, from+n).
func deleteAndAdd(t *testing.T, tbl *table.Table, end, maxSeq int64, keys []int64, from, n int64) ChangeWindow {
	t.Helper()
	w := ChangeWindow{SinkID: "cdc", RunID: "run-1", WindowEndMs: end, MaxSeq: maxSeq,
		Deletes: cdc.Deletes{KeyColumns: []string{"id"}}}
	for _, k := range keys {
		w.Deletes.Keys = append(w.Deletes.Keys, []any{k})
	}
	if n > 0 {
		w.DataFiles = writeIDFiles(t, tbl, from, n)
	}
	return w
}

// TestCommitChanges commits change windows through the one commit loop: the
// deletes become a DV, the summary carries the token and the highest committed
// sequence number (which never goes down), the result carries the delete counts,
// and a window committed again is skipped with the counts of the snapshot that
// holds it.
func TestCommitChanges(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := seededChangeTable(t, cat, "changes")
	ident := tbl.Identifier()
	w := deleteAndAdd(t, tbl, 1000, 11, []int64{5, 6}, 500, 1)
	res, err := fastCommitter.CommitChanges(ctx, cat, ident, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.DVsAdded != 1 || res.DVsRemoved != 0 || res.PositionsDeleted != 2 || res.RowsAdded != 1 || res.DeleteFilesAdded != 1 {
		t.Fatalf("result %+v", res)
	}
	for k, want := range map[string]string{CommittedThroughKey("cdc"): "1000", MaxCommittedSeqKey("cdc"): "11",
		cdc.SummaryAddedDVs: "1", RunKey("cdc"): "run-1"} {
		if res.Summary[k] != want {
			t.Errorf("summary %s = %q, want %q", k, res.Summary[k], want)
		}
	}
	// A later window with lower sequence numbers keeps the highest; it replaces the DV.
	res, err = fastCommitter.CommitChanges(ctx, cat, ident, deleteAndAdd(t, tbl, 2000, 4, []int64{7}, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if res.DVsAdded != 1 || res.DVsRemoved != 1 || res.PositionsDeleted != 1 || res.Summary[MaxCommittedSeqKey("cdc")] != "11" {
		t.Fatalf("second window: %+v", res)
	}
	// The first window again (a retried bundle): skipped, with its snapshot's counts.
	again, err := fastCommitter.CommitChanges(ctx, cat, ident, deleteAndAdd(t, tbl, 1000, 11, []int64{5, 6}, 500, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Skipped || again.DVsAdded != 1 || again.DVsRemoved != 1 {
		t.Fatalf("retried window: %+v", again)
	}
	if n := countRows(t, cat, ident); n != 98 {
		t.Fatalf("%d rows, want 98", n)
	}
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
}

// TestCommitChangesLostResponse: the first attempt lands but its response is lost;
// the next attempt finds the token, so the deletes and rows land once.
func TestCommitChangesLostResponse(t *testing.T) {
	ctx := context.Background()
	inner := newTestCatalog(t)
	tbl := seededChangeTable(t, inner, "lost")
	cat := &faultCatalog{Catalog: inner, after: func(n int, err error) error {
		if n == 0 && err == nil {
			return errors.New("read tcp: connection reset by peer")
		}
		return nil
	}}
	res, err := fastCommitter.CommitChanges(ctx, cat, tbl.Identifier(), deleteAndAdd(t, tbl, 1000, 3, []int64{1, 2, 3}, 200, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Recovered || res.Attempts != 2 || res.SnapshotID == 0 {
		t.Fatalf("result %+v, want the lost commit found on attempt 2", res)
	}
	if n := countRows(t, inner, tbl.Identifier()); n != 102 {
		t.Fatalf("%d rows, want 102", n)
	}
	if n := snapshotsWithToken(t, inner, tbl.Identifier(), "cdc"); n != 1 {
		t.Fatalf("%d snapshots with the token, want 1", n)
	}
	tbl, err = inner.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
}

func TestCommitChangesErrors(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := seededChangeTable(t, cat, "errs")
	keys := cdc.Deletes{KeyColumns: []string{"id"}, Keys: [][]any{{int64(1)}}}
	for _, tc := range []struct {
		name  string
		ident table.Identifier
		w     ChangeWindow
		want  error
	}{
		{"empty sink id", tbl.Identifier(), ChangeWindow{Deletes: keys}, config.ErrInvalidConfig},
		{"reserved summary key", tbl.Identifier(), ChangeWindow{SinkID: "s", WindowEndMs: 1, Deletes: keys,
			SnapshotProps: map[string]string{"beam.cdc.x": "1"}}, config.ErrInvalidConfig},
		{"no equality columns", tbl.Identifier(), ChangeWindow{SinkID: "s", WindowEndMs: 1,
			Deletes: cdc.Deletes{Keys: keys.Keys}}, config.ErrInvalidConfig},
		{"missing table", table.Identifier{"db", "nope"}, ChangeWindow{SinkID: "s", WindowEndMs: 1, Deletes: keys}, config.ErrTableNotFound},
		{"DVs on format version 2", createTestTable(t, cat, "v2", idNameSchema(),
			catalog.WithProperties(map[string]string{"format-version": "2"})).Identifier(),
			ChangeWindow{SinkID: "s", WindowEndMs: 1, Deletes: cdc.Deletes{KeyColumns: []string{"id"}, Keys: keys.Keys,
				Format: config.DeleteFormatDV}}, config.ErrUnsupported},
	} {
		_, err := fastCommitter.CommitChanges(ctx, cat, tc.ident, tc.w)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "iceberg: commit db.") {
			t.Errorf("%s: err = %v, want %v prefixed by the table", tc.name, err, tc.want)
		}
	}
}

// dataManifests counts the data manifests of ident's current snapshot.
func dataManifests(t *testing.T, cat catalog.Catalog, ident table.Identifier) int {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range manifests {
		if m.ManifestContent() == ibg.ManifestContentData {
			n++
		}
	}
	return n
}

// TestMergeManifestsFaults: the manifest merge commits through the Committer's loop:
// a concurrent commit between its load and its commit is retried on the reloaded
// table (before, the merge failed and waited for the next window), and a merge whose
// response was lost is found, not made twice.
func TestMergeManifestsFaults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		before    func(t *testing.T, inner catalog.Catalog, ident table.Identifier) func(n int)
		after     func(n int, err error) error
		wantRows  int64
		wantCalls int
	}{
		{name: "concurrent commit is retried",
			before: func(t *testing.T, inner catalog.Catalog, ident table.Identifier) func(n int) {
				return func(n int) {
					if n == 0 {
						commitOther(t, inner, ident, 1000, 5)
					}
				}
			},
			wantRows: maxDataManifests + 1 + 5, wantCalls: 2},
		{name: "lost response is found", after: lostFirstResponse, wantRows: maxDataManifests + 1, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newTestCatalog(t)
			tbl := createTestTable(t, inner, "merge", idNameSchema())
			ident := tbl.Identifier()
			for i := range int64(maxDataManifests + 1) {
				if _, err := fastCommitter.Commit(ctx, inner, ident, CommitRequest{SinkID: "s", WindowEndMs: i + 1, DataFiles: writeIDFiles(t, tbl, i, 1)}); err != nil {
					t.Fatal(err)
				}
			}
			if n := dataManifests(t, inner, ident); n <= maxDataManifests {
				t.Fatalf("%d data manifests before the merge, want more than %d", n, maxDataManifests)
			}
			fc := &faultCatalog{Catalog: inner, after: tc.after}
			if tc.before != nil {
				fc.before = tc.before(t, inner, ident)
			}
			merged, err := MergeManifests(ctx, fc, ident)
			if err != nil || !merged {
				t.Fatalf("MergeManifests = %v, %v; want merged", merged, err)
			}
			if fc.commits != tc.wantCalls {
				t.Errorf("CommitTable calls = %d, want %d", fc.commits, tc.wantCalls)
			}
			if n := dataManifests(t, inner, ident); n > 2 {
				t.Errorf("%d data manifests after the merge", n)
			}
			if got := countRows(t, inner, ident); got != tc.wantRows {
				t.Errorf("rows = %d, want %d", got, tc.wantRows)
			}
			cur, err := inner.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, cur)
		})
	}
}
