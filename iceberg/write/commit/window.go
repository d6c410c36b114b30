package commit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// CommitRequest is one window's worth of changes for one table.
type CommitRequest struct {
	// SinkID identifies the sink; its token in the snapshot summary makes commits
	// idempotent. Required.
	SinkID string
	// WindowEndMs is the end of the window being committed, in epoch milliseconds
	// (for the global window, its max timestamp). A branch whose token for SinkID is at
	// or past WindowEndMs has this window already.
	WindowEndMs int64
	// RunID is the committing run (see WindowRef.RunID).
	RunID string
	// LateID, when set, marks the request as a late pane of the window (see
	// WindowRef.LateID): it commits even though the sink's token is past the window,
	// once per LateID.
	LateID string
	// ContentID identifies the request's content (see WindowRef.ContentID).
	ContentID string
	// DataFiles are the new data files. Duplicate paths are committed once, and a path
	// already in the table is not added again (see FreshFiles).
	DataFiles []ibg.DataFile
	// SnapshotProps are extra snapshot summary properties. The committer sets the
	// token keys itself and overwrites any value given for them.
	SnapshotProps map[string]string
	// Branch is the branch to commit to; empty means main.
	Branch string
	// Deletes, when set, adds each attempt's deletes (merge-on-read), after the token
	// check. With Deletes set, a request without data files is committed when the
	// attempt adds deletes.
	Deletes Deletes
	// FreshFiles says no data file can already be in the table (merge-on-read shards
	// write new paths that only this commit names). Otherwise data files whose path is
	// already a live data file of the branch (a retried write committed under another
	// token) are dropped, which reads the branch's data manifests on every attempt.
	// A late pane is always checked: an on-time pane CheckWindow commits as a late pane
	// may hold parts an on-time commit of its window already committed (a retried
	// commit step whose state gained a pane in between).
	FreshFiles bool
}

// Deletes adds the deletes of a window commit on each attempt (merge-on-read: the
// window's keys resolved on the attempt's table).
type Deletes interface {
	// Prepare returns the deletes of attempt a, staged on its freshly loaded table.
	// An error wrapping config.ErrCommitConflict makes the committer reload the table
	// and try again (within its bound); any other error ends the commit.
	Prepare(ctx context.Context, a *Attempt) (Prepared, error)
	// Abandon removes the files a's Prepare wrote when a does not commit (a conflict)
	// and no later attempt reuses them.
	Abandon(ctx context.Context, a *Attempt)
}

// Prepared is what CommitRequest.Prepare adds to an attempt.
type Prepared struct {
	// Deletes are delete files to add; Removed are deletion vectors they replace.
	Deletes, Removed []ibg.DataFile
	// Props are extra snapshot summary properties of this attempt.
	Props map[string]string
}

// CommitResult describes the snapshot a commit made, or the one that already held the
// window when the commit was skipped.
type CommitResult struct {
	// SnapshotID is the new snapshot, or the snapshot carrying the token when Skipped.
	// Zero when there was nothing to commit.
	SnapshotID int64
	// SequenceNumber is that snapshot's sequence number.
	SequenceNumber int64
	// Operation is that snapshot's operation (append, overwrite, delete).
	Operation string
	// FilesAdded is the number of data files the snapshot added.
	FilesAdded int64
	// RowsAdded is the number of rows the snapshot added.
	RowsAdded int64
	// Skipped is true when the window had already been committed (for example by an
	// earlier run with the same sink id) and nothing new was committed.
	Skipped bool
	// LateID is the late pane id the commit carried (see WindowRef): a late pane, or
	// rows of a window an earlier run committed. Empty for an on-time commit.
	LateID string
	// Summary is the snapshot's summary properties (of the snapshot that already held
	// the window when Skipped).
	Summary ibg.Properties
	// Attempts is the number of attempts made; Conflicts how many of them lost a race.
	Attempts, Conflicts int
	// Recovered is true when an attempt's response was lost (an unknown outcome) and
	// a later attempt found that it had committed.
	Recovered bool
	// BytesAdded is the size of the data files added.
	BytesAdded int64
	// DeleteFilesAdded and EqualityDeletesAdded count the delete files and equality
	// delete rows the snapshot added (from its summary).
	DeleteFilesAdded, EqualityDeletesAdded int64
	// Merge-on-read (write.CommitChanges): DVsAdded and DVsRemoved count the deletion
	// vectors added and replaced, PositionsDeleted the rows they newly delete,
	// EqualityDeleteFiles the equality delete files added, and Reresolved the attempts
	// whose keys were resolved again because the table changed under them.
	DVsAdded, DVsRemoved int
	PositionsDeleted     int64
	EqualityDeleteFiles  int
	Reresolved           int
}

