package commit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Default bounds of the committer's retry loop.
const (
	DefaultMaxAttempts = 10
	DefaultMinBackoff  = 50 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
)

// Committer commits windows of data files to tables. Its zero value is ready to use
// with the default bounds.
type Committer struct {
	// MaxAttempts bounds the number of commit attempts (default DefaultMaxAttempts).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the jittered exponential wait between attempts
	// (defaults DefaultMinBackoff and DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
}

// Change is one kind of catalog commit, as Committer.CommitTable makes it: what each
// attempt changes, how to tell that an earlier attempt's commit landed, and what to
// remove when an attempt does not commit. Each kind of commit is a named type: the
// window commit (a sink's window or late pane, with its deletes in merge-on-read,
// window.go), the heartbeat (heartbeat.go), the schema evolution (package write),
// and the rewrite, expiry and manifest merge of package maintain. A Change that
// carries a sink's token also implements Windowed.
type Change interface {
	// Op names the commit in logs ("commit", "heartbeat", "compact", ...).
	Op() string
	// Stage stages the attempt's change into a.Txn, or sets a.Raw. done ends the loop
	// without committing (nothing to change). An error that is a conflict
	// (IsConflict, or wrapping config.ErrCommitConflict) retries with a freshly
	// loaded table; any other error ends the commit.
	Stage(ctx context.Context, a *Attempt) (done bool, err error)
	// Landed is asked after an earlier attempt's commit reached the catalog (a lost
	// response, or a conflict the catalog may have misreported): true when it finds
	// that commit in the freshly loaded a.Table (a snapshot property), which ends the
	// loop (Outcome.Landed).
	Landed(ctx context.Context, a *Attempt) (bool, error)
	// Abandon removes files attempt a wrote that no later attempt reuses; it runs when
	// Stage fails or the commit loses a race.
	Abandon(ctx context.Context, a *Attempt)
}

// Windowed is a Change that carries a sink's token: every attempt looks for the
// window on the branch (CheckWindow) and ends, committing nothing, when the branch
// already holds it (Outcome.Held); otherwise the attempt's TokenProps are the summary
// keys to commit, and a commit to main records the committed-through table property
// in the transaction.
type Windowed interface {
	Change
	// Window returns the branch the commit goes to (empty: main) and its token.
	Window() (branch string, ref WindowRef)
}

// Attempt is one attempt of Committer.CommitTable, as a Change sees it.
type Attempt struct {
	// Number counts attempts from 1.
	Number int
	// Table is the table as loaded for this attempt; Txn the transaction on the
	// branch, with iceberg-go's own commit retries off.
	Table *table.Table
	Txn   *table.Transaction
	// Of a Windowed change: Newest is the sink's newest token before this commit
	// (Found: whether there is one); TokenProps the token keys the commit carries.
	Newest     Token
	Found      bool
	TokenProps map[string]string
	// Raw, set by Stage, is committed with CatalogIO.CommitTable instead of Txn: for
	// updates no transaction stages (snapshot expiry's own selection).
	Raw *table.TableCommit
}

// Outcome is what Committer.CommitTable did.
type Outcome struct {
	// Table is the table as the commit left it; nil when nothing was committed.
	Table *table.Table
	// Attempts made, and how many of them before the last lost a race.
	Attempts, Conflicts int
	// Sent: an attempt's commit reached the catalog.
	Sent bool
	// Held is the token that already held the Windowed change's window (nothing
	// committed); TokenProps the token keys of the last attempt.
	Held       *Token
	TokenProps map[string]string
	// Landed: Change.Landed found an earlier attempt's commit.
	Landed bool
}

