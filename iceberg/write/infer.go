package write

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// InferRowSchema returns the Iceberg schema of r for creating a table: the row's own
// column types when known, otherwise types inferred from its Go values (a null value of
// unknown type is an error naming the column). Every column is optional; field IDs are
// assigned depth first from 1.
func InferRowSchema(r row.Row) (*ibg.Schema, error) {
	next := 0
	fields, err := inferRowFields("", r, &next)
	if err != nil {
		return nil, err
	}
	return ibg.NewSchema(0, fields...), nil
}

func inferRowFields(prefix string, r row.Row, next *int) ([]ibg.NestedField, error) {
	var known []ibg.Type
	if s := r.Schema(); s != nil {
		known = s.Types()
	}
	out := make([]ibg.NestedField, 0, r.Len())
	ids := make([]int, r.Len())
	for i := range r.Len() { // parents before children, as catalogs number them
		*next++
		ids[i] = *next
	}
	for i, n := range r.Names() {
		var (
			t   ibg.Type
			err error
		)
		if i < len(known) && known[i] != nil {
			t = renumber(known[i], next)
		} else {
			t, err = inferValueType(prefix+n, r.Value(i), next)
			if err != nil {
				return nil, err
			}
		}
		out = append(out, ibg.NestedField{ID: ids[i], Name: n, Type: t})
	}
	return out, nil
}

// renumber gives nested fields of t fresh IDs from next (catalogs reassign them anyway;
// this keeps them unique).
func renumber(t ibg.Type, next *int) ibg.Type {
	switch x := t.(type) {
	case *ibg.StructType:
		fs := make([]ibg.NestedField, len(x.FieldList))
		for i, f := range x.FieldList {
			*next++
			f.ID = *next
			fs[i] = f
		}
		for i := range fs {
			fs[i].Type = renumber(fs[i].Type, next)
		}
		return &ibg.StructType{FieldList: fs}
	case *ibg.ListType:
		*next++
		return &ibg.ListType{ElementID: *next, Element: renumber(x.Element, next), ElementRequired: x.ElementRequired}
	case *ibg.MapType:
		*next += 2
		return &ibg.MapType{KeyID: *next - 1, KeyType: renumber(x.KeyType, next), ValueID: *next,
			ValueType: renumber(x.ValueType, next), ValueRequired: x.ValueRequired}
	}
	return t
}

func inferValueType(path string, v any, next *int) (ibg.Type, error) {
	p := ibg.PrimitiveTypes
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("%w: cannot infer the type of column %q from a null value", row.ErrUnsupportedType, path)
	case bool:
		return p.Bool, nil
	case int32:
		return p.Int32, nil
	case int64:
		return p.Int64, nil
	case float32:
		return p.Float32, nil
	case float64:
		return p.Float64, nil
	case ibg.Decimal:
		return ibg.DecimalTypeOf(38, x.Scale), nil
	case ibg.Date:
		return p.Date, nil
	case ibg.Time:
		return p.Time, nil
	case ibg.Timestamp:
		return p.TimestampTz, nil
	case ibg.TimestampNano:
		return p.TimestampTzNs, nil
	case string:
		return p.String, nil
	case uuid.UUID:
		return p.UUID, nil
	case []byte:
		return p.Binary, nil
	case row.Row:
		fs, err := inferRowFields(path+".", x, next)
		if err != nil {
			return nil, err
		}
		return &ibg.StructType{FieldList: fs}, nil
	case []any:
		*next++
		id := *next
		for _, e := range x {
			if e != nil {
				et, err := inferValueType(path+".element", e, next)
				if err != nil {
					return nil, err
				}
				return &ibg.ListType{ElementID: id, Element: et}, nil
			}
		}
		return nil, fmt.Errorf("%w: cannot infer the element type of list column %q without a non-null element", row.ErrUnsupportedType, path)
	case []row.MapEntry:
		*next += 2
		kid, vid := *next-1, *next
		for _, e := range x {
			if e.Value != nil {
				kt, err := inferValueType(path+".key", e.Key, next)
				if err != nil {
					return nil, err
				}
				vt, err := inferValueType(path+".value", e.Value, next)
				if err != nil {
					return nil, err
				}
				return &ibg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt}, nil
			}
		}
		return nil, fmt.Errorf("%w: cannot infer the types of map column %q without a non-null entry", row.ErrUnsupportedType, path)
	}
	return nil, fmt.Errorf("%w: column %q has Go type %T", row.ErrUnsupportedType, path, v)
}

// StructCodec converts values of one struct type to Rows. Fields map to columns by
// `iceberg:"name"` tag, then `beam:"name"` tag, then field name; "-" skips a field.
// Go types: bool, int32, int64, int (long), float32, float64, string, []byte, time.Time
// (timestamptz), ibg.Date/Time/Timestamp/Decimal, uuid.UUID, nested structs, slices and
// maps of those; pointers are nullable, everything else required.
type StructCodec struct {
	t      reflect.Type
	fields []structField
	schema *row.Schema
	ice    *ibg.Schema
}

type structField struct {
	index []int
	name  string
	sub   *StructCodec // nested struct (through a pointer when ptr)
}

// NewStructCodec builds the codec of struct type t (or pointer to struct).
func NewStructCodec(t reflect.Type) (*StructCodec, error) {
	next := 0
	return newStructCodec(t, &next)
}

