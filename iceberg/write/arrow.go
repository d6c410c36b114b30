package write

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// BatchBuilder accumulates Rows into Arrow record batches of one table schema. A row is
// checked completely before anything is appended, so a rejected row leaves the batch
// unchanged. Values follow row.Row's contract; the only conversions are Iceberg's
// lossless promotions (int to long, float to double).
type BatchBuilder struct {
	sc     *ibg.Schema
	asc    *arrow.Schema
	b      *array.RecordBuilder
	fields []ibg.NestedField
	rows   int
}

// NewBatchBuilder returns a builder for table schema sc.
func NewBatchBuilder(sc *ibg.Schema, mem memory.Allocator) (*BatchBuilder, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, err
	}
	return &BatchBuilder{sc: sc, asc: asc, b: array.NewRecordBuilder(mem, asc), fields: sc.Fields()}, nil
}

// Schema returns the Arrow schema of the batches.
func (bb *BatchBuilder) Schema() *arrow.Schema { return bb.asc }

// Len returns the number of rows appended since the last NewBatch.
func (bb *BatchBuilder) Len() int { return bb.rows }

// AppendRow checks r against the schema and appends it. The error wraps
// row.ErrUnknownColumn, row.ErrTypeMismatch or row.ErrRequiredNull and names the column.
func (bb *BatchBuilder) AppendRow(r row.Row) error {
	vals, err := bb.align(r)
	if err != nil {
		return err
	}
	for i, f := range bb.fields {
		if err := checkValue(f.Name, f.Type, f.Required, vals[i]); err != nil {
			return err
		}
	}
	for i, f := range bb.fields {
		appendValue(bb.b.Field(i), f.Type, vals[i])
	}
	bb.rows++
	return nil
}

