package row

import (
	"fmt"
	"reflect"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// idAlloc hands out field IDs 1..n depth-first: a field, then its nested fields, then
// the next field, the order iceberg-go's AssignFreshSchemaIDs uses.
type idAlloc struct{ next int }

func (a *idAlloc) id() int { a.next++; return a.next }

// InferSchema returns an Iceberg schema for creating a table that holds rows like r.
// Column types come from r's Schema when known, else from the Go values (int32 int,
// int64 long, ibg.Timestamp timestamp, ibg.TimestampNano timestamp_ns, []byte binary,
// []any list of its first non-null element's type, []MapEntry map, Row struct, ...:
// the README's type inference table). ibg.Timestamp says nothing of a time zone, so
// it is never timestamptz: a typed Schema, or an existing table's column, says so.
// A null value of unknown type is an error wrapping ErrUnsupportedType. A column is
// required when r's Schema declares it so (Schema.Required: a struct's non-pointer
// field, a required field of the schema the rows were read with), else optional;
// field IDs are assigned 1..n depth-first (each column, then its nested fields).
func InferSchema(r Row) (*ibg.Schema, error) {
	a := &idAlloc{}
	fields, err := inferRowFields(r, a, 0)
	if err != nil {
		return nil, fmt.Errorf("iceberg: infer schema: %w", err)
	}
	return newSchema(fields)
}

func newSchema(fields []ibg.NestedField) (sc *ibg.Schema, err error) {
	defer func() {
		if p := recover(); p != nil { // iceberg-go panics on duplicate names or IDs
			sc, err = nil, fmt.Errorf("iceberg: infer schema: %w: %v", ErrUnsupportedType, p)
		}
	}()
	return ibg.NewSchema(0, fields...), nil
}

func inferRowFields(r Row, a *idAlloc, depth int) ([]ibg.NestedField, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: rows nest too deeply", ErrUnsupportedType)
	}
	names := r.Names()
	var types []ibg.Type
	if r.schema != nil {
		types = r.schema.types
	}
	fields := make([]ibg.NestedField, len(names))
	for i, n := range names {
		id := a.id()
		var t ibg.Type
		var err error
		required := false
		if i < len(types) && types[i] != nil {
			t, required = renumber(types[i], a), r.schema.Required(i)
		} else {
			t, err = inferValue(r.Value(i), a, depth+1)
		}
		if err != nil {
			return nil, inColumn(n, err)
		}
		fields[i] = ibg.NestedField{ID: id, Name: n, Type: t, Required: required}
	}
	return fields, nil
}

// renumber returns a copy of t with fresh nested field IDs from a.
func renumber(t ibg.Type, a *idAlloc) ibg.Type {
	switch t := t.(type) {
	case *ibg.ListType:
		id := a.id()
		return &ibg.ListType{ElementID: id, Element: renumber(t.Element, a), ElementRequired: t.ElementRequired}
	case *ibg.MapType:
		kid, vid := a.id(), a.id()
		return &ibg.MapType{KeyID: kid, KeyType: renumber(t.KeyType, a), ValueID: vid,
			ValueType: renumber(t.ValueType, a), ValueRequired: t.ValueRequired}
	case *ibg.StructType:
		fs := make([]ibg.NestedField, len(t.FieldList))
		for i, f := range t.FieldList {
			f.ID = a.id()
			f.Type = renumber(f.Type, a)
			fs[i] = f
		}
		return &ibg.StructType{FieldList: fs}
	}
	return t
}

// InferType returns the Iceberg type InferSchema gives a column holding v (nested
// field IDs from 1). A null has no type: the error wraps ErrUnsupportedType.
func InferType(v any) (ibg.Type, error) { return inferValue(v, &idAlloc{}, 0) }

func inferValue(v any, a *idAlloc, depth int) (ibg.Type, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: values nest too deeply", ErrUnsupportedType)
	}
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("%w: null value of unknown type", ErrUnsupportedType)
	case bool:
		return ibg.PrimitiveTypes.Bool, nil
	case int32:
		return ibg.PrimitiveTypes.Int32, nil
	case int64:
		return ibg.PrimitiveTypes.Int64, nil
	case float32:
		return ibg.PrimitiveTypes.Float32, nil
	case float64:
		return ibg.PrimitiveTypes.Float64, nil
	case ibg.Decimal:
		return ibg.DecimalTypeOf(38, x.Scale), nil
	case ibg.Date:
		return ibg.PrimitiveTypes.Date, nil
	case ibg.Time:
		return ibg.PrimitiveTypes.Time, nil
	case ibg.Timestamp:
		return ibg.PrimitiveTypes.Timestamp, nil
	case ibg.TimestampNano:
		return ibg.PrimitiveTypes.TimestampNs, nil
	case string:
		return ibg.PrimitiveTypes.String, nil
	case uuid.UUID:
		return ibg.PrimitiveTypes.UUID, nil
	case []byte:
		return ibg.PrimitiveTypes.Binary, nil
	case Variant:
		return ibg.VariantType{}, nil
	case []any:
		id := a.id()
		for _, e := range x {
			if e != nil {
				et, err := inferValue(e, a, depth+1)
				if err != nil {
					return nil, inColumn("element", err)
				}
				return &ibg.ListType{ElementID: id, Element: et}, nil
			}
		}
		return nil, fmt.Errorf("%w: list without a non-null element", ErrUnsupportedType)
	case []MapEntry:
		kid, vid := a.id(), a.id()
		for _, e := range x {
			if e.Key != nil && e.Value != nil {
				kt, err := inferValue(e.Key, a, depth+1)
				if err != nil {
					return nil, inColumn("key", err)
				}
				vt, err := inferValue(e.Value, a, depth+1)
				if err != nil {
					return nil, inColumn("value", err)
				}
				return &ibg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt}, nil
			}
		}
		return nil, fmt.Errorf("%w: map without a non-null entry", ErrUnsupportedType)
	case Row:
		fs, err := inferRowFields(x, a, depth+1)
		if err != nil {
			return nil, err
		}
		return &ibg.StructType{FieldList: fs}, nil
	}
	return nil, mismatch(v, nil)
}