// Commit commits req to the table ident of cat with the default Committer.
func Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, req CommitRequest) (CommitResult, error) {
	return Committer{}.Commit(ctx, cat, ident, req)
}

// Commit commits req to the table ident of cat as one snapshot made by a RowDelta,
// exactly once per (SinkID, WindowEndMs), through CommitTable (windowCommit):
//
//   - every attempt reloads the table and looks for the sink's token on the branch;
//     a window already committed is skipped (Skipped=true);
//   - a conflict (table.ErrCommitFailed, or the "requirement failed" errors with which
//     SQL, Glue, Hive and Hadoop catalogs report a stale base) is retried with a fresh
//     transaction after a jittered backoff;
//   - any other commit error may mean the commit landed (a lost response,
//     rest.ErrCommitStateUnknown): the next attempt first reloads and looks for the
//     token, and only commits again when it is absent.
//
// The loop is bounded by MaxAttempts; when conflicts exhaust it the error wraps
// config.ErrCommitConflict. A missing table wraps config.ErrTableNotFound.
func (c Committer) Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, req CommitRequest) (CommitResult, error) {
	name := strings.Join(ident, ".")
	fail := func(err error) (CommitResult, error) {
		return CommitResult{}, config.WrapOp("commit", name, err)
	}
	if req.SinkID == "" {
		return fail(fmt.Errorf("%w: empty sink id", config.ErrInvalidConfig))
	}
	w := &windowCommit{req: req, name: name, branch: cmp.Or(req.Branch, table.MainBranch), files: DedupeDataFiles(req.DataFiles),
		ref: WindowRef{SinkID: req.SinkID, RunID: req.RunID, WindowEndMs: req.WindowEndMs, LateID: req.LateID, ContentID: req.ContentID}}
	if len(w.files) == 0 && req.Deletes == nil {
		return c.emptyPane(ctx, cat, ident, w.branch, w.ref, 0)
	}
	out, err := c.CommitTable(ctx, cat, ident, w)
	if err != nil {
		return fail(err)
	}
	switch {
	case out.Held != nil:
		res := resultFromToken(*out.Held)
		res.Attempts, res.Conflicts, res.Recovered = out.Attempts, out.Conflicts, out.Sent
		// The token was absent (or older) before our first attempt: when an attempt
		// of ours reached the catalog, the token found now is that commit (whatever
		// the catalog answered), or that of a duplicate of this very request.
		res.Skipped = !out.Sent
		if res.Skipped {
			LogSkipped(ctx, name, req.SinkID, req.RunID, req.WindowEndMs, req.LateID, *out.Held, len(w.files))
		}
		return res, nil
	case out.Table == nil:
		return c.emptyPane(ctx, cat, ident, w.branch, w.ref, out.Attempts)
	}
	res, err := resultFromTable(out.Table, w.branch, w.fresh)
	if err != nil {
		return fail(err)
	}
	res.LateID = out.TokenProps[LatePaneKey(req.SinkID)]
	res.Attempts, res.Conflicts = out.Attempts, out.Conflicts
	return res, nil
}

// windowCommit is the Change of a window commit (Committer.Commit): the data files
// of one window or late pane of a sink, under its token, with the deletes of
// req.Deletes. A late pane differs only by its LateID, which CheckWindow looks for.
type windowCommit struct {
	req          CommitRequest
	name, branch string
	files        []ibg.DataFile // req's data files without repeated paths
	ref          WindowRef
	fresh        []ibg.DataFile // the data files of the last attempt
}

func (w *windowCommit) Op() string { return "commit" }

func (w *windowCommit) Window() (string, WindowRef) { return w.branch, w.ref }

