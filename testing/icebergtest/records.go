package icebergtest

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// ArrowSchema converts an Iceberg schema to the Arrow schema iceberg-go
// writes and reads (field IDs in the field metadata, small types).
func ArrowSchema(t testing.TB, sc *ibg.Schema) *arrow.Schema {
	t.Helper()

	out, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatalf("icebergtest: arrow schema: %v", err)
	}

	return out
}

// Records builds one Arrow record batch for the Iceberg schema sc from Go
// values, one []any per row with one value per top-level column in schema
// order. nil is null. Accepted values per Iceberg type:
//
//   - boolean: bool; int: int32, int; long: int64, int
//   - float: float32; double: float64
//   - decimal(P,S): [ibg.Decimal], decimal128.Num (unscaled), string ("12.34"), float64
//   - date: [ibg.Date], time.Time, string ("2006-01-02")
//   - time: [ibg.Time] (microseconds), time.Duration since midnight
//   - timestamp, timestamptz: [ibg.Timestamp] (microseconds), time.Time
//   - string: string; binary, fixed[L]: []byte (string for binary)
//   - uuid: uuid.UUID, [16]byte, string
//   - struct: map[string]any by field name, or []any in field order
//   - list: any slice; map: any Go map (entries sorted by key for a
//     deterministic layout)
func Records(t testing.TB, sc *ibg.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()

	rec, err := BuildRecords(sc, rows)
	if err != nil {
		t.Fatalf("icebergtest: %v", err)
	}
	t.Cleanup(rec.Release)

	return rec
}

// BuildRecords is [Records] returning an error instead of failing a test.
// The caller releases the batch.
func BuildRecords(sc *ibg.Schema, rows [][]any) (arrow.RecordBatch, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("build records: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	fields := sc.Fields()
	for i, row := range rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("build records: row %d has %d values, schema has %d columns", i, len(row), len(fields))
		}
		for j, f := range fields {
			v := row[j]
			if v == nil && f.Required {
				return nil, fmt.Errorf("build records: row %d: null in required column %q", i, f.Name)
			}
			if err := appendValue(b.Field(j), f.Type, v); err != nil {
				return nil, fmt.Errorf("build records: row %d column %q: %w", i, f.Name, err)
			}
		}
	}

	return b.NewRecordBatch(), nil
}

