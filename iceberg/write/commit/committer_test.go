package commit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestCommitFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// setup returns the fault-injecting hooks; other is the plain catalog.
		before    func(t *testing.T, other catalog.Catalog, ident table.Identifier) func(n int)
		after     func(n int, err error) error
		wantRows  int64 // rows in the table afterwards
		wantCalls int   // CommitTable calls through the wrapper
	}{
		{
			name: "lost response retries and adds rows once",
			after: func(n int, err error) error {
				if n == 0 && err == nil {
					return errors.New("read tcp: connection reset by peer")
				}
				return nil
			},
			wantRows:  10,
			wantCalls: 1,
		},
		{
			name: "commit state unknown from REST adds rows once",
			after: func(n int, err error) error {
				if n == 0 && err == nil {
					return fmt.Errorf("%w: 503 service unavailable", rest.ErrCommitStateUnknown)
				}
				return nil
			},
			wantRows:  10,
			wantCalls: 1,
		},
		{
			name: "concurrent append between load and commit: both land",
			before: func(t *testing.T, other catalog.Catalog, ident table.Identifier) func(n int) {
				return func(n int) {
					if n != 0 {
						return
					}
					tbl, err := other.LoadTable(ctx, ident)
					if err != nil {
						t.Error(err)
						return
					}
					files := writetest.WriteIDFiles(t, tbl, 1000, 7)
					txn := tbl.NewTransaction()
					if err := txn.NewRowDelta(nil).AddRows(files...).Commit(ctx); err != nil {
						t.Error(err)
						return
					}
					if _, err := txn.Commit(ctx); err != nil {
						t.Error(err)
					}
				}
			},
			wantRows:  17,
			wantCalls: 2,
		},
		{
			name: "conflict reported although the commit landed: not committed twice",
			after: func(n int, err error) error {
				if n == 0 {
					// Pretend the compare-and-swap failed; the inner commit did land, so
					// the retry must find the token and not commit again.
					return fmt.Errorf("%w: injected", table.ErrCommitFailed)
				}
				return nil
			},
			wantRows:  10,
			wantCalls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inner := writetest.NewCatalog(t)
			tbl := writetest.CreateTable(t, inner, "t", writetest.IDNameSchema())
			ident := tbl.Identifier()
			fc := &writetest.FaultCatalog{Catalog: inner, After: tc.after}
			if tc.before != nil {
				fc.Before = tc.before(t, inner, ident)
			}
			files := writetest.WriteIDFiles(t, tbl, 0, 10)
			res, err := writetest.FastCommitter.Commit(ctx, fc, ident, commit.CommitRequest{
				SinkID: "s1", WindowEndMs: 1000, DataFiles: files,
				SnapshotProps: map[string]string{"app": "test"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped {
				t.Errorf("Skipped = true, want false")
			}
			if res.RowsAdded != 10 || res.FilesAdded != int64(len(files)) {
				t.Errorf("result = %+v, want 10 rows in %d files", res, len(files))
			}
			if got := writetest.CountRows(t, inner, ident); got != tc.wantRows {
				t.Errorf("table rows = %d, want %d", got, tc.wantRows)
			}
			if got := writetest.SnapshotsWith(t, inner, ident, commit.CommittedThroughKey("s1")); got != 1 {
				t.Errorf("snapshots with token = %d, want 1", got)
			}
			if fc.Commits != tc.wantCalls {
				t.Errorf("CommitTable calls = %d, want %d", fc.Commits, tc.wantCalls)
			}
			cur, err := inner.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			snap := cur.Metadata().SnapshotByID(res.SnapshotID)
			if snap == nil {
				t.Fatalf("snapshot %d of the result is not in the table", res.SnapshotID)
			}
			want := map[string]string{commit.SummarySinkID: "s1", commit.CommittedThroughKey("s1"): "1000", "app": "test"}
			for k, v := range want {
				if got := snap.Summary.Properties[k]; got != v {
					t.Errorf("summary[%s] = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestCommitIdempotentWindows(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	ident := tbl.Identifier()

	commitAt := func(sink string, windowEnd, from int64) commit.CommitResult {
		t.Helper()
		res, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{
			SinkID: sink, WindowEndMs: windowEnd, DataFiles: writetest.WriteIDFiles(t, tbl, from, 5)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		name        string
		sink        string
		windowEnd   int64
		wantSkipped bool
		wantRows    int64 // table rows after the step
	}{
		{"first window", "a", 1000, false, 5},
		{"same window rerun is skipped", "a", 1000, true, 5},
		{"older window is skipped", "a", 500, true, 5},
		{"next window commits", "a", 2000, false, 10},
		{"other sink same window commits", "b", 2000, false, 15},
		{"other sink rerun is skipped", "b", 2000, true, 15},
	}
	var first commit.CommitResult
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := commitAt(st.sink, st.windowEnd, int64(i)*100)
			if i == 0 {
				first = res
			}
			if res.Skipped != st.wantSkipped {
				t.Errorf("Skipped = %v, want %v", res.Skipped, st.wantSkipped)
			}
			if res.Operation != string(table.OpAppend) {
				t.Errorf("Operation = %q, want append", res.Operation)
			}
			if got := writetest.CountRows(t, cat, ident); got != st.wantRows {
				t.Errorf("rows = %d, want %d", got, st.wantRows)
			}
		})
	}
	t.Run("skipped result names the committed snapshot", func(t *testing.T) {
		res := commitAt("a", 1000, 900)
		if !res.Skipped || res.SnapshotID == first.SnapshotID || res.RowsAdded != 5 {
			// The newest token of "a" is the 2000 window's snapshot, not the first.
			t.Errorf("result = %+v", res)
		}
		tok, found, err := commit.FindToken(func() table.Metadata {
			cur, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			return cur.Metadata()
		}(), "", "a")
		if err != nil || !found || tok.CommittedThroughMs != 2000 || tok.SnapshotID != res.SnapshotID {
			t.Errorf("FindToken = %+v, %v, %v", tok, found, err)
		}
	})
}

// TestCommitOnTimePaneAfterLaterWindow: an on-time commit of a window the sink's
// token has passed is skipped only when a commit of the same run recorded that window
// with the same content (a retry); other content (a pane that reached the commit step
// after a later window's commit, which the Beam model rules out and prism 2.77's
// overlapping bundles of one key allow) is committed once, as a late pane.
func TestCommitOnTimePaneAfterLaterWindow(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	ident := tbl.Identifier()
	steps := []struct {
		name        string
		windowEnd   int64
		content     string
		wantSkipped bool
		wantLate    bool  // committed as a late pane
		wantRows    int64 // table rows after the step
	}{
		{"first window", 1000, "c1", false, false, 5},
		{"next window", 2000, "c2", false, false, 10},
		{"retry of the first window", 1000, "c1", true, false, 10},
		{"other content of the first window", 1000, "c3", false, true, 15},
		{"retry of that content", 1000, "c3", true, false, 15},
		{"window the token passed uncommitted", 1500, "c4", false, true, 20},
		{"retry of the next window", 2000, "c2", true, false, 20},
		{"without content ids, a passed window is held", 1000, "", true, false, 20},
		// The first window's files again with new ones: a retried commit step whose
		// state gained a pane; only the new files are added, even with FreshFiles.
		{"other content holding committed files", 1000, "c6", false, true, 25},
	}
	var firstFiles []ibg.DataFile
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			files := writetest.WriteIDFiles(t, tbl, int64(i)*100, 5)
			if i == 0 {
				firstFiles = files
			}
			if st.content == "c6" {
				files = append(files, firstFiles...)
			}
			res, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{
				SinkID: "a", RunID: "r1", WindowEndMs: st.windowEnd, ContentID: st.content,
				DataFiles: files, FreshFiles: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped != st.wantSkipped || (!res.Skipped && (res.LateID != "") != st.wantLate) {
				t.Errorf("Skipped = %v, LateID = %q; want skipped %v, late %v", res.Skipped, res.LateID, st.wantSkipped, st.wantLate)
			}
			if got := writetest.CountRows(t, cat, ident); got != st.wantRows {
				t.Errorf("rows = %d, want %d", got, st.wantRows)
			}
		})
	}
	cur, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if tok, found, err := commit.FindToken(cur.Metadata(), "", "a"); err != nil || !found || tok.CommittedThroughMs != 2000 {
		t.Errorf("late panes moved the token: %+v, %v, %v", tok, found, err)
	}
}

func TestCommitDedupesPaths(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	files := writetest.WriteIDFiles(t, tbl, 0, 8)
	dup := append(append([]ibg.DataFile{}, files...), files...)
	res, err := writetest.FastCommitter.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: dup})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded != int64(len(files)) || res.RowsAdded != 8 {
		t.Errorf("result = %+v, want %d files, 8 rows", res, len(files))
	}
	if got := writetest.CountRows(t, cat, tbl.Identifier()); got != 8 {
		t.Errorf("rows = %d, want 8", got)
	}
}

func TestCommitDedupesPathsInTable(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	first := writetest.WriteIDFiles(t, tbl, 0, 8)
	if _, err := writetest.FastCommitter.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: first}); err != nil {
		t.Fatal(err)
	}
	// A retried bundle's files reach a later window (and another sink) next to new ones.
	more := writetest.WriteIDFiles(t, tbl, 100, 3)
	for i, sink := range []string{"s", "other"} {
		req := commit.CommitRequest{SinkID: sink, WindowEndMs: int64(2 + i), DataFiles: append(slices.Clone(first), more...)}
		if i == 1 {
			req.DataFiles = slices.Clone(first) // nothing new at all
		}
		res, err := writetest.FastCommitter.Commit(ctx, cat, tbl.Identifier(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := commit.CommitResult{}
		if i == 0 {
			want = commit.CommitResult{FilesAdded: int64(len(more)), RowsAdded: 3}
		}
		if res.FilesAdded != want.FilesAdded || res.RowsAdded != want.RowsAdded || (i == 1 && res.SnapshotID != 0) {
			t.Errorf("%s: result = %+v, want %d files, %d rows", sink, res, want.FilesAdded, want.RowsAdded)
		}
	}
	if got := writetest.CountRows(t, cat, tbl.Identifier()); got != 11 {
		t.Errorf("rows = %d, want 11", got)
	}
	cur, err := cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	if err := icebergtest.CheckTable(ctx, cur); err != nil {
		t.Error(err)
	}
	files, err := icebergtest.DataFilesContext(ctx, cur)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.FilePath()] {
			t.Errorf("%s is in the table twice", f.FilePath())
		}
		seen[f.FilePath()] = true
	}
	if len(files) != len(first)+len(more) {
		t.Errorf("table has %d data files, want %d", len(files), len(first)+len(more))
	}
}