// Stage adds the attempt's data files that are not already in the table (unless
// req.FreshFiles), and the deletes of req.Deletes, to one RowDelta with the token.
func (w *windowCommit) Stage(ctx context.Context, a *Attempt) (bool, error) {
	w.fresh = w.files
	if !w.req.FreshFiles || a.TokenProps[LatePaneKey(w.req.SinkID)] != "" {
		var err error
		if w.fresh, err = filesNotInTable(ctx, a.Table, w.branch, w.files); err != nil {
			return false, err
		}
		if len(w.fresh) < len(w.files) {
			log.Infof(ctx, "iceberg: commit %s: %d of %d data files are already in the table (a retried write); not adding them again",
				w.name, len(w.files)-len(w.fresh), len(w.files))
		}
	}
	props := make(ibg.Properties, len(w.req.SnapshotProps)+len(a.TokenProps))
	maps.Copy(props, w.req.SnapshotProps)
	var prep Prepared
	if w.req.Deletes != nil {
		var err error
		if prep, err = w.req.Deletes.Prepare(ctx, a); err != nil {
			return false, err
		}
		maps.Copy(props, prep.Props)
	}
	maps.Copy(props, a.TokenProps)
	if len(w.fresh) == 0 && len(prep.Deletes) == 0 {
		return true, nil // nothing to change: no commit, no token
	}
	rd := a.Txn.NewRowDelta(props)
	rd.AddRows(w.fresh...)
	rd.AddDeletes(prep.Deletes...)
	if len(prep.Removed) > 0 {
		rd.RemoveDeletes(prep.Removed...)
	}
	return false, rd.Commit(ctx)
}

// Landed is false: the token check of the next attempt finds a window commit that
// landed.
func (w *windowCommit) Landed(context.Context, *Attempt) (bool, error) { return false, nil }

// Abandon removes the files the attempt's deletes wrote.
func (w *windowCommit) Abandon(ctx context.Context, a *Attempt) {
	if w.req.Deletes != nil {
		w.req.Deletes.Abandon(ctx, a)
	}
}

// emptyPane is the result of a pane with nothing to commit (attempts made): Skipped,
// naming the snapshot that holds the window, when the sink has committed its window
// already (a streaming rerun whose rows were all replays of what an earlier run
// committed); otherwise the zero result: nothing committed. A late pane, or a
// table that does not exist, commits nothing either.
func (c Committer) emptyPane(ctx context.Context, cat table.CatalogIO, ident table.Identifier, branch string, ref WindowRef, attempts int) (CommitResult, error) {
	none := CommitResult{Attempts: attempts}
	if ref.LateID != "" {
		return none, nil
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return none, nil
	}
	if err != nil {
		return CommitResult{}, config.WrapOp("commit", strings.Join(ident, "."), err)
	}
	w, err := CheckWindow(tbl.Metadata(), branch, ref)
	if err != nil {
		return CommitResult{}, config.WrapOp("commit", strings.Join(ident, "."), err)
	}
	tok := w.Held
	if !w.Done {
		if !w.Found || w.Newest.CommittedThroughMs < ref.WindowEndMs {
			return none, nil
		}
		tok = w.Newest
	}
	res := resultFromToken(tok)
	res.Skipped, res.Attempts = true, attempts
	LogSkipped(ctx, strings.Join(ident, "."), ref.SinkID, ref.RunID, ref.WindowEndMs, ref.LateID, tok, 0)
	return res, nil
}

// MetricsNamespace is the namespace of the write's Beam metrics.
const MetricsNamespace = "icebeam"

// PanesSkipped counts panes found already committed (a retried bundle, a lost commit
// response, or a rerun with the same sink id); they add nothing to the written-work
// counters. SkippedWithData counts those of them, and merge-on-read windows, whose
// data was dropped because the sink's token survived only as the table's
// committed-through property (the run that committed them had its snapshots
// expired), so their rows could not be told from those committed.
var (
	PanesSkipped    = beam.NewCounter(MetricsNamespace, "panes_skipped_committed")
	SkippedWithData = beam.NewCounter(MetricsNamespace, "panes_skipped_with_data")
)

