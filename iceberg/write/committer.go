package write

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Default bounds of the committer's retry loop.
const (
	DefaultMaxAttempts = 10
	DefaultMinBackoff  = 50 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
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
	// Prepare, when set, is called on every attempt after the token check (see
	// Attempt), and adds the attempt's deletes (merge-on-read). An error wrapping
	// config.ErrCommitConflict makes the committer reload the table and try again
	// (within its bound); any other error ends the commit. With Prepare set, a request
	// without data files is committed when Prepare adds deletes.
	Prepare func(ctx context.Context, a Attempt) (Prepared, error)
	// FreshFiles says no data file can already be in the table (merge-on-read shards
	// write new paths that only this commit names). Otherwise data files whose path is
	// already a live data file of the branch (a retried write committed under another
	// token) are dropped, which reads the branch's data manifests on every attempt.
	// A late pane is always checked: an on-time pane CheckWindow commits as a late pane
	// may hold parts an on-time commit of its window already committed (a retried
	// commit step whose state gained a pane in between).
	FreshFiles bool
}

// Attempt is one attempt of the Committer, as CommitRequest.Prepare sees it.
type Attempt struct {
	// Number counts attempts from 1.
	Number int
	// Table is the table as loaded for this attempt (iceberg-go's own commit retries
	// off), Txn the transaction the attempt commits.
	Table *table.Table
	Txn   *table.Transaction
	// Newest is the sink's newest token before this commit (Found: whether there is
	// one); TokenProps are the token properties the commit carries.
	Newest     Token
	Found      bool
	TokenProps map[string]string
}

// Prepared is what CommitRequest.Prepare adds to an attempt.
type Prepared struct {
	// Deletes are delete files to add; Removed are deletion vectors they replace.
	Deletes, Removed []ibg.DataFile
	// Props are extra snapshot summary properties of this attempt.
	Props map[string]string
	// Abandon, when set, is called when the attempt does not commit (a conflict):
	// it removes files the attempt wrote that no later attempt reuses.
	Abandon func()
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
	// Merge-on-read (CommitChanges): DVsAdded and DVsRemoved count the deletion
	// vectors added and replaced, PositionsDeleted the rows they newly delete,
	// EqualityDeleteFiles the equality delete files added, and Reresolved the attempts
	// whose keys were resolved again because the table changed under them.
	DVsAdded, DVsRemoved int
	PositionsDeleted     int64
	EqualityDeleteFiles  int
	Reresolved           int
}

// Committer commits windows of data files to tables. Its zero value is ready to use
// with the default bounds.
type Committer struct {
	// MaxAttempts bounds the number of commit attempts (default DefaultMaxAttempts).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the jittered exponential wait between attempts
	// (defaults DefaultMinBackoff and DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
}

// Commit commits req to the table ident of cat with the default Committer.
func Commit(ctx context.Context, cat table.CatalogIO, ident table.Identifier, req CommitRequest) (CommitResult, error) {
	return Committer{}.Commit(ctx, cat, ident, req)
}

