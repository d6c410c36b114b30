//go:build interop

package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/read"
)

// iceberggoReader reads through iceberg-go's own scan, with icebeam's SQL
// filter parser: the stand-in until iceberg.Read is available.
func iceberggoReader(t *testing.T, cat catalog.Catalog) readFunc {
	return func(ident, filter string, keep []string) ([]string, error) {
		ctx := context.Background()
		tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(ident))
		if err != nil {
			return nil, err
		}
		opts := []table.ScanOption{table.WithSelectedFields(keep...)}
		if filter != "" {
			expr, err := read.ParseFilter(filter, tbl.Schema())
			if err != nil {
				return nil, err
			}
			opts = append(opts, table.WithRowFilter(expr))
		}
		sc, recs, err := tbl.Scan(opts...).ToArrowRecords(ctx)
		if err != nil {
			return nil, err
		}
		idx := make([]int, len(keep))
		for i, k := range keep {
			f := sc.FieldIndices(k)
			if len(f) != 1 {
				return nil, fmt.Errorf("column %s not in scan output %s", k, sc)
			}
			idx[i] = f[0]
		}
		var out []string
		for rec, err := range recs {
			if err != nil {
				return nil, err
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				vals := make([]string, len(keep))
				for i, c := range idx {
					v, err := arrowValue(rec.Column(c), r)
					if err != nil {
						rec.Release()
						return nil, err
					}
					if vals[i], err = Canonical(v); err != nil {
						rec.Release()
						return nil, err
					}
				}
				out = append(out, CanonicalRow(vals))
			}
			rec.Release()
		}
		return out, nil
	}
}

// arrowValue returns row r of column a as the Go value Canonical takes.
func arrowValue(a arrow.Array, r int) (any, error) {
	if c, ok := a.(*extensions.VariantArray); ok { // its IsNull is also true for a variant null
		if c.Storage().IsNull(r) {
			return nil, nil
		}
		v, err := c.Value(r)
		if err != nil {
			return nil, err
		}
		return iceberg.VariantFromBytes(v.Metadata().Bytes(), v.Bytes())
	}
	if a.IsNull(r) {
		return nil, nil
	}
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(r), nil
	case *array.Int32:
		return c.Value(r), nil
	case *array.String:
		return c.Value(r), nil
	case *array.LargeString:
		return c.Value(r), nil
	case *array.Float64:
		return c.Value(r), nil
	case *array.Boolean:
		return c.Value(r), nil
	case *array.Date32:
		return ibg.Date(c.Value(r)), nil
	case *array.Float32:
		return c.Value(r), nil
	case *array.Time64:
		v := int64(c.Value(r))
		if c.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			v /= 1000
		}
		return ibg.Time(v), nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		v := int64(c.Value(r))
		switch unit {
		case arrow.Microsecond:
		case arrow.Nanosecond:
			return ibg.TimestampNano(v), nil
		case arrow.Millisecond:
			v *= 1000
		case arrow.Second:
			v *= 1000000
		}
		return ibg.Timestamp(v), nil
	case *array.Decimal128:
		return ibg.Decimal{Val: c.Value(r), Scale: int(c.DataType().(*arrow.Decimal128Type).Scale)}, nil
	case *extensions.UUIDArray:
		return c.Value(r), nil
	case *array.FixedSizeBinary:
		return c.Value(r), nil
	case *array.Binary:
		return c.Value(r), nil
	case *array.LargeBinary:
		return c.Value(r), nil
	case *array.Map: // before List: a Map is a List of key/value structs
		lo, hi := c.ValueOffsets(r)
		keys, items := c.Keys(), c.Items()
		out := make([]iceberg.MapEntry, 0, hi-lo)
		for i := int(lo); i < int(hi); i++ {
			k, err := arrowValue(keys, i)
			if err != nil {
				return nil, err
			}
			v, err := arrowValue(items, i)
			if err != nil {
				return nil, err
			}
			out = append(out, iceberg.MapEntry{Key: k, Value: v})
		}
		return out, nil
	case array.ListLike:
		lo, hi := c.ValueOffsets(r)
		out := make([]any, 0, hi-lo)
		for i := int(lo); i < int(hi); i++ {
			v, err := arrowValue(c.ListValues(), i)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *array.Struct:
		out := make(structValues, c.NumField())
		for i := range out {
			v, err := arrowValue(c.Field(i), r)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case *array.Null: // an unknown column (IsNull is false: the array has no bitmap)
		return nil, nil
	default:
		return nil, fmt.Errorf("no conversion for arrow type %s", a.DataType())
	}
}

// structValues is a struct value read from Arrow, formatted by Canonical as a Row is.
type structValues []any

func (v structValues) Values() []any { return v }
