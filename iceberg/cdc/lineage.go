package cdc

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// errNoRowIDColumn is returned by rowIDLeaf for a data file that does not store
// _row_id.
var errNoRowIDColumn = errors.New("no _row_id column")

// RowIDs returns the row lineage id (_row_id) of the resolved keys whose index in
// Keys want accepts: the value stored in the data file's _row_id column where the
// file has one and the row's value is not null (a row rewritten or updated with its
// lineage), else the file's first_row_id plus the row's position. A key found in a
// file without first_row_id (written before the table moved to format version 3)
// has no id. A key found at more than one position (duplicate rows) takes the id of
// the first one.
//
// A merge-on-read update writes the new row with the id of the row it replaces, as
// Spark's MERGE does, so that _row_id follows a row through its updates.
func (r *Resolution) RowIDs(ctx context.Context, fs iceio.IO, want func(keyIndex int32) bool) (map[int32]int64, error) {
	ids := map[int32]int64{}
	for _, h := range r.Files {
		var pos []int64 // positions wanted in this file, ascending
		var keys []int32
		for i, k := range h.KeyIndexes {
			if _, done := ids[k]; !done && want(k) {
				pos = append(pos, h.Positions[i])
				keys = append(keys, k)
			}
		}
		if len(pos) == 0 {
			continue
		}
		t, ok := r.tasks[h.Path]
		if !ok {
			return nil, fmt.Errorf("row ids: %s was not planned", h.Path)
		}
		stored, err := storedRowIDs(ctx, fs, h.Path, pos)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			switch {
			case stored != nil && stored[i] >= 0:
				ids[k] = stored[i]
			case t.FirstRowID != nil:
				ids[k] = *t.FirstRowID + pos[i]
			}
		}
	}
	return ids, nil
}

// storedRowIDs reads the _row_id column of the data file at path at the ascending
// positions pos: -1 where the value is null, nil when the file has no such column.
func storedRowIDs(ctx context.Context, fs iceio.IO, path string, pos []int64) ([]int64, error) {
	out := make([]int64, len(pos))
	next := 0
	err := readParquet(fs, path, rowIDLeaf, func(rec arrow.RecordBatch, base int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		col, ok := rec.Column(0).(*array.Int64)
		if !ok {
			return fmt.Errorf("%s: _row_id is %s, want int64", path, rec.Column(0).DataType())
		}
		end := base + int64(col.Len())
		for ; next < len(pos) && pos[next] < end; next++ {
			j := int(pos[next] - base)
			out[next] = -1
			if col.IsValid(j) {
				out[next] = col.Value(j)
			}
		}
		return nil
	})
	if errors.Is(err, errNoRowIDColumn) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("row ids: %w", err)
	}
	if next < len(pos) {
		return nil, fmt.Errorf("row ids: %s has no row %d", path, pos[next])
	}
	return out, nil
}

// rowIDLeaf finds the Parquet leaf column of _row_id by its reserved field ID.
func rowIDLeaf(pr *file.Reader) ([]int, error) {
	sc := pr.MetaData().Schema
	for c := 0; c < sc.NumColumns(); c++ {
		if sc.Column(c).SchemaNode().FieldID() == int32(ibg.RowIDFieldID) {
			return []int{c}, nil
		}
	}
	return nil, errNoRowIDColumn
}
