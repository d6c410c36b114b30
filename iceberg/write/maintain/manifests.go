package maintain

import (
	"context"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
)

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
	m := &manifestMerge{}
	out, err := commit.Committer{}.CommitTable(ctx, cat, ident, m)
	if err != nil {
		return false, err
	}
	return out.Table != nil || m.landed, nil
}

// manifestMerge is the Change of MergeManifests.
type manifestMerge struct {
	base   int64 // the snapshot the last attempt merged
	landed bool
}

func (m *manifestMerge) Op() string { return "merge manifests" }

// Stage rewrites the data manifests of the current snapshot when there are more
// than maxDataManifests of them.
func (m *manifestMerge) Stage(ctx context.Context, a *commit.Attempt) (bool, error) {
	snap := a.Table.CurrentSnapshot()
	if snap == nil {
		return true, nil
	}
	fs, err := a.Table.FS(ctx)
	if err != nil {
		return false, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return false, err
	}
	n := 0
	for _, mf := range manifests {
		if mf.ManifestContent() == ibg.ManifestContentData {
			n++
		}
	}
	if n <= maxDataManifests {
		return true, nil
	}
	m.base = snap.SnapshotID
	res, err := a.Txn.RewriteManifests(ctx)
	if err != nil {
		return false, err
	}
	return res.IsNoOp(), nil
}

// Landed is true when a replace snapshot whose parent is the merged base is an
// ancestor of the current snapshot.
func (m *manifestMerge) Landed(_ context.Context, a *commit.Attempt) (bool, error) {
	if head := a.Table.CurrentSnapshot(); head != nil {
		for _, s := range table.AncestorsOf(head.SnapshotID, a.Table.Metadata().SnapshotByID) {
			if s.ParentSnapshotID != nil && *s.ParentSnapshotID == m.base && s.Summary != nil && s.Summary.Operation == table.OpReplace {
				m.landed = true
				break
			}
			if s.SnapshotID == m.base {
				break
			}
		}
	}
	return m.landed, nil
}

// Abandon does nothing: the manifests an attempt wrote are not referenced.
func (m *manifestMerge) Abandon(context.Context, *commit.Attempt) {}