// Commit commits req to the table ident of cat as one snapshot made by a RowDelta,
// exactly once per (SinkID, WindowEndMs):
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
	branch := req.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	files := DedupeDataFiles(req.DataFiles)
	if len(files) == 0 && req.Prepare == nil {
		return CommitResult{}, nil
	}
	ref := WindowRef{SinkID: req.SinkID, RunID: req.RunID, WindowEndMs: req.WindowEndMs, LateID: req.LateID, ContentID: req.ContentID}

	var (
		out  CommitResult
		sent bool // an earlier attempt reached the catalog and may have committed
	)
	err := c.retry(ctx, func(attempt, conflicts int) (*retryable, error) {
		tbl, again, err := attemptLoad(ctx, cat, ident)
		if tbl == nil {
			return again, err
		}
		tok, done, newest, found, tokenProps, err := CheckWindow(tbl.Metadata(), branch, ref)
		if err != nil {
			return nil, err
		}
		if done {
			out = resultFromToken(tok)
			out.Attempts, out.Conflicts, out.Recovered = attempt+1, conflicts, sent
			// The token was absent (or older) before our first attempt: when an attempt
			// of ours reached the catalog, the token found now is that commit (whatever
			// the catalog answered), or that of a duplicate of this very request.
			out.Skipped = !sent
			if out.Skipped {
				LogSkipped(ctx, name, req.SinkID, req.RunID, req.WindowEndMs, req.LateID, tok, len(files))
			}
			return nil, nil
		}

		fresh := files
		if !req.FreshFiles || tokenProps[LatePaneKey(req.SinkID)] != "" {
			if fresh, err = filesNotInTable(ctx, tbl, branch, files); err != nil {
				return nil, err
			}
			if len(fresh) < len(files) {
				log.Infof(ctx, "iceberg: commit %s: %d of %d data files are already in the table (a retried write); not adding them again",
					name, len(files)-len(fresh), len(files))
			}
		}
		// iceberg-go's own retries are off: it could replay a first DV over a
		// concurrent one; this loop retries with a fresh table instead.
		txTbl, err := withoutRetries(tbl, cat)
		if err != nil {
			return nil, err
		}
		txn, err := txTbl.NewTransactionOnBranchWithError(branch)
		if err != nil {
			return nil, err
		}
		if branch == table.MainBranch {
			key := CommittedThroughKey(req.SinkID)
			if err := txn.SetProperties(ibg.Properties{key: tokenProps[key]}); err != nil {
				return nil, err
			}
		}
		props := make(ibg.Properties, len(req.SnapshotProps)+len(tokenProps))
		maps.Copy(props, req.SnapshotProps)
		var prep Prepared
		if req.Prepare != nil {
			prep, err = req.Prepare(ctx, Attempt{Number: attempt + 1, Table: tbl, Txn: txn, Newest: newest, Found: found, TokenProps: tokenProps})
			if err != nil {
				if errors.Is(err, config.ErrCommitConflict) {
					return &retryable{err: err, conflict: true}, nil
				}
				return nil, err
			}
			maps.Copy(props, prep.Props)
		}
		maps.Copy(props, tokenProps)
		abandon := func() {
			if prep.Abandon != nil {
				prep.Abandon()
			}
		}
		if len(fresh) == 0 && len(prep.Deletes) == 0 {
			out = CommitResult{Attempts: attempt + 1} // nothing to change: no commit, no token
			return nil, nil
		}
		rd := txn.NewRowDelta(props)
		rd.AddRows(fresh...)
		rd.AddDeletes(prep.Deletes...)
		if len(prep.Removed) > 0 {
			rd.RemoveDeletes(prep.Removed...)
		}
		if err := rd.Commit(ctx); err != nil {
			abandon()
			if IsConflict(err) {
				return &retryable{err: err, conflict: true}, nil
			}
			return nil, err
		}
		committed, err := txn.Commit(ctx)
		sent = true
		switch {
		case err == nil:
			res, err := resultFromTable(committed, branch, fresh)
			res.LateID = tokenProps[LatePaneKey(req.SinkID)]
			res.Attempts, res.Conflicts = attempt+1, conflicts
			out = res
			return nil, err
		case IsConflict(err):
			abandon()
			log.Infof(ctx, "iceberg: commit %s: attempt %d lost a race, retrying: %v", name, attempt+1, err)
			return &retryable{err: err, conflict: true}, nil
		case ctx.Err() != nil:
			return nil, errors.Join(ctx.Err(), err)
		default:
			// The catalog may have applied the commit: the next attempt looks for the token.
			log.Warnf(ctx, "iceberg: commit %s: attempt %d ended in an unknown state, checking: %v", name, attempt+1, err)
			return &retryable{err: err}, nil
		}
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// retryable is an attempt's error that another attempt may overcome: a conflict
// (someone else committed first) or an unknown outcome (a lost response, a catalog
// that failed to answer).
type retryable struct {
	err      error
	conflict bool
}

// retry is the module's commit retry loop: it calls try for attempt 0, 1, ... up to
// MaxAttempts (DefaultMaxAttempts when unset) with the jittered exponential backoff
// before each retry, until try returns no retryable (then retry returns try's error).
// try gets the attempt number and the number of earlier attempts that ended in a
// conflict. After the last attempt the error says it gave up, wrapping
// config.ErrCommitConflict when that attempt lost a race.
func (c Committer) retry(ctx context.Context, try func(attempt, conflicts int) (*retryable, error)) error {
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	last := &retryable{}
	conflicts := 0
	for attempt := range maxAttempts {
		if last.conflict {
			conflicts++
		}
		if attempt > 0 {
			if err := c.sleep(ctx, attempt); err != nil {
				return errors.Join(err, last.err)
			}
		}
		again, err := try(attempt, conflicts)
		if again == nil {
			return err
		}
		last = again
	}
	if last.conflict {
		return fmt.Errorf("%w: gave up after %d attempts: %w", config.ErrCommitConflict, maxAttempts, last.err)
	}
	return fmt.Errorf("gave up after %d attempts: %w", maxAttempts, last.err)
}

// attemptLoad loads table ident at the start of a commit attempt. A missing table
// (wrapping config.ErrTableNotFound) or a cancelled context ends the loop; any other
// load failure is retryable. tbl is nil whenever the attempt cannot go on.
func attemptLoad(ctx context.Context, cat table.CatalogIO, ident table.Identifier) (tbl *table.Table, again *retryable, err error) {
	tbl, err = loadTable(ctx, cat, ident)
	switch {
	case err == nil:
		return tbl, nil, nil
	case errors.Is(err, config.ErrTableNotFound) || ctx.Err() != nil:
		return nil, nil, err
	default:
		return nil, &retryable{err: err}, nil
	}
}

// withoutRetries returns tbl with iceberg-go's commit retries off
// (commit.retry.num-retries=0), bound to cat for committing.
func withoutRetries(tbl *table.Table, cat table.CatalogIO) (*table.Table, error) {
	meta := tbl.Metadata()
	if v, ok := meta.Properties()[table.CommitNumRetriesKey]; ok && v != "0" {
		b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
		if err != nil {
			return nil, err
		}
		props := maps.Clone(meta.Properties())
		props[table.CommitNumRetriesKey] = "0"
		if err := b.SetProperties(props); err != nil {
			return nil, err
		}
		if meta, err = b.Build(); err != nil {
			return nil, err
		}
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, cat), nil
}

// LogSkipped logs a commit found already made: by this run (a retried bundle or a
// lost response, expected) or by an earlier run (a batch rerun, or a window whose
// history has expired): a warning when the skipped commit carried data (a sink_id
// reused for new data?).
func LogSkipped(ctx context.Context, name, sinkID, runID string, windowEndMs int64, lateID string, tok Token, changes int) {
	PanesSkipped.Inc(ctx, 1)
	if (tok.FromProperty || tok.PriorThrough(sinkID, runID) >= windowEndMs) && changes > 0 {
		SkippedWithData.Inc(ctx, 1)
		log.Warnf(ctx, "iceberg: commit %s: sink %s committed through %d in an earlier run; %d changes of the window ending %d were skipped (a rerun, or a sink_id reused for new data?)",
			name, sinkID, tok.CommittedThroughMs, changes, windowEndMs)
		return
	}
	log.Infof(ctx, "iceberg: commit %s: sink %s already committed window ending %d%s (snapshot %d, through %d); %d changes skipped (a retried commit)",
		name, sinkID, windowEndMs, lateSuffix(lateID), tok.SnapshotID, tok.CommittedThroughMs, changes)
}

func lateSuffix(lateID string) string {
	if lateID == "" {
		return ""
	}
	return " (late pane " + lateID + ")"
}

// sleep waits the jittered exponential backoff before attempt (1-based retries).
func (c Committer) sleep(ctx context.Context, attempt int) error {
	lo, hi := c.MinBackoff, c.MaxBackoff
	if lo <= 0 {
		lo = DefaultMinBackoff
	}
	if hi <= 0 {
		hi = DefaultMaxBackoff
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	d = d/2 + rand.N(d/2+1) // full jitter over the upper half
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// IsConflict reports whether err says the commit's base was stale and nothing was
// committed: table.ErrCommitFailed (REST 409, SQL compare-and-swap) or the plain
// "requirement failed" errors of catalogs that validate requirements themselves.
func IsConflict(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	if errors.Is(err, rest.ErrCommitStateUnknown) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed") &&
		(strings.Contains(msg, "has changed") || strings.Contains(msg, "created concurrently") ||
			strings.Contains(msg, "is missing"))
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
