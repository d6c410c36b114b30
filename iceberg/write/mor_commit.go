package write

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// Snapshot summary keys of merge-on-read commits besides the token keys.
const (
	// summaryMaxCommittedSeqPrefix prefixes the key holding, for one sink id, the
	// highest change sequence number the snapshot's window applied.
	summaryMaxCommittedSeqPrefix = "beam.cdc.max-committed-seq."
	// summaryPriorMaxSeqPrefix prefixes the key holding, for one sink id, the highest
	// sequence number the sink's earlier runs had committed when the snapshot's run
	// started (see PriorThroughKey).
	summaryPriorMaxSeqPrefix = "beam.cdc.prior-max-seq."
)

// maxCommittedSeqKey returns "beam.cdc.max-committed-seq.<sinkID>".
func maxCommittedSeqKey(sinkID string) string { return summaryMaxCommittedSeqPrefix + sinkID }

// priorMaxSeqKey returns "beam.cdc.prior-max-seq.<sinkID>".
func priorMaxSeqKey(sinkID string) string { return summaryPriorMaxSeqPrefix + sinkID }

// noSeq stands for "no sequence number committed".
const noSeq = int64(-1 << 63)

// committedSeqs returns the highest sequence number sinkID has committed (max) and
// the highest its runs other than runID had committed (prior), from its newest token
// (noSeq when none).
func committedSeqs(tok commit.Token, found bool, sinkID, runID string) (maxSeq, prior int64) {
	maxSeq, prior = noSeq, noSeq
	if !found || tok.Summary == nil {
		return maxSeq, prior
	}
	p := tok.Summary.Properties
	if v, err := strconv.ParseInt(p[maxCommittedSeqKey(sinkID)], 10, 64); err == nil {
		maxSeq = v
	}
	if runID == "" || p[commit.RunKey(sinkID)] != runID {
		return maxSeq, maxSeq
	}
	if v, err := strconv.ParseInt(p[priorMaxSeqKey(sinkID)], 10, 64); err == nil {
		prior = v
	}
	return maxSeq, prior
}

// changeWindow is one table's changes of one window, ready to commit.
type changeWindow struct {
	// SinkID, RunID, WindowEndMs, LateID and ContentID make the commit exactly-once
	// (see CommitRequest).
	SinkID, RunID     string
	WindowEndMs       int64
	LateID, ContentID string
	// MaxSeq is the highest change sequence number of the window.
	MaxSeq int64
	// DataFiles are the new rows' data files. Duplicate paths are committed once.
	DataFiles []ibg.DataFile
	// Deletes are the window's deletes (keys and the shards' resolutions).
	Deletes cdc.Deletes
	// SnapshotProps are extra summary properties; keys under beam.cdc. are rejected.
	SnapshotProps map[string]string
}

// commitWindowChanges commits w as one snapshot, made by one RowDelta with the window's
// data files, the deletes of its keys and the removal of the DVs they replace,
// through c's loop (token check, retry, lost-response recovery), exactly once per
// (SinkID, WindowEndMs) or late pane: a window commit (commit.Committer.Commit) whose
// deletes are windowDeletes. The result carries the delete counts (from the summary
// when the window was already committed).
func commitWindowChanges(ctx context.Context, c commit.Committer, cat table.CatalogIO, ident table.Identifier, w changeWindow) (commit.CommitResult, error) {
	for k := range w.SnapshotProps {
		if strings.HasPrefix(k, commit.SummaryReservedPrefix) {
			return commit.CommitResult{}, config.WrapOp("commit", strings.Join(ident, "."),
				config.Errorf(config.KeySnapshotProperties+"."+k, "keys under %q are reserved for the sink", commit.SummaryReservedPrefix))
		}
	}
	d := &windowDeletes{w: &w}
	res, err := c.Commit(ctx, cat, ident, commit.CommitRequest{
		SinkID: w.SinkID, RunID: w.RunID, WindowEndMs: w.WindowEndMs, LateID: w.LateID, ContentID: w.ContentID,
		DataFiles: w.DataFiles, SnapshotProps: w.SnapshotProps, Deletes: d, FreshFiles: true,
	})
	if err != nil {
		return commit.CommitResult{}, err
	}
	last := d.last
	if res.Skipped && res.Summary != nil {
		last = cdc.DeltaFromSummary(res.Summary)
	}
	res.DVsAdded, res.DVsRemoved, res.PositionsDeleted = last.DVsAdded, last.DVsRemoved, last.PositionsDeleted
	res.EqualityDeleteFiles, res.Reresolved = last.EqualityDeleteFiles, last.Reresolved
	return res, nil
}

// windowDeletes are the deletes of a change window's commit (commit.Deletes): on
// each attempt, what w.Deletes deletes on the freshly loaded table
// (cdc.Deletes.Prepare: re-resolving keys whose data files changed, merging with
// live DVs), with the sink's highest committed sequence number in the summary.
type windowDeletes struct {
	w       *changeWindow
	last    cdc.Delta // the delta of the last attempt that prepared one
	attempt int       // that attempt's number; 0 once abandoned
}

