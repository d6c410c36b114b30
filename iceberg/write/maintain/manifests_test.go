package maintain

import (
	"context"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

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
						writetest.CommitOther(t, inner, ident, 1000, 5)
					}
				}
			},
			wantRows: maxDataManifests + 1 + 5, wantCalls: 2},
		{name: "lost response is found", after: writetest.LostFirstResponse, wantRows: maxDataManifests + 1, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := writetest.NewCatalog(t)
			tbl := writetest.CreateTable(t, inner, "merge", writetest.IDNameSchema())
			ident := tbl.Identifier()
			for i := range int64(maxDataManifests + 1) {
				if _, err := writetest.FastCommitter.Commit(ctx, inner, ident, commit.CommitRequest{SinkID: "s", WindowEndMs: i + 1, DataFiles: writetest.WriteIDFiles(t, tbl, i, 1)}); err != nil {
					t.Fatal(err)
				}
			}
			if n := dataManifests(t, inner, ident); n <= maxDataManifests {
				t.Fatalf("%d data manifests before the merge, want more than %d", n, maxDataManifests)
			}
			fc := &writetest.FaultCatalog{Catalog: inner, After: tc.after}
			if tc.before != nil {
				fc.Before = tc.before(t, inner, ident)
			}
			merged, err := MergeManifests(ctx, fc, ident)
			if err != nil || !merged {
				t.Fatalf("MergeManifests = %v, %v; want merged", merged, err)
			}
			if fc.Commits != tc.wantCalls {
				t.Errorf("CommitTable calls = %d, want %d", fc.Commits, tc.wantCalls)
			}
			if n := dataManifests(t, inner, ident); n > 2 {
				t.Errorf("%d data manifests after the merge", n)
			}
			if got := writetest.CountRows(t, inner, ident); got != tc.wantRows {
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