// InferStructSchema returns an Iceberg schema for struct type t (see StructMapping for
// column names). Pointer, slice and map fields are optional ([]byte too), others are
// required; time.Time (an instant) is timestamptz, ibg.Timestamp timestamp,
// ibg.TimestampNano timestamp_ns, int and int64 long, int8/int16/int32/uint8/uint16
// int, uint32 long, string string, uuid.UUID uuid, [N]byte fixed[N], ibg.Decimal
// decimal(38, 18) unless the field has a `scale:"S"` tag (and `precision:"P"`), slices
// lists, maps maps and nested structs structs. Field IDs are 1..n depth-first.
func InferStructSchema(t reflect.Type) (*ibg.Schema, error) {
	a := &idAlloc{}
	st, err := inferStruct(t, a, 0)
	if err != nil {
		return nil, fmt.Errorf("iceberg: infer schema of %s: %w", t, err)
	}
	return newSchema(st.FieldList)
}

func inferStruct(t reflect.Type, a *idAlloc, depth int) (*ibg.StructType, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: %s nests too deeply", ErrUnsupportedType, t)
	}
	m, err := MapStruct(t)
	if err != nil {
		return nil, err
	}
	fs := make([]ibg.NestedField, len(m.Fields))
	for k, f := range m.Fields {
		fs[k] = ibg.NestedField{ID: a.id(), Name: f.Column}
		sf := m.Type.Field(f.Index)
		ft, req, err := inferGo(f.Type, sf.Tag, a, depth+1)
		if err != nil {
			return nil, inColumn(f.Column, err)
		}
		fs[k].Type, fs[k].Required = ft, req
	}
	return &ibg.StructType{FieldList: fs}, nil
}

// inferGo returns the Iceberg type of Go type t and whether a value is required.
func inferGo(t reflect.Type, tag reflect.StructTag, a *idAlloc, depth int) (ibg.Type, bool, error) {
	switch t {
	case timeType:
		return ibg.PrimitiveTypes.TimestampTz, true, nil
	case uuidType:
		return ibg.PrimitiveTypes.UUID, true, nil
	case bytesType:
		return ibg.PrimitiveTypes.Binary, false, nil
	case variantType:
		return ibg.VariantType{}, false, nil
	case reflect.TypeOf(ibg.Date(0)):
		return ibg.PrimitiveTypes.Date, true, nil
	case reflect.TypeOf(ibg.Time(0)):
		return ibg.PrimitiveTypes.Time, true, nil
	case reflect.TypeOf(ibg.Timestamp(0)):
		return ibg.PrimitiveTypes.Timestamp, true, nil
	case reflect.TypeOf(ibg.TimestampNano(0)):
		return ibg.PrimitiveTypes.TimestampNs, true, nil
	case reflect.TypeOf(ibg.Decimal{}):
		p, s := 38, 18
		if v, ok := tag.Lookup("precision"); ok {
			if _, err := fmt.Sscan(v, &p); err != nil {
				return nil, false, fmt.Errorf("%w: precision tag %q", ErrUnsupportedType, v)
			}
		}
		if v, ok := tag.Lookup("scale"); ok {
			if _, err := fmt.Sscan(v, &s); err != nil {
				return nil, false, fmt.Errorf("%w: scale tag %q", ErrUnsupportedType, v)
			}
		}
		if p <= 0 || p > 38 || s < 0 || s > p {
			return nil, false, fmt.Errorf("%w: decimal(%d, %d)", ErrUnsupportedType, p, s)
		}
		return ibg.DecimalTypeOf(p, s), true, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		et, _, err := inferGo(t.Elem(), tag, a, depth+1)
		return et, false, err
	case reflect.Bool:
		return ibg.PrimitiveTypes.Bool, true, nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return ibg.PrimitiveTypes.Int32, true, nil
	case reflect.Int, reflect.Int64, reflect.Uint32:
		return ibg.PrimitiveTypes.Int64, true, nil
	case reflect.Float32:
		return ibg.PrimitiveTypes.Float32, true, nil
	case reflect.Float64:
		return ibg.PrimitiveTypes.Float64, true, nil
	case reflect.String:
		return ibg.PrimitiveTypes.String, true, nil
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return ibg.FixedTypeOf(t.Len()), true, nil
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return ibg.PrimitiveTypes.Binary, false, nil
		}
		id := a.id()
		et, req, err := inferGo(t.Elem(), "", a, depth+1)
		if err != nil {
			return nil, false, inColumn("element", err)
		}
		return &ibg.ListType{ElementID: id, Element: et, ElementRequired: req}, false, nil
	case reflect.Map:
		kid, vid := a.id(), a.id()
		kt, _, err := inferGo(t.Key(), "", a, depth+1)
		if err != nil {
			return nil, false, inColumn("key", err)
		}
		vt, req, err := inferGo(t.Elem(), "", a, depth+1)
		if err != nil {
			return nil, false, inColumn("value", err)
		}
		return &ibg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: req}, false, nil
	case reflect.Struct:
		st, err := inferStruct(t, a, depth+1)
		return st, true, err
	}
	return nil, false, fmt.Errorf("%w: Go type %s", ErrUnsupportedType, t)
}
