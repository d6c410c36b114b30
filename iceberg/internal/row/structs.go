package row

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// StructMapping is the mapping of a struct type's exported fields to column names.
// A field's column is chosen, in order, by its `iceberg:"name"` tag, its `beam:"name"`
// tag, then its Go name, matched exactly, then case-insensitively; `iceberg:"-"` skips
// the field. Unexported fields are ignored.
type StructMapping struct {
	// Type is the struct type.
	Type reflect.Type
	// Fields are the mapped fields in declaration order.
	Fields []MappedField
}

// MappedField is one struct field of a StructMapping.
type MappedField struct {
	// Index is the field's index in the struct.
	Index int
	// GoName is the Go field name.
	GoName string
	// Column is the column name the field wants (tag or Go name).
	Column string
	// Tagged reports whether Column came from a tag (tags match exactly only).
	Tagged bool
	// Type is the field's Go type.
	Type reflect.Type
}

var mappings sync.Map // reflect.Type -> *StructMapping

// MapStruct returns the mapping of struct type t (a pointer to a struct is accepted).
func MapStruct(t reflect.Type) (*StructMapping, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("iceberg: map struct: %w: %v is not a struct type", ErrUnsupportedType, t)
	}
	if v, ok := mappings.Load(t); ok {
		return v.(*StructMapping), nil
	}
	m := &StructMapping{Type: t}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		mf := MappedField{Index: i, GoName: f.Name, Column: f.Name, Type: f.Type}
		if tag, ok := f.Tag.Lookup("iceberg"); ok {
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if name != "" {
				mf.Column, mf.Tagged = name, true
			}
		} else if tag, ok := f.Tag.Lookup("beam"); ok {
			name, _, _ := strings.Cut(tag, ",")
			if name != "" && name != "-" {
				mf.Column, mf.Tagged = name, true
			}
		}
		m.Fields = append(m.Fields, mf)
	}
	mappings.Store(t, m)
	return m, nil
}

// Match returns, for each mapped field, the index of its column in columns, or -1 when
// no column matches. An exact match wins over a case-insensitive one.
func (m *StructMapping) Match(columns []string) []int {
	out := make([]int, len(m.Fields))
	for k, f := range m.Fields {
		out[k] = slices.Index(columns, f.Column)
		if out[k] < 0 && !f.Tagged {
			out[k] = slices.IndexFunc(columns, func(c string) bool { return strings.EqualFold(c, f.Column) })
		}
	}
	return out
}

// matchAll is Match that fails when a field has no column.
func (m *StructMapping) matchAll(columns []string) ([]int, error) {
	idx := m.Match(columns)
	for k, j := range idx {
		if j < 0 {
			f := m.Fields[k]
			return nil, fmt.Errorf("%w: field %s.%s wants column %q, not in %v", ErrUnknownColumn, m.Type, f.GoName, f.Column, columns)
		}
	}
	return idx, nil
}

// structValue returns the value v (a struct, or a pointer to one) points to; a nil
// pointer is an error.
func structValue(v any) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return rv, fmt.Errorf("iceberg: struct values: %w: nil %T", ErrTypeMismatch, v)
		}
		rv = rv.Elem()
	}
	return rv, nil
}

// StructValues converts struct values of one type to row values in the column order of
// an Iceberg schema, for the write path.
type StructValues struct {
	mapping *StructMapping
	schema  *ibg.Schema
	fields  []ibg.NestedField
	cols    []int // cols[k]: schema column of mapped field k
	convs   []toValueFn
	rows    *Schema // Schema of the rows Row returns

	// flat, when every mapped field is one (see flatField), lets AppendValues read
	// the fields of a struct whose memory it can address (ptrType, valType) without
	// reflection, boxing them into two slabs per row; words and strs are the slabs'
	// lengths.
	flat        []flatField
	words, strs int
	// ptrType is the runtime type word of *T; valType that of T when an interface
	// holds a T by its address (nil when T is pointer-shaped).
	ptrType, valType unsafe.Pointer
}

// flatField is a mapped field of a bool, number or string type (or a pointer to
// one, nil being null) that is not a value type (isValueType): AppendValues boxes
// it as the unnamed Go type compileToValue gives it.
type flatField struct {
	off  uintptr        // in the struct
	typ  unsafe.Pointer // runtime type word of the boxed value
	kind reflect.Kind
	ptr  bool
}