// align orders r's values by the schema's columns (absent columns are null).
func (bb *BatchBuilder) align(r row.Row) ([]any, error) {
	vals := make([]any, len(bb.fields))
	for i, n := range r.Names() {
		found := false
		for j, f := range bb.fields {
			if f.Name == n {
				vals[j], found = r.Value(i), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q", row.ErrUnknownColumn, n)
		}
	}
	return vals, nil
}

// NewBatch returns the rows appended so far as a batch (the caller releases it) and
// resets the builder.
func (bb *BatchBuilder) NewBatch() arrow.RecordBatch {
	bb.rows = 0
	return bb.b.NewRecordBatch()
}

// Release frees the builder's memory.
func (bb *BatchBuilder) Release() { bb.b.Release() }

func checkValue(path string, typ ibg.Type, required bool, v any) error {
	if v == nil {
		if required {
			return fmt.Errorf("%w: %q", row.ErrRequiredNull, path)
		}
		return nil
	}
	bad := func() error {
		return fmt.Errorf("%w: column %q is %s, value is %T", row.ErrTypeMismatch, path, typ, v)
	}
	ok := false
	switch t := typ.(type) {
	case ibg.BooleanType:
		_, ok = v.(bool)
	case ibg.Int32Type:
		_, ok = v.(int32)
	case ibg.Int64Type:
		switch v.(type) {
		case int64, int32:
			ok = true
		}
	case ibg.Float32Type:
		_, ok = v.(float32)
	case ibg.Float64Type:
		switch v.(type) {
		case float64, float32:
			ok = true
		}
	case ibg.DecimalType:
		d, isDec := v.(ibg.Decimal)
		if isDec && d.Scale != t.Scale() {
			return fmt.Errorf("%w: column %q is %s, value has scale %d", row.ErrTypeMismatch, path, typ, d.Scale)
		}
		if isDec && !d.Val.FitsInPrecision(int32(t.Precision())) {
			return fmt.Errorf("%w: column %q is %s, value exceeds its precision", row.ErrTypeMismatch, path, typ)
		}
		ok = isDec
	case ibg.DateType:
		_, ok = v.(ibg.Date)
	case ibg.TimeType:
		_, ok = v.(ibg.Time)
	case ibg.TimestampType, ibg.TimestampTzType:
		_, ok = v.(ibg.Timestamp)
	case ibg.TimestampNsType, ibg.TimestampTzNsType:
		_, ok = v.(ibg.TimestampNano)
	case ibg.StringType:
		_, ok = v.(string)
	case ibg.UUIDType:
		_, ok = v.(uuid.UUID)
	case ibg.BinaryType:
		_, ok = v.([]byte)
	case ibg.FixedType:
		b, isBytes := v.([]byte)
		if isBytes && len(b) != t.Len() {
			return fmt.Errorf("%w: column %q is %s, value has %d bytes", row.ErrTypeMismatch, path, typ, len(b))
		}
		ok = isBytes
	case *ibg.StructType:
		r, isRow := v.(row.Row)
		if !isRow {
			return bad()
		}
		vals := make([]any, len(t.FieldList))
		for i, n := range r.Names() {
			j := -1
			for k, f := range t.FieldList {
				if f.Name == n {
					j = k
					break
				}
			}
			if j < 0 {
				return fmt.Errorf("%w: %q", row.ErrUnknownColumn, path+"."+n)
			}
			vals[j] = r.Value(i)
		}
		for i, f := range t.FieldList {
			if err := checkValue(path+"."+f.Name, f.Type, f.Required, vals[i]); err != nil {
				return err
			}
		}
		return nil
	case *ibg.ListType:
		l, isList := v.([]any)
		if !isList {
			return bad()
		}
		for _, e := range l {
			if err := checkValue(path+".element", t.Element, t.ElementRequired, e); err != nil {
				return err
			}
		}
		return nil
	case *ibg.MapType:
		m, isMap := v.([]row.MapEntry)
		if !isMap {
			return bad()
		}
		for _, e := range m {
			if err := checkValue(path+".key", t.KeyType, true, e.Key); err != nil {
				return err
			}
			if err := checkValue(path+".value", t.ValueType, t.ValueRequired, e.Value); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: column %q has type %s", row.ErrUnsupportedType, path, typ)
	}
	if !ok {
		return bad()
	}
	return nil
}

// appendValue appends a value checkValue accepted.
func appendValue(b array.Builder, typ ibg.Type, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		if x, ok := v.(int32); ok {
			bb.Append(int64(x))
		} else {
			bb.Append(v.(int64))
		}
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		if x, ok := v.(float32); ok {
			bb.Append(float64(x))
		} else {
			bb.Append(v.(float64))
		}
	case *array.Decimal128Builder:
		bb.Append(v.(ibg.Decimal).Val)
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v.(ibg.Date)))
	case *array.Time64Builder:
		bb.Append(arrow.Time64(v.(ibg.Time)))
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case ibg.Timestamp:
			bb.Append(arrow.Timestamp(x))
		case ibg.TimestampNano:
			bb.Append(arrow.Timestamp(x))
		}
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.LargeStringBuilder:
		bb.Append(v.(string))
	case *extensions.UUIDBuilder:
		bb.Append(v.(uuid.UUID))
	case *array.FixedSizeBinaryBuilder:
		bb.Append(v.([]byte))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.StructBuilder:
		st := typ.(*ibg.StructType)
		r := v.(row.Row)
		bb.Append(true)
		for i, f := range st.FieldList {
			fv, _ := r.Get(f.Name)
			appendValue(bb.FieldBuilder(i), f.Type, fv)
		}
	case *array.ListBuilder:
		lt := typ.(*ibg.ListType)
		bb.Append(true)
		for _, e := range v.([]any) {
			appendValue(bb.ValueBuilder(), lt.Element, e)
		}
	case *array.MapBuilder:
		mt := typ.(*ibg.MapType)
		bb.Append(true)
		for _, e := range v.([]row.MapEntry) {
			appendValue(bb.KeyBuilder(), mt.KeyType, e.Key)
			appendValue(bb.ItemBuilder(), mt.ValueType, e.Value)
		}
	default:
		panic(fmt.Sprintf("write: no append for builder %T of %s", b, typ))
	}
}
