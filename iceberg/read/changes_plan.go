package read

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Kinds of ChangeTask.
const (
	// changeAdded: a data file the snapshot added; its rows live after the snapshot
	// are INSERTs.
	changeAdded = "added"
	// changeRemoved: a data file the snapshot removed; its rows live before the
	// snapshot are DELETEs.
	changeRemoved = "removed"
	// changeRowsDeleted: a data file in both states whose deletes changed (a new or
	// replaced deletion vector, position or equality delete); the rows live before and
	// not after the snapshot are DELETEs.
	changeRowsDeleted = "rows_deleted"
)

// ChangeTask is one data file's change in one snapshot, on its way from the planning
// step to the read DoFn. Before is the file with the deletes live in the snapshot's
// parent, After with those live in the snapshot; a kind uses one or both.
type ChangeTask struct {
	Kind       string
	SnapshotID int64
	Sequence   int64
	Before     Task
	After      Task
}

// changesPlanFn plans a changelog once at run time (after an Impulse): it plans the
// live files of every snapshot of the range (and of the range's base) with the filter
// pushed down, and emits one ChangeTask per data file whose live rows differ between a
// snapshot and its parent. Replace snapshots (compactions) change no rows and are
// skipped.
type changesPlanFn struct {
	// Spec is the changelog read, resolved at construction.
	Spec ChangesSpec
}

func (fn *changesPlanFn) ProcessElement(ctx context.Context, _ []byte, emit func(ChangeTask)) error {
	if fn.Spec.ToSnapshotID == 0 {
		return nil
	}
	tbl, err := catalogs.LoadTable(ctx, fn.Spec.CatalogName, fn.Spec.Props(), fn.Spec.Table, 0)
	if err != nil {
		return err
	}
	tasks, err := planChanges(ctx, tbl, fn.Spec)
	if err != nil {
		return config.OpErrorf("read changes", fn.Spec.Table, "plan: %w", err)
	}
	for _, t := range tasks {
		emit(t)
	}
	filesPlanned.Inc(ctx, int64(len(tasks)))
	log.Infof(ctx, "iceberg: read changes %s: planned %d changed data files in (%d, %d]", fn.Spec.Table, len(tasks), fn.Spec.FromSnapshotID, fn.Spec.ToSnapshotID)
	return nil
}

// planChanges returns the change tasks of the spec's snapshot range in tbl.
func planChanges(ctx context.Context, tbl *table.Table, spec ChangesSpec) ([]ChangeTask, error) {
	meta, loc := tbl.Metadata(), tbl.MetadataLocation()
	end := meta.SnapshotByID(spec.ToSnapshotID)
	if end == nil {
		return nil, fmt.Errorf("snapshot %d is no longer in the table (expired?)", spec.ToSnapshotID)
	}
	var chain []*table.Snapshot // oldest first
	for _, s := range ancestry(meta, end) {
		if s.SnapshotID == spec.FromSnapshotID {
			break
		}
		chain = append(chain, s)
	}
	slices.Reverse(chain)
	if spec.FromSnapshotID != 0 && (len(chain) == 0 && spec.FromSnapshotID != end.SnapshotID ||
		len(chain) > 0 && (chain[0].ParentSnapshotID == nil || *chain[0].ParentSnapshotID != spec.FromSnapshotID)) {
		return nil, fmt.Errorf("snapshot %d is no longer an ancestor of %d (expired?)", spec.FromSnapshotID, spec.ToSnapshotID)
	}
	if len(chain) == 0 {
		return nil, nil
	}

	var prev map[string]table.FileScanTask
	if p := chain[0].ParentSnapshotID; p != nil && meta.SnapshotByID(*p) != nil {
		var err error
		if prev, err = liveFiles(ctx, tbl, spec.Spec, *p); err != nil {
			return nil, err
		}
	}
	var out []ChangeTask
	for _, s := range chain {
		cur, err := liveFiles(ctx, tbl, spec.Spec, s.SnapshotID)
		if err != nil {
			return nil, err
		}
		if s.Summary == nil || s.Summary.Operation != table.OpReplace {
			tasks, err := diffLive(meta, loc, s, prev, cur)
			if err != nil {
				return nil, err
			}
			out = append(out, tasks...)
		}
		prev = cur
	}
	return out, nil
}

// liveFiles plans the live data files of snapshot id (with the filter pushed down),
// each as one whole-file task carrying the deletes live in that snapshot.
func liveFiles(ctx context.Context, tbl *table.Table, spec Spec, id int64) (map[string]table.FileScanTask, error) {
	tasks, err := planFiltered(ctx, spec, func(s Spec) (*table.Scan, error) {
		filter, err := s.FilterExpr(tbl.Schema())
		if err != nil {
			return nil, err
		}
		return tbl.Scan(table.WithSnapshotID(id), table.WithRowFilter(filter), table.WithCaseSensitive(true)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", id, err)
	}
	out := make(map[string]table.FileScanTask, len(tasks))
	for _, t := range tasks {
		path := t.File.FilePath()
		if _, ok := out[path]; ok {
			continue // another split of the same file
		}
		t.Start, t.Length = 0, t.File.FileSizeBytes()
		out[path] = t
	}
	return out, nil
}

// diffLive returns the change tasks of snapshot s from the live files before (prev)
// and after it (cur), sorted by data file path.
func diffLive(meta table.Metadata, loc string, s *table.Snapshot, prev, cur map[string]table.FileScanTask) ([]ChangeTask, error) {
	paths := make([]string, 0, len(cur)+len(prev))
	for p := range cur {
		paths = append(paths, p)
	}
	for p := range prev {
		if _, ok := cur[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []ChangeTask
	for _, p := range paths {
		before, inBefore := prev[p]
		after, inAfter := cur[p]
		ct := ChangeTask{SnapshotID: s.SnapshotID, Sequence: s.SequenceNumber}
		var err error
		switch {
		case inAfter && !inBefore:
			ct.Kind = changeAdded
			ct.After, err = newTask(meta, loc, after)
		case inBefore && !inAfter:
			ct.Kind = changeRemoved
			ct.Before, err = newTask(meta, loc, before)
		case !sameDeletes(before, after):
			ct.Kind = changeRowsDeleted
			if ct.Before, err = newTask(meta, loc, before); err == nil {
				ct.After, err = newTask(meta, loc, after)
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
		}
		out = append(out, ct)
	}
	return out, nil
}

// sameDeletes reports whether two tasks of one data file carry the same delete files.
func sameDeletes(a, b table.FileScanTask) bool {
	paths := func(t table.FileScanTask) []string {
		var out []string
		for _, fs := range [][]ibg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, f := range fs {
				out = append(out, fmt.Sprintf("%s@%d", f.FilePath(), dvOffset(f)))
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(paths(a), paths(b))
}

// dvOffset returns the content offset of a deletion vector (several DVs share one
// Puffin file), or -1.
func dvOffset(f ibg.DataFile) int64 {
	if o := f.ContentOffset(); o != nil {
		return *o
	}
	return -1
}
