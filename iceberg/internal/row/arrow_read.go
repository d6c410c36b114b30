package row

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
)

// ArrowReader converts Arrow record batches of one Arrow schema to rows. Build it once
// per schema with NewArrowReader; every row it returns shares one *Schema. It holds no
// mutable state, so concurrent AppendRows calls are safe.
type ArrowReader struct {
	arrowSchema *arrow.Schema
	schema      *Schema
	cols        []readCol
}

type readCol struct {
	typ  ibg.Type
	get  bindFn
	fill fillFn // nil: use get
}

// fillFn writes the values of arr for records lo..hi-1 into dst[(i-lo)*stride+off],
// column at a time. Null entries are left untouched (dst is zeroed).
type fillFn func(arr arrow.Array, dst []any, stride, off, lo, hi int)

// NewArrowReader returns a converter for batches of schema as. When sc is not nil it
// gives the exact Iceberg type of each column (matched by the PARQUET:field_id metadata
// iceberg-go writes, then by name); otherwise types are derived from the Arrow types
// (timestamp with a time zone is timestamptz, the UUID extension type is uuid, fixed-size
// binary is fixed).
func NewArrowReader(as *arrow.Schema, sc *ibg.Schema) (*ArrowReader, error) {
	fs := as.Fields()
	names := make([]string, len(fs))
	types := make([]ibg.Type, len(fs))
	cols := make([]readCol, len(fs))
	for i, f := range fs {
		names[i] = f.Name
		t, err := columnType(f, sc)
		if err != nil {
			return nil, fmt.Errorf("iceberg: read rows: %w", inColumn(f.Name, err))
		}
		get, err := compileGetter(f.Type, t)
		if err != nil {
			return nil, fmt.Errorf("iceberg: read rows: %w", inColumn(f.Name, err))
		}
		types[i] = t
		cols[i] = readCol{typ: t, get: get, fill: fastFill(f.Type, t)}
	}
	s := NewSchema(names, types)
	if _, _, err := s.state(); err != nil {
		return nil, fmt.Errorf("iceberg: read rows: %w", err)
	}
	return &ArrowReader{arrowSchema: as, schema: s, cols: cols}, nil
}

// columnType returns the Iceberg type of top-level Arrow field f.
func columnType(f arrow.Field, sc *ibg.Schema) (ibg.Type, error) {
	if sc != nil {
		if id := fieldID(f); id > 0 {
			if nf, ok := sc.FindFieldByID(id); ok {
				return nf.Type, nil
			}
		}
		if nf, ok := sc.FindFieldByName(f.Name); ok {
			return nf.Type, nil
		}
		if f.Name == ibg.RowIDColumnName || f.Name == ibg.LastUpdatedSequenceNumberColumnName {
			return ibg.PrimitiveTypes.Int64, nil // row lineage metadata: in no table schema
		}
		return nil, fmt.Errorf("%w: not in the Iceberg schema", ErrUnknownColumn)
	}
	return icebergTypeOf(f.Type)
}

// Schema returns the schema shared by the rows the reader returns.
func (c *ArrowReader) Schema() *Schema { return c.schema }

// ArrowSchema returns the Arrow schema the reader was built for.
func (c *ArrowReader) ArrowSchema() *arrow.Schema { return c.arrowSchema }

// AppendRows appends one row per record of rec to dst and returns the extended slice.
// rec must have the reader's Arrow schema (same column count and types). The rows do
// not reference rec's buffers: rec may be released afterwards.
//
// Rows are converted in blocks of readBlock records, column at a time within a block,
// so that a block's values stay in cache while every column is filled.
func (c *ArrowReader) AppendRows(rec arrow.RecordBatch, dst []Row) ([]Row, error) {
	if err := c.check(rec); err != nil {
		return dst, err
	}
	n := int(rec.NumRows())
	stride := len(c.cols)
	gets := make([]getFn, len(c.cols))
	for j, col := range c.cols {
		if col.fill == nil {
			gets[j] = col.get(rec.Column(j))
		}
	}
	dst = slices.Grow(dst, n)
	for lo := 0; lo < n; lo += readBlock {
		hi := min(lo+readBlock, n)
		flat := make([]any, (hi-lo)*stride)
		for j, col := range c.cols {
			if col.fill != nil {
				col.fill(rec.Column(j), flat, stride, j, lo, hi)
				continue
			}
			get := gets[j]
			for i := lo; i < hi; i++ {
				flat[(i-lo)*stride+j] = get(i)
			}
		}
		for i := range hi - lo {
			dst = append(dst, Row{schema: c.schema, values: flat[i*stride : (i+1)*stride : (i+1)*stride]})
		}
	}
	return dst, nil
}

// readBlock is the number of records AppendRows converts at a time.
const readBlock = 1024

