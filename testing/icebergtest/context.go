package icebergtest

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The functions below are the error-returning forms of the test helpers, for
// examples, benchmarks and programs that have no testing.TB; the helpers call them
// and fail the test on an error.

// AppendRecordsContext is AppendRecords returning the error.
func AppendRecordsContext(ctx context.Context, tbl *table.Table, recs ...arrow.RecordBatch) (*table.Table, error) {
	files, err := writeDataFiles(ctx, tbl, recs)
	if err != nil {
		return nil, fmt.Errorf("iceberg: append %s: %w", tableName(tbl), err)
	}
	if len(files) == 0 {
		return tbl, nil
	}
	out, err := commitRowDelta(ctx, tbl, files, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("iceberg: append %s: %w", tableName(tbl), err)
	}
	return out, nil
}

// DeleteRowsDVContext is DeleteRowsDV returning the error.
func DeleteRowsDVContext(ctx context.Context, tbl *table.Table, positions map[string][]int64) (*table.Table, error) {
	added, replaced, err := writeDVs(ctx, tbl, positions, true)
	if err != nil {
		return nil, fmt.Errorf("iceberg: delete rows %s: %w", tableName(tbl), err)
	}
	if len(added) == 0 {
		return tbl, nil
	}
	out, err := commitRowDelta(ctx, tbl, nil, added, replaced)
	if err != nil {
		return nil, fmt.Errorf("iceberg: delete rows %s: %w", tableName(tbl), err)
	}
	return out, nil
}

// DataFilesContext is DataFiles returning the error.
func DataFilesContext(ctx context.Context, tbl *table.Table) ([]ibg.DataFile, error) {
	var out []ibg.DataFile
	for e, err := range entries(ctx, tbl, ibg.ManifestContentData) {
		if err != nil {
			return nil, fmt.Errorf("iceberg: list data files %s: %w", tableName(tbl), err)
		}
		out = append(out, e.DataFile())
	}
	return out, nil
}
