package write

import (
	"cmp"
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
	"github.com/apache/iceberg-go/catalog"
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
// exactly once per (SinkID, WindowEndMs), through commitTable:
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
	branch := cmp.Or(req.Branch, table.MainBranch)
	files := DedupeDataFiles(req.DataFiles)
	ref := WindowRef{SinkID: req.SinkID, RunID: req.RunID, WindowEndMs: req.WindowEndMs, LateID: req.LateID, ContentID: req.ContentID}
	if len(files) == 0 && req.Prepare == nil {
		return c.emptyPane(ctx, cat, ident, branch, ref, 0)
	}
	var fresh []ibg.DataFile // the data files of the last attempt
	stage := func(ctx context.Context, a *tableAttempt) (bool, error) {
		fresh = files
		if !req.FreshFiles || a.tokenProps[LatePaneKey(req.SinkID)] != "" {
			var err error
			if fresh, err = filesNotInTable(ctx, a.tbl, branch, files); err != nil {
				return false, err
			}
			if len(fresh) < len(files) {
				log.Infof(ctx, "iceberg: commit %s: %d of %d data files are already in the table (a retried write); not adding them again",
					name, len(files)-len(fresh), len(files))
			}
		}
		props := make(ibg.Properties, len(req.SnapshotProps)+len(a.tokenProps))
		maps.Copy(props, req.SnapshotProps)
		var prep Prepared
		if req.Prepare != nil {
			var err error
			prep, err = req.Prepare(ctx, Attempt{Number: a.number, Table: a.tbl, Txn: a.txn, Newest: a.newest, Found: a.found, TokenProps: a.tokenProps})
			if err != nil {
				return false, err
			}
			maps.Copy(props, prep.Props)
			a.abandon = prep.Abandon
		}
		maps.Copy(props, a.tokenProps)
		if len(fresh) == 0 && len(prep.Deletes) == 0 {
			return true, nil // nothing to change: no commit, no token
		}
		rd := a.txn.NewRowDelta(props)
		rd.AddRows(fresh...)
		rd.AddDeletes(prep.Deletes...)
		if len(prep.Removed) > 0 {
			rd.RemoveDeletes(prep.Removed...)
		}
		return false, rd.Commit(ctx)
	}
	out, err := c.commitTable(ctx, cat, ident, tableChange{op: "commit", branch: branch, window: &ref, stage: stage})
	if err != nil {
		return fail(err)
	}
	switch {
	case out.held != nil:
		res := resultFromToken(*out.held)
		res.Attempts, res.Conflicts, res.Recovered = out.attempts, out.conflicts, out.sent
		// The token was absent (or older) before our first attempt: when an attempt
		// of ours reached the catalog, the token found now is that commit (whatever
		// the catalog answered), or that of a duplicate of this very request.
		res.Skipped = !out.sent
		if res.Skipped {
			LogSkipped(ctx, name, req.SinkID, req.RunID, req.WindowEndMs, req.LateID, *out.held, len(files))
		}
		return res, nil
	case out.tbl == nil:
		return c.emptyPane(ctx, cat, ident, branch, ref, out.attempts)
	}
	res, err := resultFromTable(out.tbl, branch, fresh)
	if err != nil {
		return fail(err)
	}
	res.LateID = out.tokenProps[LatePaneKey(req.SinkID)]
	res.Attempts, res.Conflicts = out.attempts, out.conflicts
	return res, nil
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
	held, done, newest, found, _, err := CheckWindow(tbl.Metadata(), branch, ref)
	if err != nil {
		return CommitResult{}, config.WrapOp("commit", strings.Join(ident, "."), err)
	}
	tok := held
	if !done {
		if !found || newest.CommittedThroughMs < ref.WindowEndMs {
			return none, nil
		}
		tok = newest
	}
	res := resultFromToken(tok)
	res.Skipped, res.Attempts = true, attempts
	LogSkipped(ctx, strings.Join(ident, "."), ref.SinkID, ref.RunID, ref.WindowEndMs, ref.LateID, tok, 0)
	return res, nil
}

// tableChange is one catalog commit as Committer.commitTable makes it: what each
// attempt changes, and how to tell that an earlier attempt's commit landed.
type tableChange struct {
	// op names the commit in logs ("commit", "heartbeat", "compact", ...).
	op string
	// branch is the branch the transaction commits to; empty means main.
	branch string
	// window, when set, is the sink token the commit carries: every attempt looks for
	// it on the branch (CheckWindow) and ends, committing nothing, when the branch
	// already holds the window (tableOutcome.held); otherwise the attempt's
	// tokenProps are the summary keys to commit, and a commit to main records the
	// committed-through table property in the transaction.
	window *WindowRef
	// landed, when set, is called after an earlier attempt's commit reached the
	// catalog (a lost response, or a conflict the catalog may have misreported):
	// true when it finds that commit in the freshly loaded table (a snapshot
	// property), which ends the loop (tableOutcome.landed).
	landed func(ctx context.Context, a *tableAttempt) (bool, error)
	// stage stages the attempt's change into a.txn, or sets a.raw. done ends the loop
	// without committing (nothing to change). An error that is a conflict
	// (IsConflict, or wrapping config.ErrCommitConflict) retries with a freshly
	// loaded table; any other error ends the commit.
	stage func(ctx context.Context, a *tableAttempt) (done bool, err error)
}

