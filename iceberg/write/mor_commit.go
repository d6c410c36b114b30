package write

import (
	"context"
	"strconv"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Snapshot summary keys of merge-on-read commits besides the token keys.
const (
	// SummaryMaxCommittedSeqPrefix prefixes the key holding, for one sink id, the
	// highest change sequence number the snapshot's window applied.
	SummaryMaxCommittedSeqPrefix = "beam.cdc.max-committed-seq."
	// SummaryPriorMaxSeqPrefix prefixes the key holding, for one sink id, the highest
	// sequence number the sink's earlier runs had committed when the snapshot's run
	// started (see PriorThroughKey).
	SummaryPriorMaxSeqPrefix = "beam.cdc.prior-max-seq."
)

// MaxCommittedSeqKey returns "beam.cdc.max-committed-seq.<sinkID>".
func MaxCommittedSeqKey(sinkID string) string { return SummaryMaxCommittedSeqPrefix + sinkID }

// PriorMaxSeqKey returns "beam.cdc.prior-max-seq.<sinkID>".
func PriorMaxSeqKey(sinkID string) string { return SummaryPriorMaxSeqPrefix + sinkID }

// noSeq stands for "no sequence number committed".
const noSeq = int64(-1 << 63)

// committedSeqs returns the highest sequence number sinkID has committed (max) and
// the highest its runs other than runID had committed (prior), from its newest token
// (noSeq when none).
func committedSeqs(tok Token, found bool, sinkID, runID string) (maxSeq, prior int64) {
	maxSeq, prior = noSeq, noSeq
	if !found || tok.Summary == nil {
		return maxSeq, prior
	}
	p := tok.Summary.Properties
	if v, err := strconv.ParseInt(p[MaxCommittedSeqKey(sinkID)], 10, 64); err == nil {
		maxSeq = v
	}
	if runID == "" || p[RunKey(sinkID)] != runID {
		return maxSeq, maxSeq
	}
	if v, err := strconv.ParseInt(p[PriorMaxSeqKey(sinkID)], 10, 64); err == nil {
		prior = v
	}
	return maxSeq, prior
}

// ChangeWindow is one table's changes of one window, ready to commit.
type ChangeWindow struct {
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

// CommitChanges commits w as one snapshot, made by one RowDelta with the window's
// data files, the deletes of its keys and the removal of the DVs they replace,
// through c's loop (token check, retry, lost-response recovery), exactly once per
// (SinkID, WindowEndMs) or late pane. Each attempt asks w.Deletes for the deletes on
// the freshly loaded table (cdc.Deletes.Prepare: re-resolving keys whose data files
// changed, merging with live DVs), removes the Puffin file of an attempt that loses a
// race, and records the sink's highest committed sequence number in the summary. The
// result carries the delete counts (from the summary when the window was already
// committed).
func (c Committer) CommitChanges(ctx context.Context, cat table.CatalogIO, ident table.Identifier, w ChangeWindow) (CommitResult, error) {
	for k := range w.SnapshotProps {
		if strings.HasPrefix(k, SummaryReservedPrefix) {
			return CommitResult{}, config.WrapOp("commit", strings.Join(ident, "."),
				config.Errorf(config.KeySnapshotProperties+"."+k, "keys under %q are reserved for the sink", SummaryReservedPrefix))
		}
	}
	deletes := w.Deletes
	var last cdc.Delta
	prepare := func(ctx context.Context, a Attempt) (Prepared, error) {
		d, err := deletes.Prepare(ctx, a.Table, a.Txn)
		if err != nil {
			return Prepared{}, err
		}
		last = d
		prevMax, priorMax := committedSeqs(a.Newest, a.Found, w.SinkID, w.RunID)
		props := d.Props
		props[MaxCommittedSeqKey(w.SinkID)] = strconv.FormatInt(max(w.MaxSeq, prevMax), 10)
		if w.RunID != "" && priorMax != noSeq {
			props[PriorMaxSeqKey(w.SinkID)] = strconv.FormatInt(priorMax, 10)
		}
		return Prepared{Deletes: d.Added, Removed: d.Removed, Props: props,
			Abandon: func() { d.Abandon(ctx, a.Table) }}, nil
	}
	res, err := c.Commit(ctx, cat, ident, CommitRequest{
		SinkID: w.SinkID, RunID: w.RunID, WindowEndMs: w.WindowEndMs, LateID: w.LateID, ContentID: w.ContentID,
		DataFiles: w.DataFiles, SnapshotProps: w.SnapshotProps, Prepare: prepare, FreshFiles: true,
	})
	if err != nil {
		return CommitResult{}, err
	}
	if res.Skipped && res.Summary != nil {
		last = cdc.DeltaFromSummary(res.Summary)
	}
	res.DVsAdded, res.DVsRemoved, res.PositionsDeleted = last.DVsAdded, last.DVsRemoved, last.PositionsDeleted
	res.EqualityDeleteFiles, res.Reresolved = last.EqualityDeleteFiles, last.Reresolved
	return res, nil
}

// maxDataManifests is the number of data manifests past which a merge-on-read sink
// merges its table's data manifests after a commit. iceberg-go's RowDelta adds one
// data manifest per commit and never merges (Java's merges past
// commit.manifest-min-count-to-merge), so without it every plan and every commit's
// validation reads one more manifest per window the sink has committed.
const maxDataManifests = 8

// MergeManifests merges the data manifests of table ident into as few as their size
// needs (Transaction.RewriteManifests, a replace snapshot that changes no row) when
// it has more than maxDataManifests. It returns whether it did. The commit goes
// through the Committer's loop: a concurrent commit is retried on the reloaded
// table, and a lost response is recognised by a replace snapshot on the merged base;
// any other failure is left to the next window.
func MergeManifests(ctx context.Context, cat table.CatalogIO, ident table.Identifier) (bool, error) {
	var (
		base   int64 // the snapshot the last attempt merged
		landed bool
	)
	merged := func(_ context.Context, a *tableAttempt) (bool, error) {
		if head := a.tbl.CurrentSnapshot(); head != nil {
			for _, s := range table.AncestorsOf(head.SnapshotID, a.tbl.Metadata().SnapshotByID) {
				if s.ParentSnapshotID != nil && *s.ParentSnapshotID == base && s.Summary != nil && s.Summary.Operation == table.OpReplace {
					landed = true
					break
				}
				if s.SnapshotID == base {
					break
				}
			}
		}
		return landed, nil
	}
	stage := func(ctx context.Context, a *tableAttempt) (bool, error) {
		snap := a.tbl.CurrentSnapshot()
		if snap == nil {
			return true, nil
		}
		fs, err := a.tbl.FS(ctx)
		if err != nil {
			return false, err
		}
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return false, err
		}
		n := 0
		for _, m := range manifests {
			if m.ManifestContent() == ibg.ManifestContentData {
				n++
			}
		}
		if n <= maxDataManifests {
			return true, nil
		}
		base = snap.SnapshotID
		res, err := a.txn.RewriteManifests(ctx)
		if err != nil {
			return false, err
		}
		return res.IsNoOp(), nil
	}
	out, err := Committer{}.commitTable(ctx, cat, ident, tableChange{op: "merge manifests", landed: merged, stage: stage})
	if err != nil {
		return false, err
	}
	return out.tbl != nil || landed, nil
}
