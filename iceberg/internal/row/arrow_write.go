package row

import (
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// BatchBuilder accumulates rows or structs of one Iceberg schema into an Arrow record
// batch whose schema is table.SchemaToArrowSchema(sc, nil, true, false) (field IDs
// included, small types), the form table.WriteRecords expects. Each append validates
// the whole row first: on error nothing is appended and the error names the column.
// A BatchBuilder is not safe for concurrent use.
type BatchBuilder struct {
	schema      *ibg.Schema
	arrowSchema *arrow.Schema
	fields      []ibg.NestedField
	rowSchema   *Schema
	rb          *array.RecordBuilder
	n, bytes    int
	scratch     []any

	lastRow    *Schema // schema of the last appended Row, with its column mapping
	lastMap    []int   // lastMap[i]: column of the builder for row column i
	structs    map[reflect.Type]*structPlan
	lastStruct *structPlan // the plan of the last struct appended
}

// NewBatchBuilder returns a builder for rows of sc, allocating from mem (nil means
// memory.DefaultAllocator). Call Release when done.
func NewBatchBuilder(sc *ibg.Schema, mem memory.Allocator) (*BatchBuilder, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("iceberg: build batch: %w: %w", ErrUnsupportedType, err)
	}
	fs := sc.Fields()
	for _, f := range fs {
		if _, err := typeTag(f.Type); err != nil {
			return nil, fmt.Errorf("iceberg: build batch: %w", inColumn(f.Name, err))
		}
	}
	return &BatchBuilder{
		schema: sc, arrowSchema: as, fields: fs, rowSchema: SchemaOf(sc),
		rb: array.NewRecordBuilder(mem, as), scratch: make([]any, len(fs)),
	}, nil
}

// Schema returns the Iceberg schema of the batches.
func (b *BatchBuilder) Schema() *ibg.Schema { return b.schema }

// ArrowSchema returns the Arrow schema of the batches.
func (b *BatchBuilder) ArrowSchema() *arrow.Schema { return b.arrowSchema }

// RowSchema returns the row Schema of the Iceberg schema's columns (names and types).
func (b *BatchBuilder) RowSchema() *Schema { return b.rowSchema }

// Len returns the number of rows appended since the last NewBatch.
func (b *BatchBuilder) Len() int { return b.n }

// Bytes returns an estimate of the data size appended since the last NewBatch.
func (b *BatchBuilder) Bytes() int { return b.bytes }

// AppendRow validates r against the schema (matching columns by name) and appends it.
// Columns of the schema that r lacks are null. A column r has and the schema lacks
// (ErrUnknownColumn), a null in a required column (ErrRequiredNull) or a value of the
// wrong type (ErrTypeMismatch) is an error naming the column; nothing is appended then.
func (b *BatchBuilder) AppendRow(r Row) error {
	m, err := b.mapping(r.schema)
	if err != nil {
		return err
	}
	vals := b.scratch
	clear(vals)
	for i, v := range r.vals() {
		vals[m[i]] = v
	}
	return b.AppendValues(vals)
}

func (b *BatchBuilder) mapping(s *Schema) ([]int, error) {
	if s == nil {
		return nil, nil
	}
	if s == b.lastRow {
		return b.lastMap, nil
	}
	m := make([]int, len(s.names))
	for i, n := range s.names {
		j := b.rowSchema.Index(n)
		if j < 0 {
			return nil, fmt.Errorf("iceberg: append row: %w", inColumn(n, fmt.Errorf("%w: not in table schema", ErrUnknownColumn)))
		}
		m[i] = j
	}
	b.lastRow, b.lastMap = s, m
	return m, nil
}

// AppendValues validates and appends one row given as values in the schema's column
// order (len(vals) must equal the number of columns). vals may be modified.
func (b *BatchBuilder) AppendValues(vals []any) error {
	if len(vals) != len(b.fields) {
		return fmt.Errorf("iceberg: append row: %w: %d values for %d columns", ErrTypeMismatch, len(vals), len(b.fields))
	}
	size := 0
	for i := range b.fields {
		v, n, err := b.checkValue(i, vals[i])
		if err != nil {
			return err
		}
		vals[i], size = v, size+n
	}
	for i := range b.fields {
		appendArrow(b.rb.Field(i), vals[i])
	}
	b.n++
	b.bytes += size
	return nil
}

// checkValue validates value x (nil for null) of column col and returns it normalized,
// with an estimate of its size in bytes.
func (b *BatchBuilder) checkValue(col int, x any) (any, int, error) {
	f := &b.fields[col]
	if x == nil {
		if f.Required {
			return nil, 0, fmt.Errorf("iceberg: append row: %w", inColumn(f.Name, ErrRequiredNull))
		}
		return nil, 0, nil
	}
	v, n, err := normalize(x, f.Type)
	if err != nil {
		return nil, 0, fmt.Errorf("iceberg: append row: %w", inColumn(f.Name, err))
	}
	return v, n, nil
}

// AppendStruct appends a struct value (or pointer to one) whose fields map to the
// schema's columns (see StructMapping); validation is as for AppendRow. Fields of
// basic kinds go straight to their Arrow builders (see structPlan).
func (b *BatchBuilder) AppendStruct(v any) error {
	rv, err := structValue(v)
	if err != nil {
		return err
	}
	if rv.Kind() != reflect.Struct {
		return fmt.Errorf("iceberg: struct values: %w: %T is not a struct", ErrTypeMismatch, v)
	}
	p := b.lastStruct
	if p == nil || p.typ != rv.Type() {
		p = b.structs[rv.Type()]
	}
	if p == nil {
		sv, err := NewStructValues(rv.Type(), b.schema)
		if err != nil {
			return err
		}
		if b.structs == nil {
			b.structs = map[reflect.Type]*structPlan{}
		}
		p = newStructPlan(b, sv)
		b.structs[rv.Type()] = p
	}
	b.lastStruct = p
	return b.appendStruct(p, rv)
}

// NewBatch returns the rows appended so far as a record batch (the caller releases it)
// and resets the builder.
func (b *BatchBuilder) NewBatch() arrow.RecordBatch {
	b.n, b.bytes = 0, 0
	return b.rb.NewRecordBatch()
}

// Release releases the builder's buffers.
func (b *BatchBuilder) Release() { b.rb.Release() }

// appendArrow appends normalized value v (nil for null) to builder bld.
func appendArrow(bld array.Builder, v any) {
	if v == nil {
		bld.AppendNull()
		return
	}
	switch bb := bld.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
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
	case *extensions.VariantBuilder:
		bb.Append(v.(Variant).v)
	case *array.FixedSizeBinaryBuilder:
		if u, ok := v.(uuid.UUID); ok {
			bb.Append(u[:])
		} else {
			bb.Append(v.([]byte))
		}
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.ExtensionBuilder:
		appendArrow(bb.StorageBuilder(), v)
	case *array.MapBuilder:
		es := v.([]MapEntry)
		bb.Append(true)
		kb, ib := bb.KeyBuilder(), bb.ItemBuilder()
		for _, e := range es {
			appendArrow(kb, e.Key)
			appendArrow(ib, e.Value)
		}
	case array.ListLikeBuilder:
		xs := v.([]any)
		bb.Append(true)
		vb := bb.ValueBuilder()
		for _, x := range xs {
			appendArrow(vb, x)
		}
	case *array.StructBuilder:
		r := v.(Row)
		bb.Append(true)
		for i, x := range r.vals() {
			appendArrow(bb.FieldBuilder(i), x)
		}
	default:
		panic(fmt.Sprintf("row: no arrow append for builder %T", bld))
	}
}
