package row

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// checkedAlloc returns an allocator that fails the test if memory leaks.
func checkedAlloc(t *testing.T) memory.Allocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// buildBatch appends n rows of allTypesSchema and returns the batch.
func buildBatch(t *testing.T, sc *ibg.Schema, mem memory.Allocator, n int) (arrow.RecordBatch, []Row) {
	t.Helper()
	bb, err := NewBatchBuilder(sc, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	s := bb.RowSchema()
	var rows []Row
	for k := range n {
		r := Of(s, allTypesValues(s, k))
		if err := bb.AppendRow(r); err != nil {
			t.Fatalf("AppendRow %d: %v", k, err)
		}
		rows = append(rows, r)
	}
	if bb.Len() != n || (n > 0 && bb.Bytes() <= 0) {
		t.Fatalf("Len %d Bytes %d after %d rows", bb.Len(), bb.Bytes(), n)
	}
	rec := bb.NewBatch()
	t.Cleanup(rec.Release)
	if bb.Len() != 0 {
		t.Fatalf("Len %d after NewBatch", bb.Len())
	}
	return rec, rows
}

func TestBatchBuilderArrowReaderRoundTrip(t *testing.T) {
	sc := allTypesSchema(t)
	mem := checkedAlloc(t)
	rec, want := buildBatch(t, sc, mem, 7)
	wantAS, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Schema().Equal(wantAS) {
		t.Fatalf("batch schema\n%s\nwant\n%s", rec.Schema(), wantAS)
	}
	for _, tc := range []struct {
		name string
		sc   *ibg.Schema
		read func(*ArrowReader, arrow.RecordBatch, []Row) ([]Row, error)
	}{
		{"with iceberg schema", sc, (*ArrowReader).AppendRows},
		{"types from arrow", nil, (*ArrowReader).AppendRows},
		{"views with iceberg schema", sc, (*ArrowReader).AppendViews},
		{"views, types from arrow", nil, (*ArrowReader).AppendViews},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewArrowReader(rec.Schema(), tc.sc)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range sc.Fields() {
				if got := rd.Schema().Types()[i]; !got.Equals(f.Type) {
					t.Errorf("column %s: type %s, want %s", f.Name, got, f.Type)
				}
			}
			got, err := tc.read(rd, rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Schema() != rd.Schema() {
					t.Errorf("row %d does not share the reader's schema", i)
				}
				if !Equal(got[i], want[i]) {
					t.Errorf("row %d:\n got %v\nwant %v", i, got[i], want[i])
				}
				// rows read from Arrow encode with the typed coder.
				if _, err := Encode(got[i]); err != nil {
					t.Errorf("row %d does not encode: %v", i, err)
				}
			}
		})
	}
	for _, read := range []func(*ArrowReader, arrow.RecordBatch, []Row) ([]Row, error){(*ArrowReader).AppendRows, (*ArrowReader).AppendViews} {
		t.Run("sliced batch", func(t *testing.T) {
			rd, err := NewArrowReader(rec.Schema(), sc)
			if err != nil {
				t.Fatal(err)
			}
			sl := rec.NewSlice(2, 6)
			defer sl.Release()
			got, err := read(rd, sl, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 {
				t.Fatalf("%d rows, want 4", len(got))
			}
			for i := range got {
				if !Equal(got[i], want[i+2]) {
					t.Errorf("row %d:\n got %v\nwant %v", i, got[i], want[i+2])
				}
			}
		})
	}
	t.Run("view accessors", func(t *testing.T) {
		rd, err := NewArrowReader(rec.Schema(), sc)
		if err != nil {
			t.Fatal(err)
		}
		views, err := rd.AppendViews(rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range views {
			if v.Len() != len(sc.Fields()) {
				t.Fatalf("row %d: Len %d, want %d", i, v.Len(), len(sc.Fields()))
			}
			// Value and Get before and after the values are converted and kept.
			for pass := range 2 {
				for j, f := range sc.Fields() {
					if got, want := v.Value(j), want[i].Value(j); !equalValue(got, want) {
						t.Errorf("pass %d row %d %s: Value %v, want %v", pass, i, f.Name, got, want)
					}
					if got, ok := v.Get(f.Name); !ok || !equalValue(got, want[i].Value(j)) {
						t.Errorf("pass %d row %d %s: Get %v %v, want %v", pass, i, f.Name, got, ok, want[i].Value(j))
					}
				}
				if pass == 0 {
					vals := v.Values()
					if again := v.Values(); &again[0] != &vals[0] {
						t.Errorf("row %d: Values converted twice", i)
					}
				}
			}
			b, err := Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !Equal(back, want[i]) {
				t.Errorf("row %d after a coder round trip:\n got %v\nwant %v", i, back, want[i])
			}
		}
	})
}

func TestArrowReaderEncodings(t *testing.T) {
	mem := checkedAlloc(t)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	as := arrow.NewSchema([]arrow.Field{
		{Name: "dict", Type: dictType, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "lb", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		{Name: "ll", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, as)
	defer rb.Release()
	db := rb.Field(0).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"a", "b", "a"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	db.AppendNull()
	rb.Field(1).(*array.LargeStringBuilder).AppendValues([]string{"x", "", "z", ""}, []bool{true, true, true, false})
	rb.Field(2).(*array.BinaryBuilder).AppendValues([][]byte{{1}, nil, {3}, nil}, []bool{true, false, true, false})
	lb := rb.Field(3).(*array.LargeListBuilder)
	vb := lb.ValueBuilder().(*array.Int32Builder)
	lb.Append(true)
	vb.AppendValues([]int32{1, 2}, nil)
	lb.Append(true)
	lb.AppendNull()
	lb.Append(true)
	vb.AppendNull()
	rb.Field(4).(*array.StringViewBuilder).AppendValues([]string{"a-long-string-over-12-bytes", "s", "", ""}, []bool{true, true, true, false})
	rb.Field(5).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2, 3, 4}, nil)
	rb.Field(6).(*array.Int16Builder).AppendValues([]int16{-1, 2, 3, 4}, nil)
	rec := rb.NewRecordBatch()
	defer rec.Release()

	rd, err := NewArrowReader(as, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rd.AppendRows(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"dict", "ls", "lb", "ll", "sv", "ms", "i16"}
	want := []Row{
		New(names, []any{"a", "x", []byte{1}, []any{int32(1), int32(2)}, "a-long-string-over-12-bytes", ibg.Timestamp(1000), int32(-1)}),
		New(names, []any{"b", "", nil, []any{}, "s", ibg.Timestamp(2000), int32(2)}),
		New(names, []any{"a", "z", []byte{3}, nil, "", ibg.Timestamp(3000), int32(3)}),
		New(names, []any{nil, nil, nil, []any{nil}, nil, ibg.Timestamp(4000), int32(4)}),
	}
	for i := range want {
		if !Equal(got[i], want[i]) {
			t.Errorf("row %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
	wantTypes := []string{"string", "string", "binary", "list<int>", "string", "timestamp", "int"}
	if got := typeStrings(rd.Schema()); strings.Join(got, ",") != strings.Join(wantTypes, ",") {
		t.Errorf("types %v, want %v", got, wantTypes)
	}
}

func TestArrowReaderErrors(t *testing.T) {
	sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "a", Type: ibg.PrimitiveTypes.Int32})
	tests := []struct {
		name string
		as   *arrow.Schema
		want error
	}{
		{"lossy arrow type", arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil), ErrTypeMismatch},
		{"column not in schema", arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int32}}, nil), ErrUnknownColumn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewArrowReader(tc.as, sc)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "column") {
				t.Fatalf("err = %v, want %v naming the column", err, tc.want)
			}
		})
	}
	t.Run("batch of another schema", func(t *testing.T) {
		mem := checkedAlloc(t)
		rec, _ := buildBatch(t, allTypesSchema(t), mem, 1)
		rd, err := NewArrowReader(arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil), sc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rd.AppendRows(rec, nil); !errors.Is(err, ErrTypeMismatch) {
			t.Fatalf("err = %v, want ErrTypeMismatch", err)
		}
	})
}