// CommitTable makes every catalog commit of the module (appends and row deltas,
// schema updates, heartbeats, manifest merges, compaction, expiry): the one loop of
// load, token check, staging, commit and retry. Each attempt, up to MaxAttempts
// (DefaultMaxAttempts when unset) with a jittered exponential backoff before each
// retry:
//
//   - loads table ident fresh (a missing table, wrapping config.ErrTableNotFound,
//     ends the loop; any other load failure is retried);
//   - of a Windowed change, looks for the sink's token and ends when the window is
//     held;
//   - after an attempt whose commit reached the catalog, asks ch.Landed whether it
//     landed (a lost response: a non-conflict commit error may hide a commit);
//   - opens a transaction on the branch with iceberg-go's own retries off (they
//     could replay a first DV over a concurrent one: this loop retries with a fresh
//     table instead), lets ch.Stage stage the change and commits it;
//   - retries a conflict (IsConflict: table.ErrCommitFailed, or the "requirement
//     failed" errors of SQL, Glue, Hive and Hadoop catalogs) and an unknown outcome.
//
// When the attempts run out the error says it gave up, wrapping
// config.ErrCommitConflict when the last attempt lost a race.
func (c Committer) CommitTable(ctx context.Context, cat table.CatalogIO, ident table.Identifier, ch Change) (Outcome, error) {
	var (
		branch string
		window *WindowRef
	)
	if w, ok := ch.(Windowed); ok {
		var ref WindowRef
		branch, ref = w.Window()
		window = &ref
	}
	name, branch := strings.Join(ident, "."), cmp.Or(branch, table.MainBranch)
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	var (
		out      Outcome
		last     error // the failure of the last attempt, which another may overcome
		conflict bool  // whether it lost a race
	)
	for n := range maxAttempts {
		if n > 0 {
			if conflict {
				out.Conflicts++
			}
			if err := c.sleep(ctx, n); err != nil {
				return out, errors.Join(err, last)
			}
		}
		out.Attempts = n + 1
		tbl, err := LoadTable(ctx, cat, ident)
		switch {
		case err != nil && (errors.Is(err, config.ErrTableNotFound) || ctx.Err() != nil):
			return out, err
		case err != nil:
			last, conflict = err, false
			continue
		}
		a := &Attempt{Number: n + 1, Table: tbl}
		if window != nil {
			w, err := CheckWindow(tbl.Metadata(), branch, *window)
			if err != nil || w.Done {
				if w.Done {
					out.Held = &w.Held
				}
				return out, err
			}
			a.Newest, a.Found, a.TokenProps, out.TokenProps = w.Newest, w.Found, w.Props, w.Props
		}
		if out.Sent {
			if out.Landed, err = ch.Landed(ctx, a); err != nil || out.Landed {
				return out, err
			}
		}
		txTbl, err := withoutRetries(tbl, cat)
		if err != nil {
			return out, err
		}
		if a.Txn, err = txTbl.NewTransactionOnBranchWithError(branch); err != nil {
			return out, err
		}
		if window != nil && branch == table.MainBranch {
			key := CommittedThroughKey(window.SinkID)
			if err := a.Txn.SetProperties(ibg.Properties{key: a.TokenProps[key]}); err != nil {
				return out, err
			}
		}
		done, err := ch.Stage(ctx, a)
		if err != nil {
			ch.Abandon(ctx, a)
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
		if a.Raw != nil {
			meta, loc, cerr := cat.CommitTable(ctx, ident, a.Raw.Requirements, a.Raw.Updates)
			if err = cerr; err == nil {
				committed = table.New(ident, meta, loc, tbl.FS, cat)
			}
		} else {
			committed, err = a.Txn.Commit(ctx)
		}
		out.Sent = true
		switch {
		case err == nil:
			out.Table = committed
			return out, nil
		case IsConflict(err):
			ch.Abandon(ctx, a)
			log.Infof(ctx, "iceberg: %s %s: attempt %d lost a race, retrying: %v", ch.Op(), name, n+1, err)
			last, conflict = err, true
		case ctx.Err() != nil:
			return out, errors.Join(ctx.Err(), err)
		default:
			// The catalog may have applied the commit: the next attempt checks.
			log.Warnf(ctx, "iceberg: %s %s: attempt %d ended in an unknown state, checking: %v", ch.Op(), name, n+1, err)
			last, conflict = err, false
		}
	}
	if conflict {
		return out, fmt.Errorf("%w: gave up after %d attempts: %w", config.ErrCommitConflict, maxAttempts, last)
	}
	return out, fmt.Errorf("gave up after %d attempts: %w", maxAttempts, last)
}

// LoadTable loads table ident of cat; a missing table wraps config.ErrTableNotFound.
func LoadTable(ctx context.Context, cat table.CatalogIO, ident table.Identifier) (*table.Table, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("%w: %w", config.ErrTableNotFound, err)
	}
	return tbl, err
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
