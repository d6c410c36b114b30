package row

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// StructReader fills values of a struct type from Arrow record batches of one schema.
// Columns without a struct field are ignored; a mapped field without a column is an
// error at construction. Build it once per (type, schema); it holds no mutable state.
type StructReader struct {
	typ    reflect.Type
	arrow  *arrow.Schema
	fields []structCol
}

type structCol struct {
	index  int      // struct field index
	offset uintptr  // struct field offset
	col    int      // arrow column
	get    bindFn   // generic path
	set    assignFn // generic path
	fast   fastSet  // nil: generic path
	name   string
}

// fastSet fills one field of every row, column at a time. base points at the field in
// the first struct of the destination, size is the struct size.
type fastSet func(arr arrow.Array, base unsafe.Pointer, size uintptr, n int)

// assignFn stores row value v into dst (a settable value of the field's type).
type assignFn func(dst reflect.Value, v any) error

// NewStructReader returns a reader of batches of Arrow schema as into values of struct
// type t. sc, when not nil, gives the exact Iceberg column types (see NewArrowReader).
func NewStructReader(t reflect.Type, as *arrow.Schema, sc *ibg.Schema) (*StructReader, error) {
	m, err := MapStruct(t)
	if err != nil {
		return nil, err
	}
	names := make([]string, as.NumFields())
	for i, f := range as.Fields() {
		names[i] = f.Name
	}
	cols, err := m.matchAll(names)
	if err != nil {
		return nil, fmt.Errorf("iceberg: read structs: %w", err)
	}
	sr := &StructReader{typ: m.Type, arrow: as}
	for k, f := range m.Fields {
		af := as.Field(cols[k])
		it, err := columnType(af, sc)
		if err != nil {
			return nil, fmt.Errorf("iceberg: read structs: %w", inColumn(af.Name, err))
		}
		get, err := compileGetter(af.Type, it)
		if err != nil {
			return nil, fmt.Errorf("iceberg: read structs: %w", inColumn(af.Name, err))
		}
		set, err := compileAssign(f.Type, 0)
		if err != nil {
			return nil, fmt.Errorf("iceberg: read structs: field %s: %w", f.GoName, err)
		}
		sr.fields = append(sr.fields, structCol{
			index: f.Index, offset: m.Type.Field(f.Index).Offset, col: cols[k],
			get: get, set: set, fast: fastStructSet(af.Type, it, f.Type), name: af.Name,
		})
	}
	return sr, nil
}

// AppendValues appends one struct value (boxed in an any, of the reader's type) per
// record of rec to dst, as a Beam emitter of the struct type wants them.
func (r *StructReader) AppendValues(rec arrow.RecordBatch, dst []any) ([]any, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return dst, nil
	}
	slice := reflect.MakeSlice(reflect.SliceOf(r.typ), n, n)
	if err := r.fill(rec, slice, slice.Index(0).Addr().UnsafePointer()); err != nil {
		return dst, err
	}
	for i := range n {
		dst = append(dst, slice.Index(i).Interface())
	}
	return dst, nil
}

func (r *StructReader) fill(rec arrow.RecordBatch, slice reflect.Value, base unsafe.Pointer) error {
	if rec.Schema() != r.arrow && !rec.Schema().Equal(r.arrow) {
		return fmt.Errorf("iceberg: read structs: %w: batch schema differs from the reader's", ErrTypeMismatch)
	}
	n := slice.Len()
	size := r.typ.Size()
	for _, f := range r.fields {
		arr := rec.Column(f.col)
		if f.fast != nil {
			f.fast(arr, unsafe.Add(base, f.offset), size, n)
			continue
		}
		get := f.get(arr)
		for i := range n {
			if err := f.set(slice.Index(i).Field(f.index), get(i)); err != nil {
				return fmt.Errorf("iceberg: read structs: row %d: %w", i, inColumn(f.name, err))
			}
		}
	}
	return nil
}

// copyColumn is the fastSet of a column whose values (from values) are stored in the
// struct field as they are.
func copyColumn[T int32 | int64 | float32 | float64](values func(arrow.Array) []T) fastSet {
	return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
		vals := values(a)
		for i := range n {
			if a.IsValid(i) {
				*(*T)(unsafe.Add(base, uintptr(i)*size)) = vals[i]
			}
		}
	}
}

