package row

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// allTypesSchema is an Iceberg schema with one column of every supported type.
func allTypesSchema(t testing.TB) *ibg.Schema {
	t.Helper()
	point := func(id int) *ibg.StructType {
		return &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: id, Name: "x", Type: ibg.PrimitiveTypes.Float64, Required: true},
			{ID: id + 1, Name: "label", Type: ibg.PrimitiveTypes.String},
		}}
	}
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "b", Type: ibg.PrimitiveTypes.Bool},
		ibg.NestedField{ID: 2, Name: "i", Type: ibg.PrimitiveTypes.Int32, Required: true},
		ibg.NestedField{ID: 3, Name: "l", Type: ibg.PrimitiveTypes.Int64},
		ibg.NestedField{ID: 4, Name: "f", Type: ibg.PrimitiveTypes.Float32},
		ibg.NestedField{ID: 5, Name: "d", Type: ibg.PrimitiveTypes.Float64},
		ibg.NestedField{ID: 6, Name: "dec", Type: ibg.DecimalTypeOf(38, 4)},
		ibg.NestedField{ID: 7, Name: "date", Type: ibg.PrimitiveTypes.Date},
		ibg.NestedField{ID: 8, Name: "time", Type: ibg.PrimitiveTypes.Time},
		ibg.NestedField{ID: 9, Name: "ts", Type: ibg.PrimitiveTypes.Timestamp},
		ibg.NestedField{ID: 10, Name: "tstz", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 11, Name: "tsns", Type: ibg.PrimitiveTypes.TimestampNs},
		ibg.NestedField{ID: 12, Name: "tstzns", Type: ibg.PrimitiveTypes.TimestampTzNs},
		ibg.NestedField{ID: 13, Name: "s", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 14, Name: "u", Type: ibg.PrimitiveTypes.UUID},
		ibg.NestedField{ID: 15, Name: "fx", Type: ibg.FixedTypeOf(3)},
		ibg.NestedField{ID: 16, Name: "bin", Type: ibg.PrimitiveTypes.Binary},
		ibg.NestedField{ID: 17, Name: "tags", Type: &ibg.ListType{ElementID: 20, Element: ibg.PrimitiveTypes.String}},
		ibg.NestedField{ID: 18, Name: "attrs", Type: &ibg.MapType{KeyID: 21, KeyType: ibg.PrimitiveTypes.String, ValueID: 22, ValueType: ibg.PrimitiveTypes.Int64}},
		ibg.NestedField{ID: 19, Name: "pt", Type: point(30)},
		ibg.NestedField{ID: 23, Name: "pts", Type: &ibg.ListType{ElementID: 24, Element: point(32), ElementRequired: true}},
	)
}

// rowSchemaOf returns the row Schema of an Iceberg schema.
func rowSchemaOf(sc *ibg.Schema) *Schema {
	fs := sc.Fields()
	names := make([]string, len(fs))
	types := make([]ibg.Type, len(fs))
	for i, f := range fs {
		names[i], types[i] = f.Name, f.Type
	}
	return NewSchema(names, types)
}

// allTypesValues returns the values of row k of allTypesSchema; every 3rd row has nulls
// in the optional columns.
func allTypesValues(s *Schema, k int) []any {
	ptSchema := NewSchema([]string{"x", "label"}, []ibg.Type{ibg.PrimitiveTypes.Float64, ibg.PrimitiveTypes.String})
	i64 := int64(k)
	vals := []any{
		k%2 == 0,
		int32(k),
		i64 * 1_000_000_007,
		float32(k) / 3,
		float64(k) / 7,
		ibg.Decimal{Val: decimal128.New(i64, uint64(k)*977), Scale: 4},
		ibg.Date(19000 + k),
		ibg.Time(int64(k) * 1_000_001),
		ibg.Timestamp(1_700_000_000_000_000 + i64),
		ibg.Timestamp(-1_700_000_000_000_000 - i64),
		ibg.TimestampNano(1_700_000_000_000_000_000 + i64),
		ibg.TimestampNano(i64),
		"row-" + string(rune('a'+k%26)),
		uuid.UUID{byte(k), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, byte(k >> 8)},
		[]byte{byte(k), 2, 3},
		[]byte("bin"),
		[]any{"x", nil, "z"},
		[]MapEntry{{Key: "a", Value: i64}, {Key: "b", Value: nil}},
		Of(ptSchema, []any{1.5, nil}),
		[]any{Of(ptSchema, []any{2.5, "p"})},
	}
	if k%3 == 2 {
		for i := range vals {
			if i != 1 {
				vals[i] = nil
			}
		}
	}
	return vals
}

// appendStructs appends one T per record of rec to dst. T must be the reader's type.
// Tests read typed slices with it; the read DoFns use AppendValues.
func appendStructs[T any](r *StructReader, rec arrow.RecordBatch, dst []T) ([]T, error) {
	if reflect.TypeFor[T]() != r.typ {
		return dst, fmt.Errorf("iceberg: read structs: %w: %s, reader type %s", ErrTypeMismatch, reflect.TypeFor[T](), r.typ)
	}
	n := int(rec.NumRows())
	start := len(dst)
	dst = append(dst, make([]T, n)...)
	if n == 0 {
		return dst, nil
	}
	if err := r.fill(rec, reflect.ValueOf(dst[start:]), unsafe.Pointer(&dst[start])); err != nil {
		return dst[:start], err
	}
	return dst, nil
}