// appendValue appends the Go value v of Iceberg type typ to b.
func appendValue(b array.Builder, typ ibg.Type, v any) error {
	if v == nil {
		b.AppendNull()

		return nil
	}
	bad := func() error { return fmt.Errorf("cannot use %T as %s", v, typ) }
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int32Builder:
		switch x := v.(type) {
		case int32:
			bb.Append(x)
		case int:
			bb.Append(int32(x))
		default:
			return bad()
		}
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			bb.Append(x)
		case int:
			bb.Append(int64(x))
		default:
			return bad()
		}
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Decimal128Builder:
		dt := bb.Type().(*arrow.Decimal128Type)
		switch x := v.(type) {
		case ibg.Decimal:
			if x.Scale != int(dt.Scale) {
				return fmt.Errorf("decimal scale %d, column has %d", x.Scale, dt.Scale)
			}
			bb.Append(x.Val)
		case decimal128.Num:
			bb.Append(x)
		case string:
			n, err := decimal128.FromString(x, dt.Precision, dt.Scale)
			if err != nil {
				return err
			}
			bb.Append(n)
		case float64:
			n, err := decimal128.FromFloat64(x, dt.Precision, dt.Scale)
			if err != nil {
				return err
			}
			bb.Append(n)
		default:
			return bad()
		}
	case *array.Date32Builder:
		switch x := v.(type) {
		case ibg.Date:
			bb.Append(arrow.Date32(x))
		case time.Time:
			bb.Append(arrow.Date32FromTime(x))
		case string:
			d, err := time.Parse(time.DateOnly, x)
			if err != nil {
				return err
			}
			bb.Append(arrow.Date32FromTime(d))
		default:
			return bad()
		}
	case *array.Time64Builder:
		switch x := v.(type) {
		case ibg.Time:
			bb.Append(arrow.Time64(x))
		case time.Duration:
			bb.Append(arrow.Time64(x.Microseconds()))
		default:
			return bad()
		}
	case *array.TimestampBuilder:
		unit := bb.Type().(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case ibg.Timestamp:
			if unit != arrow.Microsecond {
				return bad()
			}
			bb.Append(arrow.Timestamp(x))
		case ibg.TimestampNano:
			if unit != arrow.Nanosecond {
				return bad()
			}
			bb.Append(arrow.Timestamp(x))
		case time.Time:
			if unit == arrow.Nanosecond {
				bb.Append(arrow.Timestamp(x.UnixNano()))
			} else {
				bb.Append(arrow.Timestamp(x.UnixMicro()))
			}
		default:
			return bad()
		}
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *extensions.UUIDBuilder:
		switch x := v.(type) {
		case uuid.UUID:
			bb.Append(x)
		case [16]byte:
			bb.AppendBytes(x)
		case string:
			u, err := uuid.Parse(x)
			if err != nil {
				return err
			}
			bb.Append(u)
		default:
			return bad()
		}
	case *array.FixedSizeBinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		if w := bb.Type().(*arrow.FixedSizeBinaryType).ByteWidth; len(x) != w {
			return fmt.Errorf("fixed[%d] value has %d bytes", w, len(x))
		}
		bb.Append(x)
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		case string:
			bb.AppendString(x)
		default:
			return bad()
		}
	case *array.StructBuilder:
		st, ok := typ.(*ibg.StructType)
		if !ok {
			return bad()
		}
		fields := st.Fields()
		var vals []any
		switch x := v.(type) {
		case map[string]any:
			for k := range x {
				if !slices.ContainsFunc(fields, func(f ibg.NestedField) bool { return f.Name == k }) {
					return fmt.Errorf("struct has no field %q", k)
				}
			}
			for _, f := range fields {
				vals = append(vals, x[f.Name])
			}
		case []any:
			if len(x) != len(fields) {
				return fmt.Errorf("struct value has %d fields, type has %d", len(x), len(fields))
			}
			vals = x
		default:
			return bad()
		}
		bb.Append(true)
		for i, f := range fields {
			if vals[i] == nil && f.Required {
				return fmt.Errorf("null in required field %q", f.Name)
			}
			if err := appendValue(bb.FieldBuilder(i), f.Type, vals[i]); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
	case *array.ListBuilder:
		lt, ok := typ.(*ibg.ListType)
		if !ok {
			return bad()
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice {
			return bad()
		}
		bb.Append(true)
		for i := range rv.Len() {
			e := rv.Index(i).Interface()
			if e == nil && lt.ElementRequired {
				return fmt.Errorf("null element %d in list of required elements", i)
			}
			if err := appendValue(bb.ValueBuilder(), lt.Element, e); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	case *array.MapBuilder:
		mt, ok := typ.(*ibg.MapType)
		if !ok {
			return bad()
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Map {
			return bad()
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool {
			return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface())
		})
		bb.Append(true)
		for _, k := range keys {
			if err := appendValue(bb.KeyBuilder(), mt.KeyType, k.Interface()); err != nil {
				return fmt.Errorf("map key %v: %w", k, err)
			}
			val := rv.MapIndex(k).Interface()
			if val == nil && mt.ValueRequired {
				return fmt.Errorf("null value for key %v in map of required values", k)
			}
			if err := appendValue(bb.ItemBuilder(), mt.ValueType, val); err != nil {
				return fmt.Errorf("map value of %v: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("unsupported arrow builder %T for %s", b, typ)
	}

	return nil
}

// SampleSchema returns a schema with every primitive Iceberg type (one
// column each: boolean, int, long, float, double, decimal(10,2), date,
// time, timestamp, timestamptz, string, uuid, fixed[4], binary), a nested
// struct, a list and a map. Column "id" (long, required, field ID 1) is the
// identifier field; every other column is optional. Field IDs are numbered
// the way iceberg-go's catalogs reassign them on create (depth first), so
// batches built for this schema match the created table's schema.
func SampleSchema() *ibg.Schema {
	p := ibg.PrimitiveTypes
	opt := func(id int, name string, typ ibg.Type) ibg.NestedField {
		return ibg.NestedField{ID: id, Name: name, Type: typ}
	}

	return ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		opt(2, "bool_col", p.Bool),
		opt(3, "int_col", p.Int32),
		opt(4, "long_col", p.Int64),
		opt(5, "float_col", p.Float32),
		opt(6, "double_col", p.Float64),
		opt(7, "decimal_col", ibg.DecimalTypeOf(10, 2)),
		opt(8, "date_col", p.Date),
		opt(9, "time_col", p.Time),
		opt(10, "ts_col", p.Timestamp),
		opt(11, "tstz_col", p.TimestampTz),
		opt(12, "string_col", p.String),
		opt(13, "uuid_col", p.UUID),
		opt(14, "fixed_col", ibg.FixedTypeOf(4)),
		opt(15, "binary_col", p.Binary),
		opt(16, "struct_col", &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 17, Name: "a", Type: p.Int32, Required: true},
			{ID: 18, Name: "b", Type: p.String},
		}}),
		opt(19, "list_col", &ibg.ListType{ElementID: 20, Element: p.Int64}),
		opt(21, "map_col", &ibg.MapType{KeyID: 22, KeyType: p.String, ValueID: 23, ValueType: p.Int32}),
	)
}

