package maintain

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// tableIDs returns the sorted ids of table ident.
func tableIDs(t testing.TB, cat table.CatalogIO, ident table.Identifier) []int64 {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []int64
	for _, c := range at.Column(0).Data().Chunks() {
		out = append(out, c.(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

// churn commits windows ends[i] of sink "cdc" that each delete a few of the live ids
// and add ten new ones, applying the same to model.
func churn(t *testing.T, cat table.CatalogIO, ident table.Identifier, model map[int64]bool, rng *rand.Rand, ends ...int64) {
	t.Helper()
	ctx := context.Background()
	for _, end := range ends {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		var live []int64
		for id := range model {
			live = append(live, id)
		}
		slices.Sort(live)
		var keys []int64
		for range 3 {
			if len(live) > 0 {
				keys = append(keys, live[rng.IntN(len(live))])
			}
		}
		from := 10_000 + end*10
		w := deleteAndAdd(t, tbl, end, end, keys, from, 10)
		if _, err := commitChanges(ctx, cat, ident, w); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			delete(model, k)
		}
		for i := from; i < from+10; i++ {
			model[i] = true
		}
	}
}

// requireModel fails t unless table ident holds exactly the ids of model and passes
// the table invariant checks; what says when (for the failure message).
func requireModel(t *testing.T, cat table.CatalogIO, ident table.Identifier, model map[int64]bool, what string) {
	t.Helper()
	if got, want := tableIDs(t, cat, ident), modelIDs(model); !slices.Equal(got, want) {
		t.Fatalf("%s: got %d ids, want %d", what, len(got), len(want))
	}
	liveFiles(t, cat, ident)
}

func modelIDs(model map[int64]bool) []int64 {
	out := make([]int64, 0, len(model))
	for id := range model {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func seedModel() map[int64]bool {
	m := map[int64]bool{}
	for i := range int64(100) {
		m[i] = true
	}
	return m
}

// planGroups plans the compaction of table ident's current state.
func planGroups(t testing.TB, cat table.CatalogIO, ident table.Identifier, o CompactOptions) []CompactionGroup {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := PlanCompaction(ctx, tbl, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

// compactAll plans and compacts table ident once.
func compactAll(t testing.TB, cat table.CatalogIO, ident table.Identifier, o CompactOptions) []CompactResult {
	t.Helper()
	var out []CompactResult
	for _, g := range planGroups(t, cat, ident, o) {
		res, err := CompactGroup(context.Background(), writetest.FastCommitter, cat, ident, g, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

func liveFiles(t testing.TB, cat table.CatalogIO, ident table.Identifier) LiveFiles {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	n, err := CountLiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCompactFoldsDeletionVectors: after 12 merge-on-read windows (12 small files and
// their DVs), compaction leaves one data file and no delete file, with the rows of the
// model; a second run finds nothing to do.
func TestCompactFoldsDeletionVectors(t *testing.T) {
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "fold")
	ident := tbl.Identifier()
	model := seedModel()
	churn(t, cat, ident, model, rand.New(rand.NewPCG(1, 2)), 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000)
	before := liveFiles(t, cat, ident)
	if before.DataFiles != 13 || before.DeleteFiles == 0 {
		t.Fatalf("before compaction: %+v", before)
	}
	res := compactAll(t, cat, ident, CompactOptions{})
	if len(res) != 1 || res[0].FilesRewritten != 13 || res[0].FilesAdded != 1 || res[0].DeleteFilesRemoved != int(before.DeleteFiles) || res[0].SnapshotID == 0 {
		t.Fatalf("compaction: %+v (before %+v)", res, before)
	}
	after := liveFiles(t, cat, ident)
	if after.DataFiles != 1 || after.DeleteFiles != 0 || after.Rows != int64(len(model)) {
		t.Fatalf("after compaction: %+v, want 1 data file, no deletes, %d rows", after, len(model))
	}
	requireModel(t, cat, ident, model, "ids after compaction differ from the model")
	if again := compactAll(t, cat, ident, CompactOptions{}); len(again) != 0 {
		t.Fatalf("second compaction planned %d groups, want none", len(again))
	}
	// The sink goes on: its deletes resolve against the rewritten file.
	churn(t, cat, ident, model, rand.New(rand.NewPCG(3, 4)), 13000, 14000)
	requireModel(t, cat, ident, model, "ids after more changes differ from the model")
}

// TestCompactPlanRules: a lone file with most rows deleted is rewritten; small files
// below min_input_files are not; a delete file threshold of 1 takes every file with
// a DV.
func TestCompactPlanRules(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "rules")
	ident := tbl.Identifier()
	keys := make([]int64, 40)
	for i := range keys {
		keys[i] = int64(i)
	}
	if _, err := commitChanges(ctx, cat, ident, deleteAndAdd(t, tbl, 1000, 1, keys, 0, 0)); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	groups, err := PlanCompaction(ctx, tbl, nil, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || len(groups[0].Files) != 1 {
		t.Fatalf("a file with 40%% of its rows deleted: groups %+v, want it alone", groups)
	}
	// Two more small files, one with a DV covering 10%: under min_input_files (5) and
	// the delete ratio, nothing but the deleted-heavy file... compact it first.
	compactAll(t, cat, ident, CompactOptions{})
	model := map[int64]bool{}
	for i := int64(40); i < 100; i++ {
		model[i] = true
	}
	churn(t, cat, ident, model, rand.New(rand.NewPCG(5, 6)), 2000)
	tbl, _ = cat.LoadTable(ctx, ident)
	if groups, _ = PlanCompaction(ctx, tbl, nil, CompactOptions{}); len(groups) != 0 {
		t.Fatalf("two small files with few deletes: groups %+v, want none", groups)
	}
	if groups, _ = PlanCompaction(ctx, tbl, nil, CompactOptions{DeleteFileThreshold: 1}); len(groups) != 1 || len(groups[0].Files) != 2 {
		t.Fatalf("delete_file_threshold 1: groups %+v, want both files", groups)
	}
	if groups, _ = PlanCompaction(ctx, tbl, nil, CompactOptions{MinInputFiles: 2}); len(groups) != 1 {
		t.Fatalf("min_input_files 2: groups %+v, want one", groups)
	}
	if groups, _ = PlanCompaction(ctx, tbl, nil, CompactOptions{RewriteAll: true}); len(groups) != 1 || len(groups[0].Files) != 2 {
		t.Fatalf("rewrite_all: groups %+v", groups)
	}
}

// TestCompactTiered: with Tiered (inline maintenance), a file picked for its size
// alone that is larger than the other files of its group together is left out of
// the group, which still compacts the small files; Spark's rules (Maintain) rewrite
// it with them; once a third of its rows are deleted, Tiered rewrites it too.
func TestCompactTiered(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	ident := writetest.CreateTable(t, cat, "tiered", writetest.IDNameSchema()).Identifier()
	writetest.CommitOther(t, cat, ident, 0, 20_000) // the large file
	for i := range int64(5) {
		writetest.CommitOther(t, cat, ident, 100_000+10*i, 10)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	var large string
	for _, f := range icebergtest.DataFiles(t, tbl) {
		if f.Count() == 20_000 {
			large = f.FilePath()
		}
	}
	plan := func(o CompactOptions) []CompactionGroup { return planGroups(t, cat, ident, o) }
	if g := plan(CompactOptions{}); len(g) != 1 || len(g[0].Files) != 6 {
		t.Fatalf("Spark's rules: groups %+v, want the six files", g)
	}
	g := plan(CompactOptions{Tiered: true})
	if len(g) != 1 || len(g[0].Files) != 5 || slices.Contains(g[0].Files, large) {
		t.Fatalf("tiered: groups %+v, want the five small files without %s", g, large)
	}
	compactAll(t, cat, ident, CompactOptions{Tiered: true})
	if n := liveFiles(t, cat, ident); n.DataFiles != 2 || n.Rows != 20_050 {
		t.Fatalf("after the tiered compaction: %+v, want the large file and one of the 50 small rows", n)
	}
	if g := plan(CompactOptions{Tiered: true, MinInputFiles: 2}); len(g) != 0 {
		t.Fatalf("tiered, the large file and one small one: groups %+v, want none", g)
	}
	// A third of the large file's rows deleted: its deletes pick it, whatever its size.
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]int64, 7000)
	for i := range keys {
		keys[i] = int64(3 * i)
	}
	if _, err := commitChanges(ctx, cat, ident, deleteAndAdd(t, tbl, 1000, 1, keys, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if g := plan(CompactOptions{Tiered: true}); len(g) != 1 || !slices.Contains(g[0].Files, large) {
		t.Fatalf("tiered, the large file with 35%% of its rows deleted: groups %+v, want it rewritten", g)
	}
}

// TestCompactSinkCommitsFirst: a merge-on-read window that deletes rows of the group's
// files commits while the group is being rewritten. The rewrite is found stale, done
// again from the new state, and the deleted rows stay deleted.
func TestCompactSinkCommitsFirst(t *testing.T) {
	inner := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, inner, "sinkfirst")
	ident := tbl.Identifier()
	model := seedModel()
	churn(t, inner, ident, model, rand.New(rand.NewPCG(7, 8)), 1000, 2000, 3000, 4000, 5000)
	var once sync.Once
	cat := &writetest.FaultCatalog{Catalog: inner, Before: func(int) {
		once.Do(func() { churn(t, inner, ident, model, rand.New(rand.NewPCG(9, 10)), 6000) })
	}}
	results := compactAll(t, cat, ident, CompactOptions{DeleteFileThreshold: 1})
	if len(results) != 1 {
		t.Fatalf("%d groups compacted, want 1: %+v", len(results), results)
	}
	res := results[0]
	if res.Redos != 1 || res.Stale || res.SnapshotID == 0 {
		t.Fatalf("result %+v, want one redo after the sink's commit", res)
	}
	requireModel(t, inner, ident, model, "ids differ from the model after the race")
}

// TestCompactCommitsFirst: compaction replaces the files a merge-on-read window's keys
// live in before the window commits; the window resolves its keys again against the
// rewritten file.
func TestCompactCommitsFirst(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "compactfirst")
	ident := tbl.Identifier()
	model := seedModel()
	churn(t, cat, ident, model, rand.New(rand.NewPCG(11, 12)), 1000, 2000, 3000)
	stale, _ := cat.LoadTable(ctx, ident) // the window was prepared on this state
	ids := modelIDs(model)
	keys := []int64{ids[0], ids[len(ids)/2], ids[len(ids)-1]} // the seed file's and the windows' files
	w := deleteAndAdd(t, stale, 4000, 4000, keys, 900_000, 3)
	if res := compactAll(t, cat, ident, CompactOptions{RewriteAll: true}); len(res) != 1 || res[0].SnapshotID == 0 {
		t.Fatalf("compaction %+v", res)
	}
	res, err := commitChanges(ctx, cat, ident, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		delete(model, k)
	}
	for i := int64(900_000); i < 900_003; i++ {
		model[i] = true
	}
	if res.PositionsDeleted != 3 {
		t.Fatalf("window after compaction: %+v", res)
	}
	requireModel(t, cat, ident, model, "ids differ from the model")
}

// TestCompactRacesSink runs compaction in a loop while a merge-on-read sink commits
// windows: no delete is lost and no row comes back, and the table stays valid. The
// sink commits at least 25 windows and goes on (pausing every fifth window, up to 200)
// until a rewrite has committed in the middle of its windows: most rewrites lose to a
// window that changed their files' deletes, and the race must include one that won.
func TestCompactRacesSink(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "race")
	ident := tbl.Identifier()
	model := seedModel()
	rng := rand.New(rand.NewPCG(13, 14))
	done := make(chan struct{})
	errc := make(chan error, 1)
	var rounds int
	var committed atomic.Int64
	go func() {
		defer close(errc)
		for {
			select {
			case <-done:
				return
			default:
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				errc <- err
				return
			}
			groups, err := PlanCompaction(ctx, tbl, nil, CompactOptions{MinInputFiles: 2, DeleteFileThreshold: 1})
			if err != nil {
				errc <- err
				return
			}
			for _, g := range groups {
				res, err := CompactGroup(ctx, writetest.FastCommitter, cat, ident, g, CompactOptions{MinInputFiles: 2, DeleteFileThreshold: 1})
				if err != nil && !errors.Is(err, context.Canceled) {
					errc <- err
					return
				}
				if res.SnapshotID != 0 {
					committed.Add(1)
				}
			}
			rounds++
		}
	}()
	for i := int64(0); i < 200 && (i < 25 || committed.Load() == 0); i++ {
		churn(t, cat, ident, model, rng, 1000*(i+1))
		if i%5 == 4 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	final := committed.Load() // rewrites that committed while windows were still coming
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d compaction rounds, %d rewrites committed", rounds, committed.Load())
	requireModel(t, cat, ident, model, "ids differ from the model")
	if final == 0 {
		t.Fatal("no compaction committed during the race")
	}
}

// TestExpireKeepsSinkTokens: expiry with retain_last 1 keeps the snapshot holding a
// sink's newest token, but not the snapshots between it and the head; the sink
// restarted afterwards still finds its full token across that gap (not the table
// property's fallback) and skips a window it committed.
func TestExpireKeepsSinkTokens(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "expire", writetest.IDNameSchema())
	ident := tbl.Identifier()
	for i := range int64(3) {
		if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "a", RunID: "r1", WindowEndMs: 1000 * (i + 1), DataFiles: writetest.WriteIDFiles(t, tbl, i*10, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(4) {
		if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "b", WindowEndMs: 1000 * (i + 1), DataFiles: writetest.WriteIDFiles(t, tbl, 100+i*10, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	// 7 snapshots: the newest (b's) is retained; a's newest (the 3rd) is pinned; the
	// other 5 expire.
	if res.Expired != 5 || res.Pinned != 1 || !slices.Equal(res.PinnedBy, []string{"a", "b"}) {
		t.Fatalf("expiry: %+v", res)
	}
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots left, want 2", n)
	}
	tok, found, err := commit.FindToken(tbl.Metadata(), "", "a")
	if err != nil || !found || tok.FromProperty || tok.CommittedThroughMs != 3000 || tok.Summary.Properties[commit.RunKey("a")] != "r1" {
		t.Fatalf("token of a after expiry: %+v found=%v err=%v", tok, found, err)
	}
	again, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "a", RunID: "r1", WindowEndMs: 3000, DataFiles: writetest.WriteIDFiles(t, tbl, 20, 10)})
	if err != nil || !again.Skipped || again.SnapshotID != tok.SnapshotID {
		t.Fatalf("window 3000 of a again: %+v, %v; want skipped by snapshot %d", again, err, tok.SnapshotID)
	}
	if n := len(tableIDs(t, cat, ident)); n != 70 {
		t.Fatalf("%d rows, want 70", n)
	}
	icebergtest.RequireValid(t, tbl)
	// A token older than SinkTokenHorizon pins nothing, and its record goes.
	if pins, _, stale, sinks := sinkPins(tbl.Metadata(), time.Now().Add(time.Hour).UnixMilli()); len(pins) != 0 || len(sinks) != 0 || len(stale) != 2 {
		t.Fatalf("pins of old tokens: %v %v, stale records %v", pins, sinks, stale)
	}
	// Nothing else is old enough to go: a second expiry removes nothing.
	if res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1}); err != nil || res.Expired != 0 {
		t.Fatalf("second expiry: %+v, %v", res, err)
	}
}

// TestExpireAfterBackfill: a backfill (a batch sink, the global window) followed by a
// stream keeps one snapshot for the backfill, not the stream's whole history after
// it; every later expiry removes the stream's older snapshots again. A rerun of the
// backfill is skipped by its full token, and a late pane the stream committed before
// the expiry is found across the gap when it is committed again (a lost response).
func TestExpireAfterBackfill(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "expirebackfill", writetest.IDNameSchema())
	ident := tbl.Identifier()
	global := mtime.EndOfGlobalWindowTime.Milliseconds() // the global window's token (write.WindowEnd)
	backfill, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "backfill", WindowEndMs: global, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 10)})
	if err != nil {
		t.Fatal(err)
	}
	next := int64(100)
	stream := func(req commit.CommitRequest) commit.CommitResult {
		t.Helper()
		req.SinkID, req.RunID = "stream", "r1"
		req.DataFiles = writetest.WriteIDFiles(t, tbl, next, 10)
		next += 10
		res, err := writetest.FastCommitter.Commit(ctx, cat, ident, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	late := commit.CommitRequest{WindowEndMs: 1000, LateID: commit.LateID(1000, "c1"), ContentID: "c1"}
	for i := range int64(4) {
		stream(commit.CommitRequest{WindowEndMs: 1000 * (i + 1)})
	}
	stream(late)
	for i := range int64(2) { // another writer commits after the late pane
		if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "other", WindowEndMs: 1000 * (i + 1), DataFiles: writetest.WriteIDFiles(t, tbl, 500+10*i, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	expire := func() ExpireResult {
		t.Helper()
		res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
		if err != nil {
			t.Fatal(err)
		}
		tbl, err = cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// 8 snapshots: the backfill's and the late pane (the stream's newest token) are
	// pinned, the head (other's) retained, the stream's 4 windows and other's first
	// expire.
	if res := expire(); res.Expired != 5 || res.Pinned != 2 || !slices.Equal(res.PinnedBy, []string{"backfill", "other", "stream"}) {
		t.Fatalf("first expiry: %+v", res)
	}
	if res := stream(late); !res.Skipped {
		t.Fatalf("late pane again after expiry: %+v, want skipped", res)
	}
	for i := range int64(3) {
		stream(commit.CommitRequest{WindowEndMs: 5000 + 1000*i})
	}
	// The late pane and the stream's next two windows expire; other's token stays.
	if res := expire(); res.Expired != 3 || res.Pinned != 2 {
		t.Fatalf("second expiry: %+v", res)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots left, want 3", n)
	}
	tok, found, err := commit.FindToken(tbl.Metadata(), "", "backfill")
	if err != nil || !found || tok.FromProperty || tok.SnapshotID != backfill.SnapshotID {
		t.Fatalf("backfill token after expiry: %+v found=%v err=%v, want snapshot %d", tok, found, err, backfill.SnapshotID)
	}
	again, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "backfill", WindowEndMs: global, DataFiles: writetest.WriteIDFiles(t, tbl, 0, 10)})
	if err != nil || !again.Skipped || again.SnapshotID != backfill.SnapshotID {
		t.Fatalf("backfill rerun: %+v, %v; want skipped by snapshot %d", again, err, backfill.SnapshotID)
	}
	if n := len(tableIDs(t, cat, ident)); n != 110 {
		t.Fatalf("%d rows, want 110", n)
	}
	icebergtest.RequireValid(t, tbl)
}

// TestTokenGapAfterRollback: after main is rolled back below the head an expiry
// recorded, the walk does not cross the expiry's gap to a token snapshot that is no
// longer an ancestor of main.
func TestTokenGapAfterRollback(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "expirerollback", writetest.IDNameSchema())
	ident := tbl.Identifier()
	commitWindow := func(sink string, end, first int64) commit.CommitResult {
		t.Helper()
		res, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: sink, WindowEndMs: end, DataFiles: writetest.WriteIDFiles(t, tbl, first, 10)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// z1, c, z2, a and three of b's: expiry keeps the tokens of c, z (z2) and a, and
	// b's head; z1 and b's first two go.
	commitWindow("z", 1000, 900)
	c := commitWindow("c", 1000, 0)
	commitWindow("z", 2000, 910)
	commitWindow("a", 1000, 10)
	for i := range int64(3) {
		commitWindow("b", 1000*(i+1), 100+10*i)
	}
	res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
	if err != nil || res.Expired != 3 || res.Pinned != 3 {
		t.Fatalf("expiry: %+v, %v", res, err)
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if _, found, err := commit.FindToken(tbl.Metadata(), "", "a"); err != nil || !found {
		t.Fatalf("token of a across the gap: found=%v err=%v", found, err)
	}
	// Roll main back to c's snapshot (whose parent z expired) and commit on it: a's
	// snapshot is no longer an ancestor, though it is still in the metadata.
	cur := tbl.CurrentSnapshot().SnapshotID
	if _, _, err := cat.CommitTable(ctx, ident, []table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &cur)},
		[]table.Update{table.NewSetSnapshotRefUpdate(table.MainBranch, c.SnapshotID, table.BranchRef, 0, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	commitWindow("b", 9000, 200)
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if tok, found, err := commit.FindToken(tbl.Metadata(), "", "a"); err != nil || found {
		t.Fatalf("token of a after the rollback: %+v found=%v err=%v, want none", tok, found, err)
	}
	if tok, found, err := commit.FindToken(tbl.Metadata(), "", "c"); err != nil || !found || tok.SnapshotID != c.SnapshotID {
		t.Fatalf("token of c after the rollback: %+v found=%v err=%v", tok, found, err)
	}
}

// TestExpireAfterCompactionDeletesFiles: once the snapshots before a compaction
// expire, the replaced data files and DVs are deleted from storage, and the table
// still reads the model.
func TestExpireAfterCompactionDeletesFiles(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "expirefiles")
	ident := tbl.Identifier()
	model := seedModel()
	churn(t, cat, ident, model, rand.New(rand.NewPCG(15, 16)), 1000, 2000, 3000)
	tbl, _ = cat.LoadTable(ctx, ident)
	old := icebergtest.DataFiles(t, tbl)
	compactAll(t, cat, ident, CompactOptions{RewriteAll: true})
	if _, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The seed sink's token (the first snapshot) pinned the whole history. Once both
	// sinks commit again, their tokens are in the two newest snapshots and everything
	// before them, compaction included, expires.
	if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "seed", WindowEndMs: 2, DataFiles: writetest.WriteIDFiles(t, tbl, 500_000, 1)}); err != nil {
		t.Fatal(err)
	}
	model[500_000] = true
	if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "cdc", WindowEndMs: 99_000, DataFiles: writetest.WriteIDFiles(t, tbl, 500_001, 1)}); err != nil {
		t.Fatal(err)
	}
	model[500_001] = true
	res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
	if err != nil || res.Expired == 0 {
		t.Fatalf("expiry: %+v, %v", res, err)
	}
	for _, f := range old {
		if _, err := fs.Open(f.FilePath()); err == nil {
			t.Errorf("replaced data file %s still exists after expiry", f.FilePath())
		}
	}
	requireModel(t, cat, ident, model, "ids differ from the model")
}

// TestRemoveOrphanFiles: data files written but never committed are listed by a dry
// run (and kept), then removed; committed files stay and the table reads the same.
func TestRemoveOrphanFiles(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.SeededChangeTable(t, cat, "orphans")
	ident := tbl.Identifier()
	orphans := append(writetest.WriteIDFiles(t, tbl, 1000, 5), writetest.WriteIDFiles(t, tbl, 2000, 5)...)
	want := make([]string, len(orphans))
	for i, f := range orphans {
		want[i] = f.FilePath()
	}
	slices.Sort(want)
	// The key index file only a table property references is not an orphan.
	fs, _ := tbl.FS(ctx)
	index := tbl.Location() + "/metadata/1-test.keyindex.puffin"
	if err := fs.(iceio.WriteFileIO).WriteFile(index, []byte("index")); err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(ibg.Properties{keyblob.IndexProperty: index}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	dry, err := RemoveOrphanFiles(ctx, tbl, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stripScheme(dry.Files), stripScheme(want)) || dry.Removed != 0 {
		t.Fatalf("dry run found %v, want %v", dry.Files, want)
	}
	if _, err := fs.Open(want[0]); err != nil {
		t.Fatalf("a dry run removed %s: %v", want[0], err)
	}
	// Files younger than the cut-off are kept (they may belong to a commit in flight).
	if young, err := RemoveOrphanFiles(ctx, tbl, time.Hour, false); err != nil || len(young.Files) != 0 {
		t.Fatalf("older than 1h: %+v, %v", young, err)
	}
	res, err := RemoveOrphanFiles(ctx, tbl, 0, false)
	if err != nil || res.Removed != len(want) {
		t.Fatalf("removal: %+v, %v", res, err)
	}
	for _, p := range want {
		if _, err := fs.Open(p); err == nil {
			t.Errorf("orphan %s still exists", p)
		}
	}
	if _, err := fs.Open(index); err != nil {
		t.Errorf("the key index file was removed: %v", err)
	}
	if n := len(tableIDs(t, cat, ident)); n != 100 {
		t.Fatalf("%d rows after orphan removal, want 100", n)
	}
	icebergtest.RequireValid(t, tbl)
}

// stripScheme returns paths without a file:// or file: scheme, sorted.
func stripScheme(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:")
	}
	slices.Sort(out)
	return out
}

// TestCompactPositionDeletesV2: on a format-version 2 table with classic position
// delete files, compaction folds them in and removes them; the rows are the same.
func TestCompactPositionDeletesV2(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := icebergtest.CreateTable(t, cat, "db.v2", writetest.IDNameSchema(), icebergtest.WithFormatVersion(2))
	ident := tbl.Identifier()
	for i := range int64(3) {
		if _, err := writetest.FastCommitter.Commit(ctx, cat, ident, commit.CommitRequest{SinkID: "v2", WindowEndMs: i + 1, DataFiles: writetest.WriteIDFiles(t, tbl, i*10, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	pos := map[string][]int64{}
	for _, f := range icebergtest.DataFiles(t, tbl) {
		pos[f.FilePath()] = []int64{0, 5}
	}
	tbl = icebergtest.DeletePositionsV2(t, tbl, pos)
	before := tableIDs(t, cat, ident)
	if len(before) != 24 {
		t.Fatalf("%d rows before, want 24", len(before))
	}
	res := compactAll(t, cat, ident, CompactOptions{RewriteAll: true})
	if len(res) != 1 || res[0].FilesRewritten != 3 || res[0].DeleteFilesRemoved != 3 {
		t.Fatalf("compaction %+v", res)
	}
	if after := liveFiles(t, cat, ident); after.DataFiles != 1 || after.DeleteFiles != 0 {
		t.Fatalf("after: %+v", after)
	}
	if got := tableIDs(t, cat, ident); !slices.Equal(got, before) {
		t.Fatalf("ids changed: %v, want %v", got, before)
	}
}

// TestMaintenanceCommitFaults: compaction and expiry commit through the Committer's
// loop: a rewrite whose response was lost is found by the group's id in the
// summary (not rewritten again), and an expiry that loses a race to a writer is
// retried on the reloaded table.
func TestMaintenanceCommitFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("compaction lost response is found", func(t *testing.T) {
		inner := writetest.NewCatalog(t)
		ident := writetest.SeededChangeTable(t, inner, "lostrewrite").Identifier()
		model := seedModel()
		churn(t, inner, ident, model, rand.New(rand.NewPCG(3, 4)), 1000, 2000, 3000)
		cat := &writetest.FaultCatalog{Catalog: inner, After: writetest.LostFirstResponse}
		results := compactAll(t, cat, ident, CompactOptions{DeleteFileThreshold: 1})
		if len(results) != 1 {
			t.Fatalf("%d groups compacted, want 1: %+v", len(results), results)
		}
		res := results[0]
		cur, err := inner.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if head := cur.CurrentSnapshot(); cat.Commits != 1 || res.SnapshotID != head.SnapshotID || res.FilesRewritten == 0 || res.Redos != 0 {
			t.Fatalf("result %+v after %d commits, want the lost rewrite (snapshot %d) found", res, cat.Commits, head.SnapshotID)
		}
		requireModel(t, inner, ident, model, "ids differ from the model after the rewrite")
	})
	t.Run("expiry conflict is retried", func(t *testing.T) {
		inner := writetest.NewCatalog(t)
		tbl := writetest.CreateTable(t, inner, "expireconflict", writetest.IDNameSchema())
		ident := tbl.Identifier()
		for i := range int64(3) {
			writetest.CommitOther(t, inner, ident, i*10, 10)
		}
		cat := &writetest.FaultCatalog{Catalog: inner, Before: func(n int) {
			if n == 0 {
				writetest.CommitOther(t, inner, ident, 100, 10)
			}
		}}
		res, err := ExpireSnapshots(ctx, writetest.FastCommitter, cat, ident, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
		if err != nil {
			t.Fatal(err)
		}
		cur, err := inner.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if cat.Commits != 2 || res.Expired != 3 || len(cur.Metadata().Snapshots()) != 1 {
			t.Fatalf("result %+v after %d commits, %d snapshots left; want 3 expired on the second attempt", res, cat.Commits, len(cur.Metadata().Snapshots()))
		}
		if n := len(tableIDs(t, inner, ident)); n != 40 {
			t.Fatalf("%d rows, want 40", n)
		}
	})
}