func newStructCodec(t reflect.Type, next *int) (*StructCodec, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a struct", row.ErrUnsupportedType, t)
	}
	c := &StructCodec{t: t}
	var names []string
	var types []ibg.Type
	var nfs []ibg.NestedField
	var ids []int
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("iceberg"); ok {
			name = strings.Split(tag, ",")[0]
		} else if tag, ok := f.Tag.Lookup("beam"); ok {
			name = strings.Split(tag, ",")[0]
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		*next++
		ids = append(ids, *next)
		c.fields = append(c.fields, structField{index: f.Index, name: name})
		names = append(names, name)
	}
	for i := range c.fields {
		f := t.FieldByIndex(c.fields[i].index)
		typ, required, sub, err := goType(f.Type, next)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", t.Name(), f.Name, err)
		}
		c.fields[i].sub = sub
		types = append(types, typ)
		nfs = append(nfs, ibg.NestedField{ID: ids[i], Name: c.fields[i].name, Type: typ, Required: required})
	}
	c.schema = row.NewSchema(names, types)
	c.ice = ibg.NewSchema(0, nfs...)
	return c, nil
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	uuidType    = reflect.TypeFor[uuid.UUID]()
	dateType    = reflect.TypeFor[ibg.Date]()
	timeOfDay   = reflect.TypeFor[ibg.Time]()
	tsType      = reflect.TypeFor[ibg.Timestamp]()
	decimalType = reflect.TypeFor[ibg.Decimal]()
	bytesType   = reflect.TypeFor[[]byte]()
)

func goType(t reflect.Type, next *int) (typ ibg.Type, required bool, sub *StructCodec, err error) {
	required = true
	if t.Kind() == reflect.Pointer {
		required = false
		t = t.Elem()
	}
	p := ibg.PrimitiveTypes
	switch t {
	case timeType:
		return p.TimestampTz, required, nil, nil
	case uuidType:
		return p.UUID, required, nil, nil
	case dateType:
		return p.Date, required, nil, nil
	case timeOfDay:
		return p.Time, required, nil, nil
	case tsType:
		return p.TimestampTz, required, nil, nil
	case decimalType:
		return nil, false, nil, fmt.Errorf("%w: decimal struct fields need a declared precision; use iceberg.Row", row.ErrUnsupportedType)
	case bytesType:
		return p.Binary, false, nil, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return p.Bool, required, nil, nil
	case reflect.Int32:
		return p.Int32, required, nil, nil
	case reflect.Int64, reflect.Int:
		return p.Int64, required, nil, nil
	case reflect.Float32:
		return p.Float32, required, nil, nil
	case reflect.Float64:
		return p.Float64, required, nil, nil
	case reflect.String:
		return p.String, required, nil, nil
	case reflect.Struct:
		sc, err := newStructCodec(t, next)
		if err != nil {
			return nil, false, nil, err
		}
		return &ibg.StructType{FieldList: sc.ice.Fields()}, required, sc, nil
	case reflect.Slice:
		*next++
		id := *next
		et, ereq, _, err := goType(t.Elem(), next)
		if err != nil {
			return nil, false, nil, err
		}
		return &ibg.ListType{ElementID: id, Element: et, ElementRequired: ereq}, false, nil, nil
	case reflect.Map:
		*next += 2
		kid, vid := *next-1, *next
		kt, _, _, err := goType(t.Key(), next)
		if err != nil {
			return nil, false, nil, err
		}
		vt, vreq, _, err := goType(t.Elem(), next)
		if err != nil {
			return nil, false, nil, err
		}
		return &ibg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: vreq}, false, nil, nil
	}
	return nil, false, nil, fmt.Errorf("%w: Go type %s", row.ErrUnsupportedType, t)
}

// Schema returns the Iceberg schema of the struct type.
func (c *StructCodec) Schema() *ibg.Schema { return c.ice }

// ToRow converts v (of the codec's struct type, or a pointer to it) to a Row.
func (c *StructCodec) ToRow(v any) (row.Row, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return row.Row{}, fmt.Errorf("%w: nil %s", row.ErrRequiredNull, c.t)
		}
		rv = rv.Elem()
	}
	if rv.Type() != c.t {
		return row.Row{}, fmt.Errorf("%w: %s is not %s", row.ErrTypeMismatch, rv.Type(), c.t)
	}
	return c.toRow(rv), nil
}

func (c *StructCodec) toRow(rv reflect.Value) row.Row {
	vals := make([]any, len(c.fields))
	for i, f := range c.fields {
		vals[i] = goValue(rv.FieldByIndex(f.index), f.sub)
	}
	return row.Of(c.schema, vals)
}

func goValue(v reflect.Value, sub *StructCodec) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Type() {
	case timeType:
		return ibg.Timestamp(v.Interface().(time.Time).UnixMicro())
	case uuidType, dateType, timeOfDay, tsType:
		return v.Interface()
	case bytesType:
		if v.IsNil() {
			return nil
		}
		return v.Bytes()
	}
	switch v.Kind() {
	case reflect.Int:
		return v.Int()
	case reflect.Struct:
		return sub.toRow(v)
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = goValue(v.Index(i), elemCodec(v.Type().Elem()))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make([]row.MapEntry, 0, v.Len())
		it := v.MapRange()
		for it.Next() {
			out = append(out, row.MapEntry{Key: goValue(it.Key(), nil), Value: goValue(it.Value(), elemCodec(v.Type().Elem()))})
		}
		return out
	}
	return v.Interface()
}

// elemCodec returns the codec of a struct element type of a slice or map, or nil.
func elemCodec(t reflect.Type) *StructCodec {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || t == uuidType || t == decimalType {
		return nil
	}
	c, err := NewStructCodec(t)
	if err != nil {
		return nil
	}
	return c
}
