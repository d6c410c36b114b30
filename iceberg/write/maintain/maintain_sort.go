package maintain

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

// Compaction writes each group's rows as one sorted run: by the table's sort
// order, then by its identifier fields (the equality columns of merge-on-read
// sinks), or, in a table without identifier fields, by the key columns it is
// given (inline maintenance gives its sink's equality_columns). A compacted file
// thus holds a contiguous key range, its manifest bounds on the key columns are
// tight, and the resolution of a window's keys skips the files whose bounds hold
// none of them (cdc.Resolver); a cold key index reads each such file's keys
// already in order.
//
// The table's sort order takes precedence, and the identifier fields break its
// ties. Each term sorts by its source column, as iceberg-go's writer sorts every
// batch it writes (order-preserving transforms such as truncate or day order rows
// as their source column does; a bucket or void term is sorted by its source
// column too): the group's order is then one that writer's per-batch sort keeps.
// A sort order on a nested column is left to iceberg-go's rewrite (unsorted). A
// table with neither a sort order nor identifier fields nor key columns is not
// sorted.

// sortColumn is a top-level column compaction sorts by, and how.
type sortColumn struct {
	name string
	key  compute.SortKey // its ColumnIndex set by bindSort
}

// sortColumns returns the columns compaction sorts tbl's rows by, keys standing
// in for identifier fields the table lacks: nil when none, or when the table's
// sort order cannot be honoured.
func sortColumns(tbl *table.Table, keys []string) []sortColumn {
	var cols []sortColumn
	seen := map[int]bool{}
	add := func(id int, key compute.SortKey) bool {
		i := slices.IndexFunc(tbl.Schema().Fields(), func(f ibg.NestedField) bool { return f.ID == id })
		if i < 0 {
			return false // a nested or unknown column
		}
		if !seen[id] {
			seen[id] = true
			cols = append(cols, sortColumn{tbl.Schema().Field(i).Name, key})
		}
		return true
	}
	for _, f := range tbl.SortOrder().Fields() {
		key := compute.SortKey{Order: compute.SortOrderAscending, NullPlacement: compute.SortNullsAtEnd}
		if f.Direction == table.SortDESC {
			key.Order = compute.SortOrderDescending
		}
		if f.NullOrder == table.NullsFirst {
			key.NullPlacement = compute.SortNullsAtStart
		}
		if !add(f.SourceID(), key) {
			return nil
		}
	}
	ids := tbl.Schema().IdentifierFieldIDs
	if len(ids) == 0 {
		for _, k := range keys {
			f, ok := tbl.Schema().FindFieldByName(k)
			if !ok {
				break
			}
			ids = append(ids, f.ID)
		}
	}
	for _, id := range ids {
		if !add(id, compute.SortKey{Order: compute.SortOrderAscending, NullPlacement: compute.SortNullsAtStart}) {
			break // the sort so far still holds
		}
	}
	return cols
}

// bindSort returns the sort keys of cols in the read schema sc.
func bindSort(cols []sortColumn, sc *arrow.Schema) ([]compute.SortKey, error) {
	keys := make([]compute.SortKey, len(cols))
	for i, c := range cols {
		idx := sc.FieldIndices(c.name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("sort column %q not read", c.name)
		}
		keys[i] = c.key
		keys[i].ColumnIndex = idx[0]
	}
	return keys, nil
}

// sortMemoryLimit bounds the Arrow size of the rows of a group compaction sorts in
// memory. A group is bounded by the target file size (PlanCompaction bins about
// write.target-file-size-bytes of Parquet), but narrow, well-compressed rows take
// ten to twenty times their Parquet size in Arrow: a group of 50M rows of a long
// and a short string is about 2 GB. A group past the limit is rewritten unsorted by
// iceberg-go, which streams its rows (the table's files then stay unsorted until a
// smaller group rewrites them).
var sortMemoryLimit int64 = 512 << 20

// errSortLimit is sortRecords' error for a group past sortMemoryLimit.
var errSortLimit = errors.New("group past the sort memory limit")

// executeGroup rewrites group as table.ExecuteCompactionGroup does, with the rows
// sorted by sortColumns with keys (iceberg-go's own when there are none, or when
// the group's rows are more than sortMemoryLimit).
//
// The group's live rows are held in memory to be sorted, and a sorted copy next to
// them while it is written: about twice the group's Arrow size, at most twice
// sortMemoryLimit plus one batch.
func executeGroup(ctx context.Context, tbl *table.Table, group table.CompactionTaskGroup, target int64, keys []string) (table.CompactionGroupResult, error) {
	cols := sortColumns(tbl, keys)
	// Read and write through the table whose schema leaves out unknown columns: the
	// new files hold none (the Iceberg spec; see datafile.FileTable).
	tbl, err := datafile.FileTable(tbl, nil)
	if err != nil {
		return table.CompactionGroupResult{PartitionKey: group.PartitionKey}, fmt.Errorf("compaction group %q: %w", group.PartitionKey, err)
	}
	if len(cols) == 0 {
		return table.ExecuteCompactionGroup(ctx, tbl, group, table.WithCompactionTargetFileSize(target))
	}
	out, err := executeSorted(ctx, tbl, group, target, cols)
	if errors.Is(err, errSortLimit) {
		log.Infof(ctx, "iceberg: compact group %s: its rows are more than %d MB in memory, rewritten unsorted", group.PartitionKey, sortMemoryLimit>>20)
		return table.ExecuteCompactionGroup(ctx, tbl, group, table.WithCompactionTargetFileSize(target))
	}
	return out, err
}

