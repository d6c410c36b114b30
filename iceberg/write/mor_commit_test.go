package write

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// deleteAndAdd is a window that deletes the rows of keys and adds rows [from, from+n).
func deleteAndAdd(t *testing.T, tbl *table.Table, end, maxSeq int64, keys []int64, from, n int64) changeWindow {
	t.Helper()
	w := changeWindow{SinkID: "cdc", RunID: "run-1", WindowEndMs: end, MaxSeq: maxSeq,
		Deletes: cdc.Deletes{KeyColumns: []string{"id"}}}
	for _, k := range keys {
		w.Deletes.Keys = append(w.Deletes.Keys, []any{k})
	}
	if n > 0 {
		w.DataFiles = writetest.WriteIDFiles(t, tbl, from, n)
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
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "changes")
	ident := tbl.Identifier()
	w := deleteAndAdd(t, tbl, 1000, 11, []int64{5, 6}, 500, 1)
	res, err := commitWindowChanges(ctx, writetest.FastCommitter, cat, ident, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.DVsAdded != 1 || res.DVsRemoved != 0 || res.PositionsDeleted != 2 || res.RowsAdded != 1 || res.DeleteFilesAdded != 1 {
		t.Fatalf("result %+v", res)
	}
	for k, want := range map[string]string{commit.CommittedThroughKey("cdc"): "1000", maxCommittedSeqKey("cdc"): "11",
		cdc.SummaryAddedDVs: "1", commit.RunKey("cdc"): "run-1"} {
		if res.Summary[k] != want {
			t.Errorf("summary %s = %q, want %q", k, res.Summary[k], want)
		}
	}
	// A later window with lower sequence numbers keeps the highest; it replaces the DV.
	res, err = commitWindowChanges(ctx, writetest.FastCommitter, cat, ident, deleteAndAdd(t, tbl, 2000, 4, []int64{7}, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if res.DVsAdded != 1 || res.DVsRemoved != 1 || res.PositionsDeleted != 1 || res.Summary[maxCommittedSeqKey("cdc")] != "11" {
		t.Fatalf("second window: %+v", res)
	}
	// The first window again (a retried bundle): skipped, with its snapshot's counts.
	again, err := commitWindowChanges(ctx, writetest.FastCommitter, cat, ident, deleteAndAdd(t, tbl, 1000, 11, []int64{5, 6}, 500, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Skipped || again.DVsAdded != 1 || again.DVsRemoved != 1 {
		t.Fatalf("retried window: %+v", again)
	}
	if n := writetest.CountRows(t, cat, ident); n != 98 {
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
	inner := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, inner, "lost")
	cat := &writetest.FaultCatalog{Catalog: inner, After: func(n int, err error) error {
		if n == 0 && err == nil {
			return errors.New("read tcp: connection reset by peer")
		}
		return nil
	}}
	res, err := commitWindowChanges(ctx, writetest.FastCommitter, cat, tbl.Identifier(), deleteAndAdd(t, tbl, 1000, 3, []int64{1, 2, 3}, 200, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Recovered || res.Attempts != 2 || res.SnapshotID == 0 {
		t.Fatalf("result %+v, want the lost commit found on attempt 2", res)
	}
	if n := writetest.CountRows(t, inner, tbl.Identifier()); n != 102 {
		t.Fatalf("%d rows, want 102", n)
	}
	if n := writetest.SnapshotsWith(t, inner, tbl.Identifier(), commit.CommittedThroughKey("cdc")); n != 1 {
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
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "errs")
	keys := cdc.Deletes{KeyColumns: []string{"id"}, Keys: [][]any{{int64(1)}}}
	for _, tc := range []struct {
		name  string
		ident table.Identifier
		w     changeWindow
		want  error
	}{
		{"empty sink id", tbl.Identifier(), changeWindow{Deletes: keys}, config.ErrInvalidConfig},
		{"reserved summary key", tbl.Identifier(), changeWindow{SinkID: "s", WindowEndMs: 1, Deletes: keys,
			SnapshotProps: map[string]string{"beam.cdc.x": "1"}}, config.ErrInvalidConfig},
		{"no equality columns", tbl.Identifier(), changeWindow{SinkID: "s", WindowEndMs: 1,
			Deletes: cdc.Deletes{Keys: keys.Keys}}, config.ErrInvalidConfig},
		{"missing table", table.Identifier{"db", "nope"}, changeWindow{SinkID: "s", WindowEndMs: 1, Deletes: keys}, config.ErrTableNotFound},
		{"DVs on format version 2", writetest.CreateTable(t, cat, "v2", writetest.IDNameSchema(),
			catalog.WithProperties(map[string]string{"format-version": "2"})).Identifier(),
			changeWindow{SinkID: "s", WindowEndMs: 1, Deletes: cdc.Deletes{KeyColumns: []string{"id"}, Keys: keys.Keys,
				Format: config.DeleteFormatDV}}, config.ErrUnsupported},
	} {
		_, err := commitWindowChanges(ctx, writetest.FastCommitter, cat, tc.ident, tc.w)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "iceberg: commit db.") {
			t.Errorf("%s: err = %v, want %v prefixed by the table", tc.name, err, tc.want)
		}
	}
}
