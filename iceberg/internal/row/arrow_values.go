package row

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// getFn returns the row value at index i of the array it was bound to (nil for null).
type getFn func(i int) any

// bindFn binds a compiled conversion to one array of a batch.
type bindFn func(arr arrow.Array) getFn

// storage unwraps extension arrays other than UUID.
func storage(arr arrow.Array) arrow.Array {
	if e, ok := arr.(array.ExtensionArray); ok {
		if _, isUUID := arr.(*extensions.UUIDArray); !isUUID {
			return e.Storage()
		}
	}
	return arr
}

func badArrow(dt arrow.DataType, t ibg.Type) error {
	return fmt.Errorf("%w: arrow type %s for %s", ErrTypeMismatch, dt, t)
}

// compileGetter compiles the conversion of arrays of type dt to row values of Iceberg
// type t (see Row for the Go types).
func compileGetter(dt arrow.DataType, t ibg.Type) (bindFn, error) {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		inner, err := compileGetter(d.ValueType, t)
		if err != nil {
			return nil, err
		}
		return func(arr arrow.Array) getFn {
			da := arr.(*array.Dictionary)
			get := inner(da.Dictionary())
			cache := make([]any, da.Dictionary().Len())
			done := make([]bool, len(cache))
			return func(i int) any {
				if da.IsNull(i) {
					return nil
				}
				k := da.GetValueIndex(i)
				if !done[k] {
					cache[k], done[k] = get(k), true
				}
				return cache[k]
			}
		}, nil
	}
	if _, ok := t.(ibg.VariantType); ok {
		return variantGetter(dt, t)
	}
	if e, ok := dt.(arrow.ExtensionType); ok {
		if _, isUUID := dt.(*extensions.UUIDType); !isUUID {
			inner, err := compileGetter(e.StorageType(), t)
			if err != nil {
				return nil, err
			}
			return func(arr arrow.Array) getFn { return inner(storage(arr)) }, nil
		}
	}
	prim := func(f func(arr arrow.Array) getFn) (bindFn, error) {
		return func(arr arrow.Array) getFn {
			g := f(arr)
			return func(i int) any {
				if arr.IsNull(i) {
					return nil
				}
				return g(i)
			}
		}, nil
	}
	switch t := t.(type) {
	case ibg.BooleanType:
		if dt.ID() == arrow.BOOL {
			return prim(func(a arrow.Array) getFn { x := a.(*array.Boolean); return func(i int) any { return x.Value(i) } })
		}
	case ibg.Int32Type:
		switch dt.ID() {
		case arrow.INT32:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Int32); return func(i int) any { return x.Value(i) } })
		case arrow.INT16:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Int16); return func(i int) any { return int32(x.Value(i)) } })
		case arrow.INT8:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Int8); return func(i int) any { return int32(x.Value(i)) } })
		case arrow.UINT16:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Uint16); return func(i int) any { return int32(x.Value(i)) } })
		case arrow.UINT8:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Uint8); return func(i int) any { return int32(x.Value(i)) } })
		}
	case ibg.Int64Type:
		switch dt.ID() {
		case arrow.INT64:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Int64); return func(i int) any { return x.Value(i) } })
		case arrow.INT32:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Int32); return func(i int) any { return int64(x.Value(i)) } })
		case arrow.UINT32:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Uint32); return func(i int) any { return int64(x.Value(i)) } })
		}
	case ibg.Float32Type:
		switch dt.ID() {
		case arrow.FLOAT32:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Float32); return func(i int) any { return x.Value(i) } })
		case arrow.FLOAT16:
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Float16)
				return func(i int) any { return x.Value(i).Float32() }
			})
		}
	case ibg.Float64Type:
		switch dt.ID() {
		case arrow.FLOAT64:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Float64); return func(i int) any { return x.Value(i) } })
		case arrow.FLOAT32:
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Float32)
				return func(i int) any { return float64(x.Value(i)) }
			})
		}
	case ibg.DecimalType:
		if d, ok := dt.(*arrow.Decimal128Type); ok && int(d.Scale) == t.Scale() {
			sc := t.Scale()
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Decimal128)
				return func(i int) any { return ibg.Decimal{Val: x.Value(i), Scale: sc} }
			})
		}
	case ibg.DateType:
		if dt.ID() == arrow.DATE32 {
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Date32)
				return func(i int) any { return ibg.Date(x.Value(i)) }
			})
		}
	case ibg.TimeType:
		switch d := dt.(type) {
		case *arrow.Time64Type:
			if d.Unit == arrow.Microsecond {
				return prim(func(a arrow.Array) getFn {
					x := a.(*array.Time64)
					return func(i int) any { return ibg.Time(x.Value(i)) }
				})
			}
		case *arrow.Time32Type:
			mul := int64(1_000_000)
			if d.Unit == arrow.Millisecond {
				mul = 1000
			}
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Time32)
				return func(i int) any { return ibg.Time(int64(x.Value(i)) * mul) }
			})
		}
	case ibg.TimestampType, ibg.TimestampTzType:
		if d, ok := dt.(*arrow.TimestampType); ok {
			conv := tsToMicros(d.Unit)
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Timestamp)
				return func(i int) any { return ibg.Timestamp(conv(int64(x.Value(i)))) }
			})
		}
	case ibg.TimestampNsType, ibg.TimestampTzNsType:
		if d, ok := dt.(*arrow.TimestampType); ok {
			mul := int64(d.Unit.Multiplier())
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.Timestamp)
				return func(i int) any { return ibg.TimestampNano(int64(x.Value(i)) * mul) }
			})
		}
	case ibg.StringType:
		switch dt.ID() {
		case arrow.STRING:
			return prim(func(a arrow.Array) getFn { x := a.(*array.String); return func(i int) any { return x.Value(i) } })
		case arrow.LARGE_STRING:
			return prim(func(a arrow.Array) getFn { x := a.(*array.LargeString); return func(i int) any { return x.Value(i) } })
		case arrow.STRING_VIEW:
			return prim(func(a arrow.Array) getFn { x := a.(*array.StringView); return func(i int) any { return x.Value(i) } })
		}
	case ibg.UUIDType:
		if _, ok := dt.(*extensions.UUIDType); ok {
			return prim(func(a arrow.Array) getFn {
				x := a.(*extensions.UUIDArray)
				return func(i int) any { return x.Value(i) }
			})
		}
		if d, ok := dt.(*arrow.FixedSizeBinaryType); ok && d.ByteWidth == 16 {
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.FixedSizeBinary)
				return func(i int) any { return uuid.UUID(x.Value(i)) }
			})
		}
	case ibg.FixedType:
		if d, ok := dt.(*arrow.FixedSizeBinaryType); ok && d.ByteWidth == t.Len() {
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.FixedSizeBinary)
				return func(i int) any { return clone(x.Value(i)) }
			})
		}
	case ibg.BinaryType:
		switch dt.ID() {
		case arrow.BINARY:
			return prim(func(a arrow.Array) getFn { x := a.(*array.Binary); return func(i int) any { return clone(x.Value(i)) } })
		case arrow.LARGE_BINARY:
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.LargeBinary)
				return func(i int) any { return clone(x.Value(i)) }
			})
		case arrow.BINARY_VIEW:
			return prim(func(a arrow.Array) getFn {
				x := a.(*array.BinaryView)
				return func(i int) any { return clone(x.Value(i)) }
			})
		}
	case ibg.UnknownType:
		return func(arrow.Array) getFn { return func(int) any { return nil } }, nil
	case *ibg.ListType:
		if _, isMap := dt.(*arrow.MapType); isMap {
			break
		}
		if l, ok := dt.(arrow.ListLikeType); ok {
			elem, err := compileGetter(l.Elem(), t.Element)
			if err != nil {
				return nil, inColumn("element", err)
			}
			return func(arr arrow.Array) getFn {
				x := arr.(array.ListLike)
				get := elem(x.ListValues())
				return func(i int) any {
					if x.IsNull(i) {
						return nil
					}
					s, e := x.ValueOffsets(i)
					out := make([]any, e-s)
					for j := range out {
						out[j] = get(int(s) + j)
					}
					return out
				}
			}, nil
		}
	case *ibg.MapType:
		if m, ok := dt.(*arrow.MapType); ok {
			kg, err := compileGetter(m.KeyType(), t.KeyType)
			if err != nil {
				return nil, inColumn("key", err)
			}
			vg, err := compileGetter(m.ItemType(), t.ValueType)
			if err != nil {
				return nil, inColumn("value", err)
			}
			return func(arr arrow.Array) getFn {
				x := arr.(*array.Map)
				keys, vals := kg(x.Keys()), vg(x.Items())
				return func(i int) any {
					if x.IsNull(i) {
						return nil
					}
					s, e := x.ValueOffsets(i)
					out := make([]MapEntry, e-s)
					for j := range out {
						out[j] = MapEntry{Key: keys(int(s) + j), Value: vals(int(s) + j)}
					}
					return out
				}
			}, nil
		}
	case *ibg.StructType:
		if st, ok := dt.(*arrow.StructType); ok {
			s := structSchema(t)
			gets := make([]bindFn, len(t.FieldList))
			idx := make([]int, len(t.FieldList))
			for k, f := range t.FieldList {
				j, ok := st.FieldIdx(f.Name)
				if !ok {
					return nil, inColumn(f.Name, fmt.Errorf("%w: not in arrow struct %s", ErrUnknownColumn, st))
				}
				g, err := compileGetter(st.Field(j).Type, f.Type)
				if err != nil {
					return nil, inColumn(f.Name, err)
				}
				gets[k], idx[k] = g, j
			}
			return func(arr arrow.Array) getFn {
				x := arr.(*array.Struct)
				fs := make([]getFn, len(gets))
				for k, g := range gets {
					fs[k] = g(x.Field(idx[k]))
				}
				return func(i int) any {
					if x.IsNull(i) {
						return nil
					}
					vals := make([]any, len(fs))
					for k, f := range fs {
						vals[k] = f(i)
					}
					return Row{schema: s, values: vals}
				}
			}, nil
		}
	}
	return nil, badArrow(dt, t)
}