// flatFieldOf returns the flatField of struct field f, false when it is not one.
func flatFieldOf(f reflect.StructField) (flatField, bool) {
	t, ptr := f.Type, false
	if t.Kind() == reflect.Pointer {
		t, ptr = t.Elem(), true
	}
	if isValueType(t) {
		return flatField{}, false
	}
	var typ unsafe.Pointer
	switch t.Kind() {
	case reflect.Bool:
		typ = typeWord[bool]()
	case reflect.Int8:
		typ = typeWord[int8]()
	case reflect.Int16:
		typ = typeWord[int16]()
	case reflect.Int32:
		typ = typeWord[int32]()
	case reflect.Int:
		typ = typeWord[int]()
	case reflect.Int64:
		typ = typeWord[int64]()
	case reflect.Uint8:
		typ = typeWord[uint8]()
	case reflect.Uint16:
		typ = typeWord[uint16]()
	case reflect.Uint32:
		typ = typeWord[uint32]()
	case reflect.Uint, reflect.Uint64:
		typ = typeWord[uint64]()
	case reflect.Float32:
		typ = typeWord[float32]()
	case reflect.Float64:
		typ = typeWord[float64]()
	case reflect.String:
		typ = typeString
	default:
		return flatField{}, false
	}
	return flatField{off: f.Offset, typ: typ, kind: t.Kind(), ptr: ptr}, true
}

// initFlat sets up the flat path when every mapped field is a flatField.
func (sv *StructValues) initFlat() {
	t := sv.mapping.Type
	flat := make([]flatField, len(sv.mapping.Fields))
	words, strs := 0, 0
	for k, mf := range sv.mapping.Fields {
		f, ok := flatFieldOf(t.Field(mf.Index))
		if !ok {
			return
		}
		flat[k] = f
		if f.kind == reflect.String {
			strs++
		} else {
			words++
		}
	}
	sv.flat, sv.words, sv.strs = flat, words, strs
	sv.ptrType = typeWordOf(reflect.PointerTo(t))
	// A T in an interface points to its value unless T is pointer-shaped (a struct
	// of one pointer field, say), whose zero value is then a nil data word.
	if z := reflect.Zero(t).Interface(); (*eface)(unsafe.Pointer(&z)).data != nil {
		sv.valType = typeWordOf(t)
	}
}

// typeWordOf returns the runtime type word of t.
func typeWordOf(t reflect.Type) unsafe.Pointer {
	z := reflect.Zero(t).Interface()
	return (*eface)(unsafe.Pointer(&z)).typ
}

// appendFlat appends the values of the struct at p (see flat).
func (sv *StructValues) appendFlat(dst []any, p unsafe.Pointer) []any {
	start := len(dst)
	for range sv.fields {
		dst = append(dst, nil)
	}
	var words []uint64
	var strs []string
	if sv.words > 0 {
		words = make([]uint64, sv.words)
	}
	if sv.strs > 0 {
		strs = make([]string, sv.strs)
	}
	w, j := 0, 0
	for k, f := range sv.flat {
		fp := unsafe.Add(p, f.off)
		if f.ptr {
			if fp = *(*unsafe.Pointer)(fp); fp == nil {
				continue
			}
		}
		var slot unsafe.Pointer
		if f.kind == reflect.String {
			strs[j] = *(*string)(fp)
			slot = unsafe.Pointer(&strs[j])
			j++
		} else {
			slot = unsafe.Pointer(&words[w])
			w++
			switch f.kind {
			case reflect.Bool, reflect.Int8, reflect.Uint8:
				*(*uint8)(slot) = *(*uint8)(fp)
			case reflect.Int16, reflect.Uint16:
				*(*uint16)(slot) = *(*uint16)(fp)
			case reflect.Int32, reflect.Uint32, reflect.Float32:
				*(*uint32)(slot) = *(*uint32)(fp)
			case reflect.Int:
				*(*int)(slot) = *(*int)(fp)
			case reflect.Uint:
				*(*uint64)(slot) = uint64(*(*uint)(fp))
			default: // Int64, Uint64, Float64
				*(*uint64)(slot) = *(*uint64)(fp)
			}
		}
		dst[start+sv.cols[k]] = boxAt(f.typ, slot)
	}
	return dst
}