// fastStructSet returns a column-at-a-time setter for flat columns of matching Go kind
// with no conversion (int32, int64, float32, float64, bool, string), or nil.
func fastStructSet(dt arrow.DataType, it ibg.Type, ft reflect.Type) fastSet {
	at := func(base unsafe.Pointer, size uintptr, i int) unsafe.Pointer {
		return unsafe.Add(base, uintptr(i)*size)
	}
	switch {
	case dt.ID() == arrow.INT64 && ft == reflect.TypeFor[int64]() && it.Equals(ibg.PrimitiveTypes.Int64):
		return copyColumn(func(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() })
	case dt.ID() == arrow.INT32 && ft == reflect.TypeFor[int32]() && it.Equals(ibg.PrimitiveTypes.Int32):
		return copyColumn(func(a arrow.Array) []int32 { return a.(*array.Int32).Int32Values() })
	case dt.ID() == arrow.FLOAT64 && ft == reflect.TypeFor[float64]() && it.Equals(ibg.PrimitiveTypes.Float64):
		return copyColumn(func(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() })
	case dt.ID() == arrow.FLOAT32 && ft == reflect.TypeFor[float32]() && it.Equals(ibg.PrimitiveTypes.Float32):
		return copyColumn(func(a arrow.Array) []float32 { return a.(*array.Float32).Float32Values() })
	case dt.ID() == arrow.TIMESTAMP && ft == timeType:
		unit := dt.(*arrow.TimestampType).Unit
		return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
			vals := a.(*array.Timestamp).TimestampValues()
			for i := range n {
				if a.IsValid(i) {
					var tm time.Time
					if v := int64(vals[i]); unit == arrow.Nanosecond {
						tm = time.Unix(0, v).UTC()
					} else {
						tm = time.UnixMicro(tsToMicros(unit)(v)).UTC()
					}
					*(*time.Time)(at(base, size, i)) = tm
				}
			}
		}
	case dt.ID() == arrow.DATE32 && ft == timeType:
		return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
			vals := a.(*array.Date32).Date32Values()
			for i := range n {
				if a.IsValid(i) {
					*(*time.Time)(at(base, size, i)) = ibg.Date(vals[i]).ToTime()
				}
			}
		}
	case dt.ID() == arrow.DECIMAL128 && ft == reflect.TypeFor[ibg.Decimal]():
		dec, ok := it.(ibg.DecimalType)
		if !ok || int(dt.(*arrow.Decimal128Type).Scale) != dec.Scale() {
			return nil
		}
		return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
			vals := a.(*array.Decimal128).Values()
			for i := range n {
				if a.IsValid(i) {
					*(*ibg.Decimal)(at(base, size, i)) = ibg.Decimal{Val: vals[i], Scale: dec.Scale()}
				}
			}
		}
	case dt.ID() == arrow.BOOL && ft == reflect.TypeFor[bool]():
		return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
			x := a.(*array.Boolean)
			for i := range n {
				if a.IsValid(i) {
					*(*bool)(at(base, size, i)) = x.Value(i)
				}
			}
		}
	case dt.ID() == arrow.STRING && ft == reflect.TypeFor[string]() && it.Equals(ibg.PrimitiveTypes.String):
		return func(a arrow.Array, base unsafe.Pointer, size uintptr, n int) {
			x := a.(*array.String)
			offs := x.ValueOffsets()
			data := string(x.ValueBytes())
			b0 := offs[0]
			for i := range n {
				if a.IsValid(i) {
					*(*string)(at(base, size, i)) = data[offs[i]-b0 : offs[i+1]-b0]
				}
			}
		}
	}
	return nil
}

