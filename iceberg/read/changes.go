package read

import (
	"context"
	"slices"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Columns a changelog read adds to every row, after the table's columns.
const (
	// ChangeTypeColumn holds the change: INSERT, DELETE, UPDATE_BEFORE or UPDATE_AFTER.
	ChangeTypeColumn = "_change_type"
	// CommitSnapshotIDColumn holds the id of the snapshot that committed the change.
	CommitSnapshotIDColumn = "_commit_snapshot_id"
	// CommitSequenceNumberColumn holds that snapshot's sequence number: the default
	// sequence_number_column of a merge-on-read write.
	CommitSequenceNumberColumn = "_commit_snapshot_sequence_number"
)

// Change types a changelog read emits.
const (
	changeInsert       = "INSERT"
	changeDelete       = "DELETE"
	changeUpdateBefore = "UPDATE_BEFORE"
	changeUpdateAfter  = "UPDATE_AFTER"
)

// ChangesSpec is everything a worker needs to plan and read a changelog: the changes
// committed by the snapshots after FromSnapshotID up to ToSnapshotID. It is built and
// validated at construction (the snapshot range is pinned then) and travels as a typed
// field of the changelog DoFns.
type ChangesSpec struct {
	// Spec holds the catalog, the table, the filter and the emitted columns (Columns;
	// empty: every column). Its snapshot fields are unused.
	Spec
	// FromSnapshotID is the exclusive start. 0: start at the oldest ancestor of
	// ToSnapshotID still in the table, inclusive; when that snapshot's parent is gone,
	// every row live in it is an INSERT.
	FromSnapshotID int64 `json:"from_snapshot_id,omitempty"`
	// ToSnapshotID is the inclusive end (0: the table has no snapshot; nothing to read).
	ToSnapshotID int64 `json:"to_snapshot_id,omitempty"`
	// KeyColumns are the table's identifier fields. When set, a DELETE and an INSERT of
	// one key in one snapshot become UPDATE_BEFORE and UPDATE_AFTER.
	KeyColumns []string `json:"key_columns,omitempty"`
	// ReadColumns are the columns read: Columns plus any key column they leave out
	// (empty: every column).
	ReadColumns []string `json:"read_columns,omitempty"`
	// Stream makes the read continuous: (FromSnapshotID, ToSnapshotID] is its base,
	// then it follows main (nil: a bounded read of the range).
	Stream *Stream `json:"stream,omitempty"`
}

// ChangesOptions are the user-facing changelog settings ResolveChanges validates
// against a table. Nil pointers are unset.
type ChangesOptions struct {
	Filter        string
	Keep, Drop    []string
	FromSnapshot  *int64
	ToSnapshot    *int64
	FromTimestamp *int64 // epoch millis
	ToTimestamp   *int64 // epoch millis
	// Latest starts at the end snapshot's own changes (starting_strategy latest) when
	// neither FromSnapshot nor FromTimestamp is set; otherwise the read starts at the
	// earliest snapshot.
	Latest bool
	// Streaming makes the read continuous, polling every PollSeconds: the range above
	// (by default up to the current snapshot) first, then each later snapshot on main
	// until ToSnapshot or ToTimestamp. A from_timestamp after the current snapshot
	// starts with the first snapshot committed at or after it.
	Streaming   bool
	PollSeconds int
}

func (o ChangesOptions) rangeOptions() rangeOptions {
	return rangeOptions{fromSnapshot: o.FromSnapshot, toSnapshot: o.ToSnapshot, fromTimestamp: o.FromTimestamp,
		toTimestamp: o.ToTimestamp, latest: o.Latest, streaming: o.Streaming}
}

// ResolveChanges validates opts against the loaded table and returns the ChangesSpec
// workers run: unknown columns in keep, drop or filter, snapshots not in the table, a
// start that is not an ancestor of the end, a start after the end, and table columns
// that clash with the change columns are reported, all at once.
func ResolveChanges(ctx context.Context, catalogName string, props map[string]string, ident string, tbl *table.Table, opts ChangesOptions) (ChangesSpec, error) {
	var errs config.Errors
	base, err := Resolve(ctx, catalogName, props, ident, tbl, Options{Filter: opts.Filter, Keep: opts.Keep, Drop: opts.Drop})
	errs.Add(err)
	spec := ChangesSpec{Spec: base}
	sc := tbl.Schema()
	for _, c := range []string{ChangeTypeColumn, CommitSnapshotIDColumn, CommitSequenceNumberColumn} {
		if _, ok := sc.FindFieldByName(c); ok {
			errs.Add(config.OpErrorf("read changes", ident, "%w: the table has a column %q, which the changelog adds", config.ErrUnsupported, c))
		}
	}

	from, to, err := resolveRange(tbl.Metadata(), ident, opts.rangeOptions())
	errs.Add(err)
	spec.FromSnapshotID, spec.ToSnapshotID = from, to
	if err == nil {
		errs.Add(checkRowLineage(tbl.Metadata(), ident, from, to))
	}
	if opts.Streaming && err == nil {
		st, err := newStream(tbl.Metadata(), ident, opts.PollSeconds, to, opts.rangeOptions())
		errs.Add(err)
		spec.Stream = &st
	}

	for _, id := range sc.IdentifierFieldIDs {
		if name, ok := sc.FindColumnName(id); ok {
			spec.KeyColumns = append(spec.KeyColumns, name)
		}
	}
	spec.ReadColumns = slices.Clone(spec.Columns)
	if len(spec.ReadColumns) > 0 {
		for _, k := range spec.KeyColumns {
			if !slices.Contains(spec.ReadColumns, k) {
				spec.ReadColumns = append(spec.ReadColumns, k)
			}
		}
	}
	if err := errs.Err(); err != nil {
		return ChangesSpec{}, err
	}
	return spec, nil
}

// resolveRange turns the range settings into (exclusive start, inclusive end)
// snapshot ids; see ChangesSpec for the meaning of a 0 start.
// A continuous read (opts.streaming) may wait for its end: a to_timestamp on a table
// without snapshots, or a from_timestamp after the end snapshot, is an empty start.
func resolveRange(meta table.Metadata, ident string, opts rangeOptions) (from, to int64, err error) {
	var errs config.Errors
	var end *table.Snapshot
	switch {
	case opts.toSnapshot != nil:
		if end = meta.SnapshotByID(*opts.toSnapshot); end == nil {
			errs.Add(config.Errorf(config.KeyToSnapshot, "table %s has no snapshot %d", ident, *opts.toSnapshot))
		}
	case opts.toTimestamp != nil:
		for _, s := range ancestry(meta, meta.CurrentSnapshot()) {
			if s.TimestampMs <= *opts.toTimestamp {
				end = s
				break
			}
		}
		if end == nil && !(opts.streaming && meta.CurrentSnapshot() == nil) {
			errs.Add(config.Errorf(config.KeyToTimestamp, "table %s has no snapshot committed at or before %d", ident, *opts.toTimestamp))
		}
	default:
		end = meta.CurrentSnapshot()
	}

	var start *table.Snapshot // the exclusive start, when set by from_snapshot
	if opts.fromSnapshot != nil {
		if start = meta.SnapshotByID(*opts.fromSnapshot); start == nil {
			errs.Add(config.Errorf(config.KeyFromSnapshot, "table %s has no snapshot %d", ident, *opts.fromSnapshot))
		}
	}
	if err := errs.Err(); err != nil {
		return 0, 0, err
	}
	if end == nil { // a table without snapshots: nothing changed
		return 0, 0, nil
	}
	chain := ancestry(meta, end) // newest first
	switch {
	case start != nil:
		if !slices.ContainsFunc(chain, func(s *table.Snapshot) bool { return s.SnapshotID == start.SnapshotID }) {
			if slices.ContainsFunc(ancestry(meta, start), func(s *table.Snapshot) bool { return s.SnapshotID == end.SnapshotID }) {
				return 0, 0, config.Errorf(config.KeyFromSnapshot, "snapshot %d is after the end snapshot %d", start.SnapshotID, end.SnapshotID)
			}
			return 0, 0, config.Errorf(config.KeyFromSnapshot, "snapshot %d is not an ancestor of the end snapshot %d", start.SnapshotID, end.SnapshotID)
		}
		return start.SnapshotID, end.SnapshotID, nil
	case opts.fromTimestamp != nil:
		if *opts.fromTimestamp > end.TimestampMs {
			if opts.streaming && opts.toSnapshot == nil {
				return end.SnapshotID, end.SnapshotID, nil // nothing yet: wait for later snapshots
			}
			return 0, 0, config.Errorf(config.KeyFromTimestamp, "%d is after the end snapshot %d (committed at %d)", *opts.fromTimestamp, end.SnapshotID, end.TimestampMs)
		}
		// The oldest ancestor committed at or after the time; the start is its parent.
		first := -1
		for i, s := range chain {
			if s.TimestampMs >= *opts.fromTimestamp {
				first = i
			}
		}
		if first == len(chain)-1 {
			return 0, end.SnapshotID, nil
		}
		return chain[first+1].SnapshotID, end.SnapshotID, nil
	case opts.latest:
		if len(chain) > 1 {
			return chain[1].SnapshotID, end.SnapshotID, nil
		}
		return 0, end.SnapshotID, nil
	}
	return 0, end.SnapshotID, nil
}

// ancestry returns s and its ancestors still in the table, newest first.
func ancestry(meta table.Metadata, s *table.Snapshot) []*table.Snapshot {
	var out []*table.Snapshot
	for s != nil {
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}

// changeColumnTypes returns the Iceberg types of the change columns, in order.
func changeColumnTypes() []ibg.Type {
	return []ibg.Type{ibg.PrimitiveTypes.String, ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int64}
}

// checkRowLineage reports, with ErrUnsupported, a snapshot of the range that adds or
// removes delete files on a table without row lineage (format version below 3): the
// rows such a snapshot deletes are told apart by _row_id, which needs version 3.
func checkRowLineage(meta table.Metadata, ident string, from, to int64) error {
	if meta.Version() >= 3 || to == 0 {
		return nil
	}
	for _, s := range ancestry(meta, meta.SnapshotByID(to)) {
		if s.SnapshotID == from {
			break
		}
		if s.Summary == nil || s.Summary.Operation == table.OpReplace {
			continue
		}
		for _, k := range []string{"added-delete-files", "removed-delete-files"} {
			if v := s.Summary.Properties[k]; v != "" && v != "0" {
				return config.OpErrorf("read changes", ident, "%w: snapshot %d changes delete files (%s=%s); "+
					"reading the rows that row-level deletes remove needs row lineage (format version 3), the table has version %d",
					config.ErrUnsupported, s.SnapshotID, k, v, meta.Version())
			}
		}
	}
	return nil
}
