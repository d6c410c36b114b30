package read

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
)

// TestUnknownColumns: a filtered read selects every column but the unknown ones, and
// withNullColumns puts those back as null columns in the table's order, before
// columns the table lacks (row lineage).
func TestUnknownColumns(t *testing.T) {
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "a", Type: ibg.PrimitiveTypes.Unknown},
		ibg.NestedField{ID: 2, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 3, Name: "z", Type: ibg.PrimitiveTypes.Unknown},
		ibg.NestedField{ID: 4, Name: "s", Type: ibg.PrimitiveTypes.String})
	for _, tc := range []struct {
		filter      string
		cols        []string
		unk, sel    []string
		wantColumns []string
	}{
		{"", nil, nil, nil, nil},
		{"id > 1", nil, []string{"a", "z"}, []string{"id", "s"}, []string{"a", "id", "z", "s"}},
		{"id > 1", []string{"s", "z", "_row_id"}, []string{"z"}, []string{"s", "_row_id"}, []string{"z", "s", "_row_id"}},
		{"id > 1", []string{"id", "s"}, nil, []string{"id", "s"}, nil},
		{"id > 1", []string{"a"}, nil, []string{"a"}, nil}, // nothing else to read
	} {
		unk, sel := unknownColumns(sc, tc.filter, tc.cols)
		if !slices.Equal(unk, tc.unk) || !slices.Equal(sel, tc.sel) {
			t.Errorf("unknownColumns(%q, %v) = %v, %v; want %v, %v", tc.filter, tc.cols, unk, sel, tc.unk, tc.sel)
			continue
		}
		if unk == nil {
			continue
		}
		// a batch as the scan returns it: the selected columns, lineage last
		var fields []arrow.Field
		var arrs []arrow.Array
		for _, c := range sel {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.AppendValues([]int64{1, 2}, nil)
			fields, arrs = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Int64}), append(arrs, b.NewArray())
		}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, 2)
		out := withNullColumns(sc, unk, rec)
		var got []string
		for i, f := range out.Schema().Fields() {
			got = append(got, f.Name)
			if slices.Contains(unk, f.Name) && (f.Type.ID() != arrow.NULL || out.Column(i).NullN() != 2) {
				t.Errorf("column %s: %s with %d nulls, want 2 nulls of type null", f.Name, f.Type, out.Column(i).NullN())
			}
		}
		if !slices.Equal(got, tc.wantColumns) || out.NumRows() != 2 {
			t.Errorf("withNullColumns: columns %v, %d rows; want %v, 2 rows", got, out.NumRows(), tc.wantColumns)
		}
		out.Release()
		rec.Release()
	}
}