// variantGetter reads variant values from the variant extension type (shredded or
// not). A variant null stays a variant null (only a null struct is a null value), and
// values are copied out of the batch. A value whose encoding cannot be read panics
// with an error naming the record: a getter has no error result, and such a batch is
// a corrupt data file.
func variantGetter(dt arrow.DataType, t ibg.Type) (bindFn, error) {
	if _, ok := dt.(*extensions.VariantType); !ok {
		return nil, badArrow(dt, t)
	}
	return func(arr arrow.Array) getFn {
		x := arr.(*extensions.VariantArray)
		st := x.Storage()
		return func(i int) any {
			if st.IsNull(i) {
				return nil
			}
			v, err := x.Value(i)
			if err != nil {
				panic(fmt.Errorf("iceberg: read variant of record %d: %w: %w", i, ErrCorrupt, err))
			}
			return Variant{v: v.Clone()}
		}
	}, nil
}

// tsToMicros converts a timestamp of unit u to microseconds (floor for nanoseconds, as
// iceberg-go does when it downcasts).
func tsToMicros(u arrow.TimeUnit) func(int64) int64 {
	switch u {
	case arrow.Second:
		return func(v int64) int64 { return v * 1_000_000 }
	case arrow.Millisecond:
		return func(v int64) int64 { return v * 1000 }
	case arrow.Nanosecond:
		return func(v int64) int64 {
			q := v / 1000
			if v%1000 < 0 {
				q--
			}
			return q
		}
	}
	return func(v int64) int64 { return v }
}
