package row

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
)

const badUTF8 = "ok\xffbad" // 0xff is never valid in UTF-8

// TestInvalidUTF8Rejected: a string that is not valid UTF-8 is rejected wherever a row
// meets its schema (Normalize, RowValues, BatchBuilder.AppendRow, struct conversion),
// top-level or nested, with an error wrapping ErrInvalidUTF8 and naming the column.
func TestInvalidUTF8Rejected(t *testing.T) {
	strs := &ibg.MapType{KeyID: 31, KeyType: ibg.PrimitiveTypes.String, ValueID: 32, ValueType: ibg.PrimitiveTypes.String}
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "tags", Type: &ibg.ListType{ElementID: 30, Element: ibg.PrimitiveTypes.String}},
		ibg.NestedField{ID: 4, Name: "attrs", Type: strs},
		ibg.NestedField{ID: 5, Name: "addr", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 33, Name: "city", Type: ibg.PrimitiveTypes.String}}}},
		ibg.NestedField{ID: 6, Name: "raw", Type: ibg.PrimitiveTypes.Binary},
	)
	addr := func(city string) Row { return New([]string{"city"}, []any{city}) }
	tests := []struct {
		name string
		row  Row
		col  string
	}{
		{"top-level", New([]string{"id", "name"}, []any{int64(1), badUTF8}), `"name"`},
		{"list element", New([]string{"id", "tags"}, []any{int64(1), []any{"a", badUTF8}}), `"tags.element"`},
		{"map key", New([]string{"id", "attrs"}, []any{int64(1), []MapEntry{{Key: badUTF8, Value: "v"}}}), `"attrs.key"`},
		{"map value", New([]string{"id", "attrs"}, []any{int64(1), []MapEntry{{Key: "k", Value: badUTF8}}}), `"attrs.value"`},
		{"struct field", New([]string{"id", "addr"}, []any{int64(1), addr(badUTF8)}), `"addr.city"`},
		{"lone continuation byte", New([]string{"id", "name"}, []any{int64(1), "\x80"}), `"name"`},
		{"surrogate half", New([]string{"id", "name"}, []any{int64(1), "\xed\xa0\x80"}), `"name"`},
		{"truncated rune", New([]string{"id", "name"}, []any{int64(1), "é"[:1]}), `"name"`},
	}
	check := func(t *testing.T, err error, col string) {
		t.Helper()
		if !errors.Is(err, ErrInvalidUTF8) || !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), col) {
			t.Fatalf("err = %v, want ErrInvalidUTF8 naming column %s", err, col)
		}
		if !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Fatalf("err = %v does not say what is wrong", err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RowValues(tt.row, sc)
			check(t, err, tt.col)
			bb, err := NewBatchBuilder(sc, checkedAlloc(t))
			if err != nil {
				t.Fatal(err)
			}
			defer bb.Release()
			check(t, bb.AppendRow(tt.row), tt.col)
			if bb.Len() != 0 {
				t.Fatalf("Len = %d after a rejected row", bb.Len())
			}
		})
	}
	t.Run("Normalize names the offset", func(t *testing.T) {
		_, err := Normalize(badUTF8, ibg.PrimitiveTypes.String)
		if !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), "byte 0xff at offset 2") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("valid UTF-8 and binary pass", func(t *testing.T) {
		r := New([]string{"id", "name", "tags", "attrs", "addr", "raw"}, []any{int64(1), "日本 ok é", []any{"ü"},
			[]MapEntry{{Key: "ключ", Value: "值"}}, addr("Zürich"), []byte(badUTF8)})
		if _, err := RowValues(r, sc); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("structs", func(t *testing.T) {
		type place struct {
			City string `iceberg:"city"`
		}
		type rec struct {
			ID    int64             `iceberg:"id"`
			Name  string            `iceberg:"name"`
			Tags  []string          `iceberg:"tags"`
			Attrs map[string]string `iceberg:"attrs"`
			Addr  place             `iceberg:"addr"`
		}
		for _, tt := range []struct {
			v   rec
			col string
		}{
			{rec{ID: 1, Name: badUTF8}, `"name"`},
			{rec{ID: 1, Tags: []string{badUTF8}}, `"tags.element"`},
			{rec{ID: 1, Attrs: map[string]string{badUTF8: "v"}}, `"attrs.key"`},
			{rec{ID: 1, Attrs: map[string]string{"k": badUTF8}}, `"attrs.value"`},
			{rec{ID: 1, Addr: place{City: badUTF8}}, `"addr.city"`},
		} {
			bb, err := NewBatchBuilder(sc, checkedAlloc(t))
			if err != nil {
				t.Fatal(err)
			}
			check(t, bb.AppendStruct(tt.v), tt.col)
			bb.Release()
			sv, err := NewStructValues(reflect.TypeOf(tt.v), sc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = sv.Values(&tt.v)
			check(t, err, tt.col)
		}
	})
}