// compileAssign compiles the store of a row value into a Go value of type t, with the
// conversions StructMapping documents (widening integers, time.Time from dates and
// timestamps, string from uuid, slices from lists, maps from map entries, structs from
// rows). A null stores the zero value.
func compileAssign(t reflect.Type, depth int) (assignFn, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: %s nests too deeply", ErrUnsupportedType, t)
	}
	wrong := func(v any) error { return fmt.Errorf("%w: %T into Go %s", ErrTypeMismatch, v, t) }
	switch t {
	case timeType:
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case ibg.Date:
				dst.Set(reflect.ValueOf(x.ToTime()))
			case ibg.Timestamp:
				dst.Set(reflect.ValueOf(x.ToTime()))
			case ibg.TimestampNano:
				dst.Set(reflect.ValueOf(x.ToTime()))
			case time.Time:
				dst.Set(reflect.ValueOf(x))
			default:
				return wrong(v)
			}
			return nil
		}, nil
	}
	if t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8 && t != uuidType {
		// [N]byte (and named byte arrays) from fixed[N]; [16]byte also from uuid.
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case []byte:
				if len(x) != t.Len() {
					return fmt.Errorf("%w: %d bytes into Go %s", ErrTypeMismatch, len(x), t)
				}
				reflect.Copy(dst, reflect.ValueOf(x))
			case uuid.UUID:
				if t.Len() != len(x) {
					return wrong(v)
				}
				reflect.Copy(dst, reflect.ValueOf(x[:]))
			default:
				return wrong(v)
			}
			return nil
		}, nil
	}
	if isValueType(t) {
		return func(dst reflect.Value, v any) error {
			if v == nil {
				dst.SetZero()
				return nil
			}
			rv := reflect.ValueOf(v)
			if rv.Type() == t {
				dst.Set(rv)
				return nil
			}
			return wrong(v)
		}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem, err := compileAssign(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(dst reflect.Value, v any) error {
			if v == nil {
				dst.SetZero()
				return nil
			}
			p := reflect.New(t.Elem())
			if err := elem(p.Elem(), v); err != nil {
				return err
			}
			dst.Set(p)
			return nil
		}, nil
	case reflect.Interface:
		return func(dst reflect.Value, v any) error {
			if v == nil {
				dst.SetZero()
				return nil
			}
			rv := reflect.ValueOf(v)
			if !rv.Type().AssignableTo(t) {
				return wrong(v)
			}
			dst.Set(rv)
			return nil
		}, nil
	case reflect.Bool:
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case bool:
				dst.SetBool(x)
			default:
				return wrong(v)
			}
			return nil
		}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(dst reflect.Value, v any) error {
			if v == nil {
				dst.SetZero()
				return nil
			}
			x, ok := toInt64(v)
			if !ok || dst.OverflowInt(x) {
				return wrong(v)
			}
			dst.SetInt(x)
			return nil
		}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(dst reflect.Value, v any) error {
			if v == nil {
				dst.SetZero()
				return nil
			}
			x, ok := toInt64(v)
			if !ok || x < 0 || dst.OverflowUint(uint64(x)) {
				return wrong(v)
			}
			dst.SetUint(uint64(x))
			return nil
		}, nil
	case reflect.Float32, reflect.Float64:
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case float32:
				dst.SetFloat(float64(x))
			case float64:
				if t.Kind() == reflect.Float32 && float64(float32(x)) != x {
					return wrong(v)
				}
				dst.SetFloat(x)
			default:
				return wrong(v)
			}
			return nil
		}, nil
	case reflect.String:
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case string:
				dst.SetString(x)
			case uuid.UUID:
				dst.SetString(x.String())
			default:
				return wrong(v)
			}
			return nil
		}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return func(dst reflect.Value, v any) error {
				switch x := v.(type) {
				case nil:
					dst.SetZero()
				case []byte:
					dst.SetBytes(x)
				case uuid.UUID:
					dst.SetBytes(x[:])
				default:
					return wrong(v)
				}
				return nil
			}, nil
		}
		elem, err := compileAssign(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case []any:
				s := reflect.MakeSlice(t, len(x), len(x))
				for i, e := range x {
					if err := elem(s.Index(i), e); err != nil {
						return inColumn("element", err)
					}
				}
				dst.Set(s)
			default:
				return wrong(v)
			}
			return nil
		}, nil
	case reflect.Map:
		ka, err := compileAssign(t.Key(), depth+1)
		if err != nil {
			return nil, err
		}
		va, err := compileAssign(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
			case []MapEntry:
				m := reflect.MakeMapWithSize(t, len(x))
				k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
				for _, me := range x {
					if err := ka(k, me.Key); err != nil {
						return inColumn("key", err)
					}
					if err := va(e, me.Value); err != nil {
						return inColumn("value", err)
					}
					m.SetMapIndex(k, e)
				}
				dst.Set(m)
			default:
				return wrong(v)
			}
			return nil
		}, nil
	case reflect.Struct:
		m, err := MapStruct(t)
		if err != nil {
			return nil, err
		}
		sets := make([]assignFn, len(m.Fields))
		for k, f := range m.Fields {
			if sets[k], err = compileAssign(f.Type, depth+1); err != nil {
				return nil, err
			}
		}
		type match struct {
			s   *Schema
			idx []int
		}
		var last atomic.Pointer[match]
		return func(dst reflect.Value, v any) error {
			switch x := v.(type) {
			case nil:
				dst.SetZero()
				return nil
			case Row:
				var idx []int
				if l := last.Load(); l != nil && l.s == x.schema && x.schema != nil {
					idx = l.idx
				} else {
					var err error
					if idx, err = m.matchAll(x.Names()); err != nil {
						return err
					}
					last.Store(&match{s: x.schema, idx: idx})
				}
				for k, f := range m.Fields {
					if err := sets[k](dst.Field(f.Index), x.Value(idx[k])); err != nil {
						return inColumn(f.Column, err)
					}
				}
				return nil
			}
			return wrong(v)
		}, nil
	}
	return nil, fmt.Errorf("%w: Go type %s", ErrUnsupportedType, t)
}