// LogSkipped counts and logs a commit found already made, which commits nothing
// and so adds nothing to the written-work counters: by this run (a retried bundle
// or a lost response), by an earlier run with the same sink_id (a rerun), or by a
// run whose snapshots have expired (the token is the table's committed-through
// property): then files of the pane cannot be told from those committed and are
// dropped, a warning, counted in panes_skipped_with_data when there were any.
func LogSkipped(ctx context.Context, name, sinkID, runID string, windowEndMs int64, lateID string, tok Token, files int) {
	PanesSkipped.Inc(ctx, 1)
	switch {
	case tok.FromProperty:
		if files > 0 {
			SkippedWithData.Inc(ctx, 1)
		}
		log.Warnf(ctx, "iceberg: commit %s: window ending %d%s already committed by sink_id %s (committed through %d) in a run whose snapshots have expired; its %d data files are not committed (set token_heartbeat_seconds, or expire less history)",
			name, windowEndMs, lateSuffix(lateID), sinkID, tok.CommittedThroughMs, files)
	case tok.PriorThrough(sinkID, runID) >= windowEndMs:
		log.Infof(ctx, "iceberg: commit %s: window ending %d%s already committed by this sink_id (%s) in an earlier run (snapshot %d, committed through %d); not committed again (a rerun: %d data files of this run dropped)",
			name, windowEndMs, lateSuffix(lateID), sinkID, tok.SnapshotID, tok.CommittedThroughMs, files)
	default:
		log.Infof(ctx, "iceberg: commit %s: window ending %d%s already committed by this run of sink_id %s (snapshot %d); not committed again (a retried bundle or a lost commit response)",
			name, windowEndMs, lateSuffix(lateID), sinkID, tok.SnapshotID)
	}
}

func lateSuffix(lateID string) string {
	if lateID == "" {
		return ""
	}
	return " (late pane " + lateID + ")"
}

// DedupeDataFiles returns files without repeated paths (and nil entries), keeping the
// first of each.
func DedupeDataFiles(files []ibg.DataFile) []ibg.DataFile {
	seen := make(map[string]struct{}, len(files))
	out := make([]ibg.DataFile, 0, len(files))
	for _, f := range files {
		if f == nil {
			continue
		}
		if _, dup := seen[f.FilePath()]; dup {
			continue
		}
		seen[f.FilePath()] = struct{}{}
		out = append(out, f)
	}
	return out
}

// filesNotInTable returns files without those whose path is already a live data file
// of branch: RowDelta.AddRows would add such a path a second time (a retried bundle
// whose files were committed, for example, under another window's token). It reads
// the branch's data manifests.
func filesNotInTable(ctx context.Context, tbl *table.Table, branch string, files []ibg.DataFile) ([]ibg.DataFile, error) {
	snap := tbl.Metadata().SnapshotByName(branch)
	if snap == nil || len(files) == 0 {
		return files, nil
	}
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.FilePath()] = true
	}
	fs, err := catalogs.FS(ctx, tbl)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("list manifests: %w", err)
	}
	present := map[string]bool{}
	for _, m := range manifests {
		if m.ManifestContent() != ibg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if p := e.DataFile().FilePath(); want[p] {
				present[p] = true
			}
		}
	}
	if len(present) == 0 {
		return files, nil
	}
	out := make([]ibg.DataFile, 0, len(files)-len(present))
	for _, f := range files {
		if !present[f.FilePath()] {
			out = append(out, f)
		}
	}
	return out, nil
}

func resultFromTable(tbl *table.Table, branch string, files []ibg.DataFile) (CommitResult, error) {
	snap := tbl.Metadata().SnapshotByName(branch)
	if snap == nil {
		return CommitResult{}, config.OpErrorf("commit", strings.Join(tbl.Identifier(), "."),
			"branch %s has no snapshot after commit", branch)
	}
	res := CommitResult{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
		FilesAdded: int64(len(files))}
	if snap.Summary != nil {
		res.Operation = string(snap.Summary.Operation)
		res.Summary = snap.Summary.Properties
		res.deletesFromSummary()
	}
	for _, f := range files {
		res.RowsAdded += f.Count()
		res.BytesAdded += f.FileSizeBytes()
	}
	return res, nil
}

func resultFromToken(tok Token) CommitResult {
	res := CommitResult{SnapshotID: tok.SnapshotID, SequenceNumber: tok.SequenceNumber}
	if tok.Summary != nil {
		res.Operation = string(tok.Summary.Operation)
		res.Summary = tok.Summary.Properties
		res.FilesAdded, _ = strconv.ParseInt(tok.Summary.Properties["added-data-files"], 10, 64)
		res.RowsAdded, _ = strconv.ParseInt(tok.Summary.Properties["added-records"], 10, 64)
		res.deletesFromSummary()
	}
	return res
}

// deletesFromSummary sets the delete file counts from r.Summary.
func (r *CommitResult) deletesFromSummary() {
	r.DeleteFilesAdded, _ = strconv.ParseInt(r.Summary["added-delete-files"], 10, 64)
	r.EqualityDeletesAdded, _ = strconv.ParseInt(r.Summary["added-equality-deletes"], 10, 64)
}