func TestBatchBuilderRejectsBadRows(t *testing.T) {
	sc := allTypesSchema(t)
	mem := checkedAlloc(t)
	bb, err := NewBatchBuilder(sc, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	s := bb.RowSchema()
	with := func(col int, v any) Row {
		vals := allTypesValues(s, 0)
		vals[col] = v
		return Of(s, vals)
	}
	tests := []struct {
		name string
		row  Row
		col  string
		want error
	}{
		{"null in required", with(1, nil), `"i"`, ErrRequiredNull},
		{"long into int", with(1, int64(1)), `"i"`, ErrTypeMismatch},
		{"int overflow", with(1, 1<<40), `"i"`, ErrTypeMismatch},
		{"string into long", with(2, "1"), `"l"`, ErrTypeMismatch},
		{"double into float", with(3, 1.5), `"f"`, ErrTypeMismatch},
		{"bad uuid string", with(13, "nope"), `"u"`, ErrTypeMismatch},
		{"unknown column", New([]string{"i", "zzz"}, []any{int32(1), "x"}), `"zzz"`, ErrUnknownColumn},
		{"nested required null", with(19, []any{New([]string{"x"}, []any{nil})}), `"pts.element.x"`, ErrRequiredNull},
		{"nested unknown field", with(18, New([]string{"x", "y"}, []any{1.0, 2.0})), `"pt.y"`, ErrUnknownColumn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := bb.AppendRow(tc.row)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.col) {
				t.Fatalf("err = %v, want %v naming %s", err, tc.want, tc.col)
			}
			if bb.Len() != 0 {
				t.Fatalf("Len = %d after a rejected row", bb.Len())
			}
		})
	}
	// Lossless conversions are accepted; the batch holds only valid rows.
	ok := New([]string{"i", "l", "d", "u"}, []any{int16(3), int32(4), float32(0.5), "6ba7b810-9dad-11d1-80b4-00c04fd430c8"})
	if err := bb.AppendRow(ok); err != nil {
		t.Fatal(err)
	}
	rec := bb.NewBatch()
	defer rec.Release()
	rd, err := NewArrowReader(rec.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rd.AppendRows(rec, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v, err %v", rows, err)
	}
	for name, want := range map[string]any{"i": int32(3), "l": int64(4), "d": 0.5, "b": nil} {
		if got, _ := rows[0].Get(name); !equalValue(got, want) {
			t.Errorf("%s = %v (%T), want %v (%T)", name, got, got, want, want)
		}
	}
}