func (c *ArrowReader) check(rec arrow.RecordBatch) error {
	rs := rec.Schema()
	if rs == c.arrowSchema {
		return nil
	}
	if rs.NumFields() != len(c.cols) {
		return fmt.Errorf("iceberg: read rows: %w: batch has %d columns, reader %d", ErrTypeMismatch, rs.NumFields(), len(c.cols))
	}
	for i, f := range rs.Fields() {
		if !arrow.TypeEqual(f.Type, c.arrowSchema.Field(i).Type) {
			return fmt.Errorf("iceberg: read rows: %w", inColumn(c.schema.names[i],
				fmt.Errorf("%w: batch type %s, reader type %s", ErrTypeMismatch, f.Type, c.arrowSchema.Field(i).Type)))
		}
	}
	return nil
}

// eface is the runtime layout of an empty interface.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeWord returns the runtime type word of T.
func typeWord[T any]() unsafe.Pointer {
	var v any = *new(T)
	return (*eface)(unsafe.Pointer(&v)).typ
}

// boxInto stores vals[i] (the value of record lo+i) boxed as an interface into
// dst[i*stride+off] for valid records,
// pointing each interface at the element of one slab instead of allocating a box per
// value. T must not be pointer-shaped (it is only used with scalars, strings, UUIDs and
// decimals); interfaces never write through their data pointer, so sharing is safe.
func boxInto[T any](vals []T, arr arrow.Array, lo int, dst []any, stride, off int) {
	typ := typeWord[T]()
	nulls := arr.NullN() > 0
	for i := range vals {
		if nulls && arr.IsNull(lo+i) {
			continue
		}
		*(*eface)(unsafe.Pointer(&dst[i*stride+off])) = eface{typ: typ, data: unsafe.Pointer(&vals[i])}
	}
}

// fastFill returns a column-at-a-time fill for the common flat types, or nil.
func fastFill(dt arrow.DataType, t ibg.Type) fillFn {
	switch t.(type) {
	case ibg.BooleanType:
		if dt.ID() == arrow.BOOL {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				x := a.(*array.Boolean)
				for i := lo; i < hi; i++ {
					if x.IsValid(i) {
						dst[(i-lo)*stride+off] = x.Value(i) // bools are never allocated
					}
				}
			}
		}
	case ibg.Int32Type:
		if dt.ID() == arrow.INT32 {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				boxInto(append([]int32(nil), a.(*array.Int32).Int32Values()[lo:hi]...), a, lo, dst, stride, off)
			}
		}
	case ibg.Int64Type:
		if dt.ID() == arrow.INT64 {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				boxInto(append([]int64(nil), a.(*array.Int64).Int64Values()[lo:hi]...), a, lo, dst, stride, off)
			}
		}
	case ibg.Float32Type:
		if dt.ID() == arrow.FLOAT32 {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				boxInto(append([]float32(nil), a.(*array.Float32).Float32Values()[lo:hi]...), a, lo, dst, stride, off)
			}
		}
	case ibg.Float64Type:
		if dt.ID() == arrow.FLOAT64 {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				boxInto(append([]float64(nil), a.(*array.Float64).Float64Values()[lo:hi]...), a, lo, dst, stride, off)
			}
		}
	case ibg.DateType:
		if dt.ID() == arrow.DATE32 {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				src := a.(*array.Date32).Date32Values()[lo:hi]
				vals := make([]ibg.Date, len(src))
				for i, v := range src {
					vals[i] = ibg.Date(v)
				}
				boxInto(vals, a, lo, dst, stride, off)
			}
		}
	case ibg.TimestampType, ibg.TimestampTzType:
		if d, ok := dt.(*arrow.TimestampType); ok && d.Unit == arrow.Microsecond {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				src := a.(*array.Timestamp).TimestampValues()[lo:hi]
				vals := make([]ibg.Timestamp, len(src))
				for i, v := range src {
					vals[i] = ibg.Timestamp(v)
				}
				boxInto(vals, a, lo, dst, stride, off)
			}
		}
	case ibg.DecimalType:
		if d, ok := dt.(*arrow.Decimal128Type); ok && int(d.Scale) == t.(ibg.DecimalType).Scale() {
			sc := int(d.Scale)
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				src := a.(*array.Decimal128).Values()[lo:hi]
				vals := make([]ibg.Decimal, len(src))
				for i, v := range src {
					vals[i] = ibg.Decimal{Val: v, Scale: sc}
				}
				boxInto(vals, a, lo, dst, stride, off)
			}
		}
	case ibg.StringType:
		if dt.ID() == arrow.STRING {
			return func(a arrow.Array, dst []any, stride, off, lo, hi int) {
				x := a.(*array.String)
				offs := x.ValueOffsets()[lo : hi+1]
				all := x.ValueBytes()
				base := offs[0]
				data := string(all[base-x.ValueOffsets()[0] : offs[len(offs)-1]-x.ValueOffsets()[0]]) // one copy per block
				vals := make([]string, hi-lo)
				for i := range vals {
					vals[i] = data[offs[i]-base : offs[i+1]-base]
				}
				boxInto(vals, a, lo, dst, stride, off)
			}
		}
	}
	return nil
}