type toValueFn func(reflect.Value) (any, error)

// NewStructValues returns the converter of struct type t for schema sc. Every mapped
// field must match a column (else an error wrapping ErrUnknownColumn names the field);
// columns without a field are null.
func NewStructValues(t reflect.Type, sc *ibg.Schema) (*StructValues, error) {
	m, err := MapStruct(t)
	if err != nil {
		return nil, err
	}
	fs := sc.Fields()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	cols, err := m.matchAll(names)
	if err != nil {
		return nil, fmt.Errorf("iceberg: struct values: %w", err)
	}
	sv := &StructValues{mapping: m, schema: sc, fields: fs, cols: cols, convs: make([]toValueFn, len(cols)), rows: SchemaOf(sc)}
	for k, f := range m.Fields {
		if sv.convs[k], err = compileToValue(f.Type, 0); err != nil {
			return nil, fmt.Errorf("iceberg: struct values: %w", inColumn(names[cols[k]], err))
		}
	}
	sv.initFlat()
	return sv, nil
}

// Values returns v's values (v is the struct or a pointer to it) converted to row value
// types in the schema's column order, validated against the column types.
func (sv *StructValues) Values(v any) ([]any, error) {
	vals, err := sv.AppendValues(nil, v)
	if err != nil {
		return nil, err
	}
	for i, f := range sv.fields {
		if vals[i] == nil {
			if f.Required {
				return nil, fmt.Errorf("iceberg: struct values: %w", inColumn(f.Name, ErrRequiredNull))
			}
			continue
		}
		if vals[i], err = Normalize(vals[i], f.Type); err != nil {
			return nil, fmt.Errorf("iceberg: struct values: %w", inColumn(f.Name, err))
		}
	}
	return vals, nil
}

// Row returns v (the struct or a pointer to it) as a Row of the schema's columns, with
// the values Values returns. Rows of one StructValues share their Schema.
func (sv *StructValues) Row(v any) (Row, error) {
	vals, err := sv.Values(v)
	if err != nil {
		return Row{}, err
	}
	return Row{schema: sv.rows, values: vals}, nil
}

// AppendValues appends v's raw values in schema column order to dst, without
// validating them against the column types (BatchBuilder does that).
func (sv *StructValues) AppendValues(dst []any, v any) ([]any, error) {
	if sv.flat != nil {
		if e := (*eface)(unsafe.Pointer(&v)); e.typ == sv.ptrType && e.data != nil || e.typ == sv.valType && e.typ != nil {
			return sv.appendFlat(dst, e.data), nil
		}
	}
	rv, err := structValue(v)
	if err != nil {
		return dst, err
	}
	if rv.Type() != sv.mapping.Type {
		return dst, fmt.Errorf("iceberg: struct values: %w: %T, want %s", ErrTypeMismatch, v, sv.mapping.Type)
	}
	start := len(dst)
	for range sv.fields {
		dst = append(dst, nil)
	}
	for k, f := range sv.mapping.Fields {
		x, err := sv.convs[k](rv.Field(f.Index))
		if err != nil {
			return dst[:start], fmt.Errorf("iceberg: struct values: %w", inColumn(sv.fields[sv.cols[k]].Name, err))
		}
		dst[start+sv.cols[k]] = x
	}
	return dst, nil
}

// RowValues returns r's values in the column order of sc, matched by name and
// validated (see Normalize). Columns r lacks are null; a column sc lacks is an error
// wrapping ErrUnknownColumn. For many rows of one schema use SchemaValues.
func RowValues(r Row, sc *ibg.Schema) ([]any, error) {
	return NewSchemaValues(sc).AppendRow(nil, r)
}

// SchemaValues takes rows to the values of one Iceberg schema, as RowValues does,
// with the schema's fields read once (ibg.Schema.Fields copies every field and
// nested type on each call, which per row cost more than the rest of the
// conversion) and whether a row schema has the columns in order remembered for the
// last one seen. A SchemaValues is not safe for concurrent use.
type SchemaValues struct {
	sc      *ibg.Schema
	fields  []ibg.NestedField
	last    *Schema // row schema of the last row
	inOrder bool    // last has the schema's columns in order
}