// executeSorted is executeGroup with the rows sorted by cols; errSortLimit when they
// are more than sortMemoryLimit.
func executeSorted(ctx context.Context, tbl *table.Table, group table.CompactionTaskGroup, target int64, cols []sortColumn) (table.CompactionGroupResult, error) {
	out := table.CompactionGroupResult{PartitionKey: group.PartitionKey}
	lineage := tbl.Metadata().Version() >= 3 && allHaveLineage(ctx, group)
	var scanOpts []table.ScanOption
	if lineage {
		scanOpts = append(scanOpts, table.WithRowLineage())
	}
	sc, records, err := tbl.Scan(scanOpts...).ReadTasks(ctx, group.Tasks)
	if err != nil {
		return out, fmt.Errorf("read tasks for compaction group %q: %w", group.PartitionKey, err)
	}
	keys, err := bindSort(cols, sc)
	if err != nil {
		return out, err
	}
	sorted, err := sortRecords(ctx, sc, records, keys, sortMemoryLimit)
	if err != nil {
		return out, fmt.Errorf("sort compaction group %q: %w", group.PartitionKey, err)
	}
	defer sorted.Release()
	writeOpts := []table.WriteRecordOption{table.WithClusteredWrite(), table.WithTargetFileSize(target)}
	if lineage {
		// As iceberg-go does: the lineage columns' reserved field ids come from the
		// projected schema, not from the table's name mapping.
		fileSchema := ibg.SchemaWithRowLineage(tbl.Schema())
		if sc, err = table.SchemaToArrowSchemaWithOptions(fileSchema, table.ArrowSchemaOptions{
			IncludeFieldIDs: true, TableProperties: tbl.Metadata().Properties()}); err != nil {
			return out, fmt.Errorf("build arrow schema for lineage write in group %q: %w", group.PartitionKey, err)
		}
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(fileSchema))
	}
	for df, err := range table.WriteRecords(ctx, tbl, sc, tableBatches(sorted), writeOpts...) {
		if err != nil {
			return out, fmt.Errorf("write compacted files for group %q: %w", group.PartitionKey, err)
		}
		out.NewDataFiles = append(out.NewDataFiles, df)
		out.BytesAfter += df.FileSizeBytes()
	}
	for _, t := range group.Tasks {
		out.OldDataFiles = append(out.OldDataFiles, t.File)
	}
	out.SafePosDeletes = table.CollectSafePositionDeletes(group.Tasks)
	out.SafeDeletionVectors = table.CollectSafeDeletionVectors(group.Tasks)
	out.BytesBefore = group.TotalSizeBytes
	return out, nil
}

// allHaveLineage reports whether every file of g carries row lineage (a first
// row id): iceberg-go preserves _row_id through a rewrite only then, and warns
// when it drops lineage some files had.
func allHaveLineage(ctx context.Context, g table.CompactionTaskGroup) bool {
	some := 0
	for _, t := range g.Tasks {
		if t.FirstRowID != nil {
			some++
		}
	}
	if some > 0 && some < len(g.Tasks) {
		log.Warnf(ctx, "iceberg: compact group %s: %d of its %d files carry row lineage; the rewritten rows get new row ids", g.PartitionKey, some, len(g.Tasks))
	}
	return len(g.Tasks) > 0 && some == len(g.Tasks)
}

// sortRecords reads records (schema sc) into one table and returns it sorted by
// keys (a stable sort: rows of equal keys keep their read order); errSortLimit,
// having stopped reading, once the records read are more than limit bytes.
func sortRecords(ctx context.Context, sc *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], keys []compute.SortKey, limit int64) (arrow.Table, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var size int64
	for rec, err := range records {
		if err != nil {
			return nil, err
		}
		if size += int64(arrowipc.BufferBytes(rec)); size > limit {
			return nil, errSortLimit
		}
		rec.Retain() // the scan releases each batch after the loop body
		recs = append(recs, rec)
	}
	all := array.NewTableFromRecords(sc, recs)
	defer all.Release()
	if all.NumRows() == 0 {
		all.Retain()
		return all, nil
	}
	idx, err := compute.SortIndicesTable(ctx, all, keys)
	if err != nil {
		return nil, err
	}
	defer idx.Release()
	out, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(all), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, err
	}
	td, ok := out.(*compute.TableDatum)
	if !ok {
		out.Release()
		return nil, fmt.Errorf("take returned %s, want a table", out.Kind())
	}
	return td.Value, nil
}

// tableBatches yields t as record batches of up to 16Ki rows (the writer rolls
// to a new file between batches), each retained for
// WriteRecords, which releases what it consumes.
func tableBatches(t arrow.Table) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		tr := array.NewTableReader(t, 1<<14)
		defer tr.Release()
		for tr.Next() {
			rec := tr.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := tr.Err(); err != nil {
			yield(nil, err)
		}
	}
}