// Prepare resolves the window's deletes on a.Table.
func (d *windowDeletes) Prepare(ctx context.Context, a *commit.Attempt) (commit.Prepared, error) {
	delta, err := d.w.Deletes.Prepare(ctx, a.Table, a.Txn)
	if err != nil {
		return commit.Prepared{}, err
	}
	d.last, d.attempt = delta, a.Number
	prevMax, priorMax := committedSeqs(a.Newest, a.Found, d.w.SinkID, d.w.RunID)
	props := delta.Props
	props[maxCommittedSeqKey(d.w.SinkID)] = strconv.FormatInt(max(d.w.MaxSeq, prevMax), 10)
	if d.w.RunID != "" && priorMax != noSeq {
		props[priorMaxSeqKey(d.w.SinkID)] = strconv.FormatInt(priorMax, 10)
	}
	return commit.Prepared{Deletes: delta.Added, Removed: delta.Removed, Props: props}, nil
}

// Abandon removes the Puffin file of attempt a when it prepared one (it loses a
// race, or fails after Prepare).
func (d *windowDeletes) Abandon(ctx context.Context, a *commit.Attempt) {
	if d.attempt == a.Number {
		d.last.Abandon(ctx, a.Table)
		d.attempt = 0
	}
}

// commitChanges commits one merge-on-read pane: the shard results of one window (or
// one late pane), through commitWindowChanges.
func (f *commitFn) commitChanges(ctx context.Context, dest string, p Pane, emit func(commit.SnapshotInfo)) error {
	fail := func(err error) error { return config.WrapOp("commit", dest, err) }
	ident, err := catalogs.ParseIdent(dest)
	if err != nil {
		return fail(err)
	}
	cat, err := catalogs.Get(ctx, f.Spec.CatalogName, f.rt.catProps)
	if err != nil {
		return fail(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fail(err)
	}
	w := changeWindow{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID, WindowEndMs: p.WindowEndMs, LateID: p.LateID, ContentID: p.ContentIDFor(f.Spec.Windowed),
		SnapshotProps: f.rt.snapshotProps,
		Deletes:       cdc.Deletes{KeyColumns: f.Spec.EqualityColumns, Format: config.DeleteFormat(f.Spec.DeleteFormat), Resolver: f.Spec.resolver()}}
	chk, err := commit.CheckWindow(tbl.Metadata(), table.MainBranch, commit.WindowRef{SinkID: f.Spec.SinkID, RunID: f.Spec.RunID})
	if err != nil {
		return fail(err)
	}
	committedMax, _ := committedSeqs(chk.Newest, chk.Found, f.Spec.SinkID, f.Spec.RunID)
	unordered := 0
	for _, part := range p.Parts {
		files, err := datafile.Decode(tbl.Metadata(), part.Files)
		if err != nil {
			return fail(err)
		}
		w.DataFiles = append(w.DataFiles, files...)
		r := part.Changes
		if r == nil {
			continue // the files of morWriteFn
		}
		w.MaxSeq = max(w.MaxSeq, r.MaxSeq)
		if committedMax > r.BaseSeq && r.MinSeq <= committedMax {
			// The shard ran before a commit of changes newer than some of its own (a late
			// pane that raced its window's commit): its changes are applied after them.
			unordered++
		}
		if r.Resolution != nil {
			res, err := r.Resolution.Decode()
			if err != nil {
				return fail(err)
			}
			w.Deletes.Resolved = append(w.Deletes.Resolved, res)
		}
		keys, err := cdc.DecodeKeys(r.DeleteKeys)
		if err != nil {
			return fail(err)
		}
		w.Deletes.Keys = append(w.Deletes.Keys, keys...)
	}
	w.Deletes.Resolved = cdc.MergeResolutions(w.Deletes.Resolved)
	if unordered > 0 {
		LateUnordered.Inc(ctx, int64(unordered))
		log.Warnf(ctx, "iceberg: commit %s: %d shard results of the window ending %d were made before the sink committed changes newer than some of theirs (late changes that raced their window's commit); they are applied after those changes",
			dest, unordered, p.WindowEndMs)
	}
	res, err := commitWindowChanges(ctx, commit.Committer{}, cat, ident, w)
	if err != nil {
		return err
	}
	if !res.Skipped {
		if merged, err := maintain.MergeManifests(ctx, cat, ident); err != nil {
			log.Warnf(ctx, "iceberg: commit %s: merge data manifests: %v (tried again after the next commit)", dest, err)
		} else if merged {
			ManifestMerges.Inc(ctx, 1)
		}
	}
	catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, dest)
	recordCommit(ctx, res, p.WindowEndMs, !p.Global)
	Reresolutions.Inc(ctx, int64(res.Reresolved))
	emit(commit.SnapshotInfo{Table: dest, SnapshotID: res.SnapshotID, SequenceNumber: res.SequenceNumber,
		Operation: res.Operation, FilesAdded: res.FilesAdded, RowsAdded: res.RowsAdded,
		SinkID: f.Spec.SinkID, Skipped: res.Skipped, WindowEndMs: p.WindowEndMs, Late: p.LateID != "" || res.LateID != "",
		DeleteFilesAdded: res.DeleteFilesAdded, DVsRemoved: int64(res.DVsRemoved),
		PositionsDeleted: res.PositionsDeleted, EqualityDeletesAdded: res.EqualityDeletesAdded})
	return nil
}
