package icebergtest

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
)

func TestDiffRows(t *testing.T) {
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "s", Type: ibg.PrimitiveTypes.String},
	)
	// swapped has the same columns in the other order.
	swapped := ibg.NewSchema(0,
		ibg.NestedField{ID: 2, Name: "s", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
	)
	other := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true})
	tab := func(sc *ibg.Schema, rows ...[]any) arrow.Table {
		rec := Records(t, sc, rows)
		tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		t.Cleanup(tbl.Release)

		return tbl
	}
	base := tab(sc, []any{int64(1), "a"}, []any{int64(2), nil}, []any{int64(2), nil})
	tests := []struct {
		name string
		got  arrow.Table
		want []string // substrings of the diff; none means equal
	}{
		{"same", tab(sc, []any{int64(1), "a"}, []any{int64(2), nil}, []any{int64(2), nil}), nil},
		{"reordered rows", tab(sc, []any{int64(2), nil}, []any{int64(1), "a"}, []any{int64(2), nil}), nil},
		{"reordered columns", tab(swapped, []any{nil, int64(2)}, []any{"a", int64(1)}, []any{nil, int64(2)}), nil},
		{"duplicate lost", tab(sc, []any{int64(1), "a"}, []any{int64(2), nil}),
			[]string{"want 3 rows, got 2; 1 missing, 0 extra", "- {id=2, s=null}"}},
		{"value changed", tab(sc, []any{int64(1), "b"}, []any{int64(2), nil}, []any{int64(2), nil}),
			[]string{`- {id=1, s="a"}`, `+ {id=1, s="b"}`}},
		{"null is not the string null", tab(sc, []any{int64(1), "a"}, []any{int64(2), "null"}, []any{int64(2), nil}),
			[]string{"1 missing, 1 extra"}},
		{"other columns", tab(other, []any{int64(1)}), []string{"columns differ"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffRows(base, tc.got)
			if len(tc.want) == 0 {
				if d != "" {
					t.Fatalf("DiffRows = %q, want equal", d)
				}

				return
			}
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("DiffRows lacks %q:\n%s", w, d)
				}
			}
		})
	}
}

// fakeTB records a fatal failure instead of stopping the test.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = format
}

func TestEqualRowsFails(t *testing.T) {
	a := tableOf(t, SampleRecords(t, 5, 1))
	b := tableOf(t, SampleRecords(t, 5, 2))
	ft := &fakeTB{TB: t}
	EqualRows(ft, a, b)
	if !ft.failed {
		t.Fatal("EqualRows passed on different tables")
	}
	ft = &fakeTB{TB: t}
	EqualRows(ft, a, a)
	if ft.failed {
		t.Fatal("EqualRows failed on equal tables")
	}
}