func TestCommitErrors(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	files := writetest.WriteIDFiles(t, tbl, 0, 3)
	always := &writetest.FaultCatalog{Catalog: cat, Before: func(n int) {
		// Another writer wins every race.
		cur, err := cat.LoadTable(ctx, tbl.Identifier())
		if err != nil {
			t.Error(err)
			return
		}
		txn := cur.NewTransaction()
		if err := txn.NewRowDelta(nil).AddRows(writetest.WriteIDFiles(t, cur, int64(100*(n+1)), 1)...).Commit(ctx); err != nil {
			t.Error(err)
			return
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Error(err)
		}
	}}
	// Each error reads "iceberg: commit <table>: <cause>", the prefix once, the cause
	// starting with the sentinel's text.
	tests := []struct {
		name    string
		cat     catalog.Catalog
		ident   table.Identifier
		req     commit.CommitRequest
		wantErr error
		wantMsg string // the start of the message
	}{
		{"empty sink id", cat, tbl.Identifier(), commit.CommitRequest{DataFiles: files}, config.ErrInvalidConfig,
			"iceberg: commit db.t: invalid configuration: empty sink id"},
		{"missing table", cat, table.Identifier{"db", "nope"}, commit.CommitRequest{SinkID: "s", DataFiles: files}, config.ErrTableNotFound,
			"iceberg: commit db.nope: table not found: "},
		{"conflicts exhaust the bound", always, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: files}, config.ErrCommitConflict,
			"iceberg: commit db.t: commit conflict: gave up after 5 attempts: "},
		{"prepare error ends the commit", cat, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: files,
			Deletes: &scriptedDeletes{prepare: func(int) (commit.Prepared, error) { return commit.Prepared{}, config.ErrUnsupported }}}, config.ErrUnsupported,
			"iceberg: commit db.t: unsupported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := writetest.FastCommitter.Commit(ctx, tc.cat, tc.ident, tc.req)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tc.wantMsg) || strings.Count(msg, "iceberg: ") != 1 {
				t.Errorf("err = %q, want it to start with %q and say \"iceberg: \" once", msg, tc.wantMsg)
			}
		})
	}
	if got := writetest.SnapshotsWith(t, cat, tbl.Identifier(), commit.CommittedThroughKey("s")); got != 0 {
		t.Errorf("failed commits left %d token snapshots", got)
	}
}

