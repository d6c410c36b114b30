package icebergtest

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
)

// PositionsOf returns, per live data file of tbl, the row positions whose column col
// holds one of keys (int32, int64 or string values). It reads only that column of each
// data file. Rows already deleted are included: deleting them again is a no-op.
func PositionsOf(ctx context.Context, tbl *table.Table, col string, keys []any) (map[string][]int64, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	files, err := DataFilesContext(ctx, tbl)
	if err != nil {
		return nil, err
	}
	want := map[any]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := map[string][]int64{}
	for _, df := range files {
		f, err := fs.Open(df.FilePath())
		if err != nil {
			return nil, err
		}
		ra, ok := f.(interface {
			io.ReaderAt
			io.Seeker
		})
		if !ok {
			f.Close()
			return nil, fmt.Errorf("file %s: no ReadAt", df.FilePath())
		}
		pos, err := positionsInFile(ctx, ra, col, want)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
		}
		if len(pos) > 0 {
			out[df.FilePath()] = pos
		}
	}
	return out, nil
}

func positionsInFile(ctx context.Context, r interface {
	io.ReaderAt
	io.Seeker
}, col string, want map[any]bool) ([]int64, error) {
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	idx := pf.MetaData().Schema.ColumnIndexByName(col)
	if idx < 0 {
		return nil, fmt.Errorf("no column %q", col)
	}
	rr, err := fr.GetRecordReader(ctx, []int{idx}, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []int64
	var base int64
	for rr.Next() {
		rec := rr.RecordBatch()
		arr := rec.Column(0)
		for i := 0; i < arr.Len(); i++ {
			if arr.IsNull(i) {
				continue
			}
			var v any
			switch a := arr.(type) {
			case *array.Int64:
				v = a.Value(i)
			case *array.Int32:
				v = a.Value(i)
			case *array.String:
				v = a.Value(i)
			case *array.LargeString:
				v = a.Value(i)
			default:
				return nil, fmt.Errorf("column %q: unsupported key type %s", col, arr.DataType())
			}
			if want[v] {
				out = append(out, base+int64(i))
			}
		}
		base += rec.NumRows()
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// DeleteKeysDV deletes, with deletion vectors, the rows of tbl whose column col holds
// one of keys, and returns the table after the commit and the number of positions
// deleted.
func DeleteKeysDV(ctx context.Context, tbl *table.Table, col string, keys []any) (*table.Table, int, error) {
	pos, err := PositionsOf(ctx, tbl, col, keys)
	if err != nil {
		return nil, 0, fmt.Errorf("iceberg: delete keys %s: %w", tableName(tbl), err)
	}
	n := 0
	for _, p := range pos {
		n += len(p)
	}
	if n == 0 {
		return tbl, 0, nil
	}
	out, err := DeleteRowsDVContext(ctx, tbl, pos)
	return out, n, err
}
