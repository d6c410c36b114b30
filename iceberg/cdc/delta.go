package cdc

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// Snapshot summary keys of the deletes a window adds (besides the sink's token keys,
// which the committer writes).
const (
	// SummaryAddedDVs counts the deletion vectors a snapshot added (Java's key).
	SummaryAddedDVs = "added-dvs"
	// SummaryRemovedDVs counts the deletion vectors a snapshot removed (Java's key).
	SummaryRemovedDVs = "removed-dvs"
	// SummaryReresolved counts the commit attempts whose keys had to be resolved again
	// because the table changed under them.
	SummaryReresolved = "beam.cdc.reresolved-attempts"
)

// Deletes is what one window of changes deletes from a table: keys whose committed
// row must go, and resolutions the shards made of such keys (DV mode). Prepare turns
// them into the delete files of one commit attempt; the committer calls it again on
// each attempt, with the freshly loaded table.
type Deletes struct {
	// KeyColumns are the equality columns. Required.
	KeyColumns []string
	// Format is config.DeleteFormatDV or config.DeleteFormatEquality; empty picks DV
	// on format-version 3 tables and equality deletes before (see ResolveFormat).
	Format config.DeleteFormat
	// Keys are keys whose committed row must go. In DV mode they are resolved on the
	// first attempt; in equality mode they become equality delete rows.
	Keys [][]any
	// Resolved are resolutions made by the shards (DV mode). Prepare brings each up
	// to the table it is given.
	Resolved []*Resolution
	// Resolver resolves and refreshes the keys (its KeyColumns are set to
	// KeyColumns): the shards' settings, so that a commit in the shards' process
	// shares their key index.
	Resolver Resolver

	ownKeys    bool // Keys resolved into Resolved
	eqFiles    []ibg.DataFile
	reresolved int
}

// Delta is the delete side of one commit attempt's RowDelta.
type Delta struct {
	// Added are the delete files to add (DVs or equality delete files); Removed the
	// DVs they replace.
	Added, Removed []ibg.DataFile
	// Props are the snapshot summary properties of the deletes (SummaryAddedDVs,
	// SummaryRemovedDVs, SummaryReresolved).
	Props map[string]string
	// DVsAdded and DVsRemoved count the DVs added and replaced; PositionsDeleted the
	// rows newly deleted by them; EqualityDeleteFiles the equality delete files.
	DVsAdded, DVsRemoved int
	PositionsDeleted     int64
	EqualityDeleteFiles  int
	// Reresolved counts the attempts so far whose keys were resolved again because
	// the table changed since they were resolved.
	Reresolved int
	// merge is the DV merge of this attempt (DV mode), whose Puffin files Abandon
	// removes.
	merge DVMerge
}

// Prepare returns the deletes of one attempt to commit on tbl within txn:
//
//   - in DV mode, every resolution brought up to tbl (Resolver.Refresh: a touched
//     data file removed or whose DV was added or removed since the resolution, and
//     files added since, are read again), the positions merged per data file with its
//     live DV (MergeDVs, never two live DVs), and the replaced DVs to remove;
//   - in equality mode, key-only equality delete files, written once (an equality
//     delete does not delete rows added in the same snapshot, so an upsert of a key
//     in one snapshot is right).
func (d *Deletes) Prepare(ctx context.Context, tbl *table.Table, txn *table.Transaction) (Delta, error) {
	if len(d.KeyColumns) == 0 {
		return Delta{}, config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column")
	}
	format, err := ResolveFormat(tbl, d.Format, d.KeyColumns)
	if err != nil {
		return Delta{}, err
	}
	if format == config.DeleteFormatEquality {
		if d.eqFiles == nil && len(d.Keys) > 0 {
			if d.eqFiles, err = writeEqualityDeletes(ctx, txn, tbl, d.KeyColumns, d.Keys); err != nil {
				return Delta{}, err
			}
		}
		return Delta{Added: d.eqFiles, EqualityDeleteFiles: len(d.eqFiles), Props: map[string]string{}}, nil
	}
	resolver := d.Resolver
	resolver.KeyColumns = d.KeyColumns
	if !d.ownKeys && len(d.Keys) > 0 {
		r, err := resolver.Resolve(ctx, tbl, d.Keys)
		if err != nil {
			return Delta{}, err
		}
		d.Resolved = append(d.Resolved, r)
		d.ownKeys = true
	}
	positions := map[string][]int64{}
	tasks := map[string]table.FileScanTask{}
	changed := false
	for _, r := range d.Resolved {
		ch, err := resolver.Refresh(ctx, tbl, r)
		if err != nil {
			return Delta{}, err
		}
		changed = changed || ch
		for _, f := range r.Files {
			positions[f.Path] = append(positions[f.Path], f.Positions...)
			tasks[f.Path] = r.tasks[f.Path]
		}
	}
	if changed {
		d.reresolved++
	}
	m, err := MergeDVs(ctx, tbl, tasks, positions)
	if err != nil {
		return Delta{}, err
	}
	out := Delta{Added: m.Added, Removed: m.Replaced, DVsAdded: len(m.Added), DVsRemoved: len(m.Replaced),
		PositionsDeleted: m.Positions, Reresolved: d.reresolved, merge: m,
		Props: map[string]string{SummaryAddedDVs: strconv.Itoa(len(m.Added)), SummaryRemovedDVs: strconv.Itoa(len(m.Replaced))}}
	if d.reresolved > 0 {
		out.Props[SummaryReresolved] = strconv.Itoa(d.reresolved)
	}
	return out, nil
}