// scriptedDeletes are commit Deletes whose Prepare answers with prepare (called with
// the attempt number), and which count the attempts abandoned.
type scriptedDeletes struct {
	prepare   func(attempt int) (commit.Prepared, error)
	calls     int
	abandoned []int
}

func (d *scriptedDeletes) Prepare(_ context.Context, a *commit.Attempt) (commit.Prepared, error) {
	d.calls++
	return d.prepare(a.Number)
}

func (d *scriptedDeletes) Abandon(_ context.Context, a *commit.Attempt) {
	d.abandoned = append(d.abandoned, a.Number)
}

// TestCommitPrepareConflictRetries: a Deletes.Prepare that reports a conflict makes
// the committer try again on a fresh table (the failed attempt is abandoned); the
// next attempt's props are committed.
func TestCommitPrepareConflictRetries(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	d := &scriptedDeletes{prepare: func(n int) (commit.Prepared, error) {
		if n == 1 {
			return commit.Prepared{}, fmt.Errorf("stale positions: %w", config.ErrCommitConflict)
		}
		return commit.Prepared{Props: map[string]string{"prepared": "yes"}}, nil
	}}
	res, err := writetest.FastCommitter.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{
		SinkID: "s", WindowEndMs: 7, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 2), Deletes: d,
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.calls != 2 || res.RowsAdded != 2 || res.Attempts != 2 || res.Summary["prepared"] != "yes" {
		t.Errorf("calls = %d, result = %+v", d.calls, res)
	}
	if len(d.abandoned) != 1 || d.abandoned[0] != 1 {
		t.Errorf("abandoned attempts %v, want [1]", d.abandoned)
	}
}

func TestIsConflict(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", table.ErrCommitFailed), true},
		{errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`), true},
		{errors.New(`requirement failed: branch "main" was created concurrently`), true},
		{fmt.Errorf("%w: 502", rest.ErrCommitStateUnknown), false},
		{errors.New("connection reset"), false},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			if got := commit.IsConflict(tc.err); got != tc.want {
				t.Errorf("IsConflict = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindTokenCorrupt(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", writetest.IDNameSchema())
	txn := tbl.NewTransaction()
	props := ibg.Properties{commit.CommittedThroughKey("s"): "yesterday"}
	if err := txn.NewRowDelta(props).AddRows(writetest.WriteIDFiles(t, tbl, 0, 1)...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := commit.FindToken(cur.Metadata(), "main", "s"); err == nil {
		t.Fatal("FindToken accepted a non-integer token")
	}
	_ = strconv.Itoa
}