// NewSchemaValues returns the converter of rows to the values of sc.
func NewSchemaValues(sc *ibg.Schema) *SchemaValues {
	return &SchemaValues{sc: sc, fields: sc.Fields()}
}

// AppendRow appends r's values in the column order of the schema to dst (see
// RowValues) and returns the extended slice; on error dst is returned unextended.
func (sv *SchemaValues) AppendRow(dst []any, r Row) ([]any, error) {
	fs := sv.fields
	// The common case, rows made for this schema, takes the values in order without
	// lookups by name.
	if r.schema == nil || r.schema != sv.last {
		sv.last = r.schema
		sv.inOrder = len(r.Names()) == len(fs) && sameNames(r.Names(), fs)
	}
	if !sv.inOrder {
		for _, n := range r.Names() {
			if _, ok := sv.sc.FindFieldByName(n); !ok {
				return dst, fmt.Errorf("iceberg: row values: %w", inColumn(n, fmt.Errorf("%w: not in schema", ErrUnknownColumn)))
			}
		}
	}
	start := len(dst)
	vals := r.vals()
	for i, f := range fs {
		var x any
		if sv.inOrder {
			x = vals[i]
		} else {
			x, _ = r.Get(f.Name)
		}
		if x == nil && f.Required {
			return dst[:start], fmt.Errorf("iceberg: row values: %w", inColumn(f.Name, ErrRequiredNull))
		}
		v, err := Normalize(x, f.Type)
		if err != nil {
			return dst[:start], fmt.Errorf("iceberg: row values: %w", inColumn(f.Name, err))
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// sameNames reports whether names are the names of fs, in order.
func sameNames(names []string, fs []ibg.NestedField) bool {
	for i, f := range fs {
		if names[i] != f.Name {
			return false
		}
	}
	return true
}

var (
	timeType    = reflect.TypeOf(time.Time{})
	uuidType    = reflect.TypeOf(uuid.UUID{})
	bytesType   = reflect.TypeOf([]byte(nil))
	rowType     = reflect.TypeOf(Row{})
	entriesType = reflect.TypeOf([]MapEntry(nil))
	variantType = reflect.TypeOf(Variant{})
	anyType     = reflect.TypeOf((*any)(nil)).Elem()
)

// isValueType reports whether t is used as is (a Row value type or time.Time).
func isValueType(t reflect.Type) bool {
	switch t {
	case timeType, uuidType, bytesType, rowType, entriesType, variantType,
		reflect.TypeOf(ibg.Decimal{}), reflect.TypeOf(ibg.Date(0)), reflect.TypeOf(ibg.Time(0)),
		reflect.TypeOf(ibg.Timestamp(0)), reflect.TypeOf(ibg.TimestampNano(0)), reflect.TypeOf([16]byte{}):
		return true
	}
	return false
}

// compileToValue compiles the conversion of a Go value of type t to a raw row value:
// pointers are dereferenced (nil is null), basic kinds become their unnamed Go type,
// slices []any, maps []MapEntry sorted by key, structs Rows named by their mapping.
func compileToValue(t reflect.Type, depth int) (toValueFn, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: %s nests too deeply", ErrUnsupportedType, t)
	}
	if isValueType(t) {
		if t.Kind() == reflect.Slice { // []byte, []MapEntry: nil is null
			return func(v reflect.Value) (any, error) {
				if v.IsNil() {
					return nil, nil
				}
				return v.Interface(), nil
			}, nil
		}
		if t == variantType { // the zero Variant is null
			return func(v reflect.Value) (any, error) {
				if x := v.Interface().(Variant); !x.IsZero() {
					return x, nil
				}
				return nil, nil
			}, nil
		}
		return func(v reflect.Value) (any, error) { return v.Interface(), nil }, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem, err := compileToValue(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (any, error) {
			if v.IsNil() {
				return nil, nil
			}
			return elem(v.Elem())
		}, nil
	case reflect.Interface:
		return func(v reflect.Value) (any, error) {
			if v.IsNil() {
				return nil, nil
			}
			return v.Interface(), nil
		}, nil
	case reflect.Bool:
		return func(v reflect.Value) (any, error) { return v.Bool(), nil }, nil
	case reflect.Int8:
		return func(v reflect.Value) (any, error) { return int8(v.Int()), nil }, nil
	case reflect.Int16:
		return func(v reflect.Value) (any, error) { return int16(v.Int()), nil }, nil
	case reflect.Int32:
		return func(v reflect.Value) (any, error) { return int32(v.Int()), nil }, nil
	case reflect.Int:
		return func(v reflect.Value) (any, error) { return int(v.Int()), nil }, nil
	case reflect.Int64:
		return func(v reflect.Value) (any, error) { return v.Int(), nil }, nil
	case reflect.Uint8:
		return func(v reflect.Value) (any, error) { return uint8(v.Uint()), nil }, nil
	case reflect.Uint16:
		return func(v reflect.Value) (any, error) { return uint16(v.Uint()), nil }, nil
	case reflect.Uint32:
		return func(v reflect.Value) (any, error) { return uint32(v.Uint()), nil }, nil
	case reflect.Uint, reflect.Uint64:
		return func(v reflect.Value) (any, error) { return v.Uint(), nil }, nil
	case reflect.Float32:
		return func(v reflect.Value) (any, error) { return float32(v.Float()), nil }, nil
	case reflect.Float64:
		return func(v reflect.Value) (any, error) { return v.Float(), nil }, nil
	case reflect.String:
		return func(v reflect.Value) (any, error) { return v.String(), nil }, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return func(v reflect.Value) (any, error) {
				if t.Kind() == reflect.Slice && v.IsNil() {
					return nil, nil
				}
				b := make([]byte, v.Len())
				reflect.Copy(reflect.ValueOf(b), v)
				return b, nil
			}, nil
		}
		elem, err := compileToValue(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (any, error) {
			if t.Kind() == reflect.Slice && v.IsNil() {
				return nil, nil
			}
			out := make([]any, v.Len())
			for i := range out {
				x, err := elem(v.Index(i))
				if err != nil {
					return nil, inColumn("element", err)
				}
				out[i] = x
			}
			return out, nil
		}, nil
	case reflect.Map:
		kc, err := compileToValue(t.Key(), depth+1)
		if err != nil {
			return nil, err
		}
		vc, err := compileToValue(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (any, error) {
			if v.IsNil() {
				return nil, nil
			}
			out := make([]MapEntry, 0, v.Len())
			it := v.MapRange()
			for it.Next() {
				k, err := kc(it.Key())
				if err != nil {
					return nil, inColumn("key", err)
				}
				x, err := vc(it.Value())
				if err != nil {
					return nil, inColumn("value", err)
				}
				out = append(out, MapEntry{Key: k, Value: x})
			}
			slices.SortFunc(out, func(a, b MapEntry) int { return compareKeys(a.Key, b.Key) })
			return out, nil
		}, nil
	case reflect.Struct:
		m, err := MapStruct(t)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(m.Fields))
		convs := make([]toValueFn, len(m.Fields))
		for k, f := range m.Fields {
			names[k] = f.Column
			if convs[k], err = compileToValue(f.Type, depth+1); err != nil {
				return nil, inColumn(f.Column, err)
			}
		}
		s := NewSchema(names, nil)
		return func(v reflect.Value) (any, error) {
			vals := make([]any, len(convs))
			for k, f := range m.Fields {
				x, err := convs[k](v.Field(f.Index))
				if err != nil {
					return nil, inColumn(names[k], err)
				}
				vals[k] = x
			}
			return Row{schema: s, values: vals}, nil
		}, nil
	}
	return nil, fmt.Errorf("%w: Go type %s", ErrUnsupportedType, t)
}

// compareKeys orders map keys of one Go type for a deterministic map encoding.
func compareKeys(a, b any) int {
	if x, ok := toInt64(a); ok {
		y, _ := toInt64(b)
		return cmp.Compare(x, y)
	}
	switch x := a.(type) {
	case string:
		return cmp.Compare(x, b.(string))
	case int64:
		return cmp.Compare(x, b.(int64))
	case int32:
		return cmp.Compare(x, b.(int32))
	case int:
		return cmp.Compare(x, b.(int))
	case uint64:
		return cmp.Compare(x, b.(uint64))
	case float64:
		return cmp.Compare(x, b.(float64))
	case float32:
		return cmp.Compare(x, b.(float32))
	case bool:
		return cmp.Compare(btoi(x), btoi(b.(bool)))
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