// Abandon removes the Puffin files of an attempt that did not commit, best effort.
func (d Delta) Abandon(ctx context.Context, tbl *table.Table) { d.merge.removeFiles(ctx, tbl) }

// DeltaFromSummary returns the delete counts a committed snapshot recorded in its
// summary props: for a window found already committed, whose attempt computed none.
func DeltaFromSummary(props ibg.Properties) Delta {
	num := func(k string) int64 { n, _ := strconv.ParseInt(props[k], 10, 64); return n }
	return Delta{DVsAdded: int(num(SummaryAddedDVs)), DVsRemoved: int(num(SummaryRemovedDVs)),
		// A DV replacing another carries its positions: count the new ones only.
		PositionsDeleted:    max(num("added-position-deletes")-num("removed-position-deletes"), 0),
		EqualityDeleteFiles: int(num("added-equality-delete-files"))}
}

// ResolveFormat picks the delete format of tbl for keys: f, else DV on format
// version 3 and equality deletes before. DV on an older table, and equality deletes
// on a table partitioned by a column outside the keys, are errors naming
// delete_format.
func ResolveFormat(tbl *table.Table, f config.DeleteFormat, keys []string) (config.DeleteFormat, error) {
	v := tbl.Metadata().Version()
	if f == "" {
		f = config.DeleteFormatDV
		if v < 3 {
			f = config.DeleteFormatEquality
		}
	}
	switch f {
	case config.DeleteFormatDV:
		if v < 3 {
			return "", &config.ConfigError{Key: config.KeyDeleteFormat,
				Err: fmt.Errorf("%w: deletion vectors need format version 3, table has %d", config.ErrUnsupported, v)}
		}
	case config.DeleteFormatEquality:
		if v < 2 {
			return "", &config.ConfigError{Key: config.KeyDeleteFormat,
				Err: fmt.Errorf("%w: equality deletes need format version 2, table has %d", config.ErrUnsupported, v)}
		}
		if err := checkEqualityPartitioning(tbl, keys); err != nil {
			return "", err
		}
	default:
		return "", config.Errorf(config.KeyDeleteFormat, "unknown delete format %q", f)
	}
	return f, nil
}

// checkEqualityPartitioning requires the partition source columns among the keys:
// an equality delete only applies within its partition, so without them a key's
// old row in another partition would survive (Flink has the same rule).
func checkEqualityPartitioning(tbl *table.Table, keys []string) error {
	sc := tbl.Schema()
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if _, void := f.Transform.(ibg.VoidTransform); void {
			continue
		}
		src, ok := sc.FindColumnName(f.SourceID())
		if !ok {
			continue
		}
		found := false
		for _, k := range keys {
			found = found || k == src
		}
		if !found {
			return &config.ConfigError{Key: config.KeyDeleteFormat, Err: fmt.Errorf(
				"%w: equality deletes on a table partitioned by %q need that column among equality_columns", config.ErrUnsupported, src)}
		}
	}
	return nil
}

// writeEqualityDeletes writes key-only equality delete files for keys.
func writeEqualityDeletes(ctx context.Context, txn *table.Transaction, tbl *table.Table, cols []string, keys [][]any) ([]ibg.DataFile, error) {
	sc := tbl.Schema()
	ids := make([]int, len(cols))
	for i, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return nil, config.Errorf(config.KeyEqualityColumns, "no column %q in the table schema", c)
		}
		ids[i] = f.ID
	}
	delSc, err := sc.Select(true, cols...)
	if err != nil {
		return nil, err
	}
	b, err := row.NewBatchBuilder(delSc, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	names := make([]string, len(cols))
	copy(names, cols)
	keySchema := row.NewSchema(names, nil)
	for _, k := range keys {
		if err := b.AppendRow(row.Of(keySchema, k)); err != nil {
			return nil, fmt.Errorf("equality delete key %v: %w", k, err)
		}
	}
	rec := b.NewBatch()
	recs := iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	files, err := txn.WriteEqualityDeletes(ctx, ids, recs)
	if err != nil {
		return nil, fmt.Errorf("write equality deletes: %w", err)
	}
	return files, nil
}