// SampleRows returns n rows for [SampleSchema], deterministic from seed:
// ids 0..n-1, and in every optional column about one value in seven null.
func SampleRows(n int, seed int64) [][]any {
	r := rand.New(rand.NewSource(seed))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	maybe := func(v any) any {
		if r.Intn(7) == 0 {
			return nil
		}

		return v
	}
	rows := make([][]any, n)
	for i := range rows {
		var u uuid.UUID
		r.Read(u[:])
		u[6] = (u[6] & 0x0f) | 0x40
		u[8] = (u[8] & 0x3f) | 0x80
		fixed := make([]byte, 4)
		r.Read(fixed)
		bin := make([]byte, r.Intn(8))
		r.Read(bin)
		ts := base.Add(time.Duration(r.Int63n(int64(365*24*time.Hour))) / time.Microsecond * time.Microsecond)
		list := make([]any, r.Intn(4))
		for j := range list {
			list[j] = maybe(r.Int63n(1000))
		}
		m := map[string]any{}
		for j := range r.Intn(3) {
			m[fmt.Sprintf("k%d", j)] = maybe(int32(r.Intn(100)))
		}
		rows[i] = []any{
			int64(i),
			maybe(r.Intn(2) == 0),
			maybe(int32(r.Intn(2000) - 1000)),
			maybe(r.Int63() - r.Int63()),
			maybe(float32(r.NormFloat64())),
			maybe(r.NormFloat64() * 1000),
			maybe(fmt.Sprintf("%d.%02d", r.Intn(2000000)-1000000, r.Intn(100))),
			maybe(ibg.Date(19000 + r.Intn(2000))),
			maybe(ibg.Time(r.Int63n(int64(24 * time.Hour / time.Microsecond)))),
			maybe(ibg.Timestamp(ts.UnixMicro())),
			maybe(ts.Add(time.Hour)),
			maybe(fmt.Sprintf("s-%d-%x", i, r.Int31())),
			maybe(u),
			maybe(fixed),
			maybe(bin),
			maybe(map[string]any{"a": int32(r.Intn(100)), "b": maybe(fmt.Sprintf("b%d", i))}),
			maybe(list),
			maybe(m),
		}
	}

	return rows
}

// SampleRecords returns n rows of [SampleRows] (seed) as one record batch
// of [SampleSchema].
func SampleRecords(t testing.TB, n int, seed int64) arrow.RecordBatch {
	t.Helper()

	return Records(t, SampleSchema(), SampleRows(n, seed))
}