// tableAttempt is one attempt of Committer.commitTable, as a tableChange sees it.
type tableAttempt struct {
	// number counts attempts from 1.
	number int
	// tbl is the table as loaded for this attempt; txn the transaction on the
	// branch, with iceberg-go's own commit retries off.
	tbl *table.Table
	txn *table.Transaction
	// With tableChange.window: newest is the sink's newest token before this commit
	// (found: whether there is one); tokenProps the token keys the commit carries.
	newest     Token
	found      bool
	tokenProps map[string]string
	// abandon, set by stage, removes files the attempt wrote that no later attempt
	// reuses; it runs when stage fails or the commit loses a race.
	abandon func()
	// raw, set by stage, is committed with CatalogIO.CommitTable instead of txn: for
	// updates no transaction stages (snapshot expiry's own selection).
	raw *table.TableCommit
}

// tableOutcome is what Committer.commitTable did.
type tableOutcome struct {
	// tbl is the table as the commit left it; nil when nothing was committed.
	tbl *table.Table
	// attempts made, and how many of them before the last lost a race.
	attempts, conflicts int
	// sent: an attempt's commit reached the catalog.
	sent bool
	// held is the token that already held tableChange.window (nothing committed);
	// tokenProps the token keys of the last attempt.
	held       *Token
	tokenProps map[string]string
	// landed: tableChange.landed found an earlier attempt's commit.
	landed bool
}

// commitTable makes every catalog commit of the module (appends and row deltas,
// schema updates, heartbeats, manifest merges, compaction, expiry): the one loop of
// load, token check, staging, commit and retry. Each attempt, up to MaxAttempts
// (DefaultMaxAttempts when unset) with a jittered exponential backoff before each
// retry:
//
//   - loads table ident fresh (a missing table, wrapping config.ErrTableNotFound,
//     ends the loop; any other load failure is retried);
//   - with ch.window, looks for the sink's token and ends when the window is held;
//   - after an attempt whose commit reached the catalog, asks ch.landed whether it
//     landed (a lost response: a non-conflict commit error may hide a commit);
//   - opens a transaction on the branch with iceberg-go's own retries off (they
//     could replay a first DV over a concurrent one: this loop retries with a fresh
//     table instead), lets ch.stage stage the change and commits it;
//   - retries a conflict (IsConflict: table.ErrCommitFailed, or the "requirement
//     failed" errors of SQL, Glue, Hive and Hadoop catalogs) and an unknown outcome.
//
// When the attempts run out the error says it gave up, wrapping
// config.ErrCommitConflict when the last attempt lost a race.
func (c Committer) commitTable(ctx context.Context, cat table.CatalogIO, ident table.Identifier, ch tableChange) (tableOutcome, error) {
	name, branch := strings.Join(ident, "."), cmp.Or(ch.branch, table.MainBranch)
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	var (
		out      tableOutcome
		last     error // the failure of the last attempt, which another may overcome
		conflict bool  // whether it lost a race
	)
	for n := range maxAttempts {
		if n > 0 {
			if conflict {
				out.conflicts++
			}
			if err := c.sleep(ctx, n); err != nil {
				return out, errors.Join(err, last)
			}
		}
		out.attempts = n + 1
		tbl, err := loadTable(ctx, cat, ident)
		switch {
		case err != nil && (errors.Is(err, config.ErrTableNotFound) || ctx.Err() != nil):
			return out, err
		case err != nil:
			last, conflict = err, false
			continue
		}
		a := &tableAttempt{number: n + 1, tbl: tbl}
		if ch.window != nil {
			held, done, newest, found, props, err := CheckWindow(tbl.Metadata(), branch, *ch.window)
			if err != nil || done {
				if done {
					out.held = &held
				}
				return out, err
			}
			a.newest, a.found, a.tokenProps, out.tokenProps = newest, found, props, props
		}
		if out.sent && ch.landed != nil {
			if out.landed, err = ch.landed(ctx, a); err != nil || out.landed {
				return out, err
			}
		}
		txTbl, err := withoutRetries(tbl, cat)
		if err != nil {
			return out, err
		}
		if a.txn, err = txTbl.NewTransactionOnBranchWithError(branch); err != nil {
			return out, err
		}
		if ch.window != nil && branch == table.MainBranch {
			key := CommittedThroughKey(ch.window.SinkID)
			if err := a.txn.SetProperties(ibg.Properties{key: a.tokenProps[key]}); err != nil {
				return out, err
			}
		}
		done, err := ch.stage(ctx, a)
		if err != nil {
			if a.abandon != nil {
				a.abandon()
			}
			if IsConflict(err) || errors.Is(err, config.ErrCommitConflict) {
				last, conflict = err, true
				continue
			}
			return out, err
		}
		if done {
			return out, nil
		}
		var committed *table.Table
		if a.raw != nil {
			meta, loc, cerr := cat.CommitTable(ctx, ident, a.raw.Requirements, a.raw.Updates)
			if err = cerr; err == nil {
				committed = table.New(ident, meta, loc, tbl.FS, cat)
			}
		} else {
			committed, err = a.txn.Commit(ctx)
		}
		out.sent = true
		switch {
		case err == nil:
			out.tbl = committed
			return out, nil
		case IsConflict(err):
			if a.abandon != nil {
				a.abandon()
			}
			log.Infof(ctx, "iceberg: %s %s: attempt %d lost a race, retrying: %v", ch.op, name, n+1, err)
			last, conflict = err, true
		case ctx.Err() != nil:
			return out, errors.Join(ctx.Err(), err)
		default:
			// The catalog may have applied the commit: the next attempt checks.
			log.Warnf(ctx, "iceberg: %s %s: attempt %d ended in an unknown state, checking: %v", ch.op, name, n+1, err)
			last, conflict = err, false
		}
	}
	if conflict {
		return out, fmt.Errorf("%w: gave up after %d attempts: %w", config.ErrCommitConflict, maxAttempts, last)
	}
	return out, fmt.Errorf("gave up after %d attempts: %w", maxAttempts, last)
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
