package row

import (
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
)

// structPlan is how a BatchBuilder appends structs of one type. A mapped field whose
// Go kind its column takes as it is (integers, floats, booleans, strings, and
// pointers to them) is checked and appended straight from the struct to its Arrow
// builder; the other fields go through StructValues (a boxed value, then normalize
// and appendArrow), as AppendValues takes them. Boxing every value, a []any per row
// and two type switches per value were most of the cost of appending structs.
type structPlan struct {
	typ    reflect.Type
	sv     *StructValues
	direct []directField   // by mapped field; put nil: the field is boxed
	field  []int           // by column: its mapped field, -1 for none (null)
	values []reflect.Value // by column: the field of the struct being appended
}

// directField checks and appends one struct field straight to its Arrow builder.
type directField struct {
	// check validates the field's value; size estimates its bytes (see normalize).
	check func(v reflect.Value) (size int, err error)
	put   func(v reflect.Value)
}

func newStructPlan(b *BatchBuilder, sv *StructValues) *structPlan {
	p := &structPlan{typ: sv.mapping.Type, sv: sv, direct: make([]directField, len(sv.mapping.Fields)),
		field: make([]int, len(b.fields)), values: make([]reflect.Value, len(b.fields))}
	for i := range p.field {
		p.field[i] = -1
	}
	for k, f := range sv.mapping.Fields {
		col := sv.cols[k]
		p.field[col] = k
		p.direct[k] = compileDirect(f.Type, b.fields[col], b.rb.Field(col))
	}
	return p
}

// compileDirect returns the direct append of Go type t into column f built by bld, or
// a zero directField when t needs the boxed path (a conversion, a nested or value type).
func compileDirect(t reflect.Type, f ibg.NestedField, bld array.Builder) directField {
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	if isValueType(t) {
		return directField{}
	}
	var d directField
	fixed := func(n int) func(reflect.Value) (int, error) {
		return func(reflect.Value) (int, error) { return n, nil }
	}
	switch f.Type.(type) {
	case ibg.Int64Type:
		bb, ok := bld.(*array.Int64Builder)
		if !ok {
			return directField{}
		}
		switch t.Kind() {
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int, reflect.Int64:
			d = directField{check: fixed(8), put: func(v reflect.Value) { bb.Append(v.Int()) }}
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			d = directField{check: fixed(8), put: func(v reflect.Value) { bb.Append(int64(v.Uint())) }}
		}
	case ibg.Int32Type:
		bb, ok := bld.(*array.Int32Builder)
		if !ok {
			return directField{}
		}
		switch t.Kind() {
		case reflect.Int8, reflect.Int16, reflect.Int32:
			d = directField{check: fixed(4), put: func(v reflect.Value) { bb.Append(int32(v.Int())) }}
		case reflect.Int:
			d = directField{check: func(v reflect.Value) (int, error) {
				if x := v.Int(); x < math.MinInt32 || x > math.MaxInt32 {
					return 0, fmt.Errorf("%w: %d overflows int", ErrTypeMismatch, x)
				}
				return 4, nil
			}, put: func(v reflect.Value) { bb.Append(int32(v.Int())) }}
		case reflect.Uint8, reflect.Uint16:
			d = directField{check: fixed(4), put: func(v reflect.Value) { bb.Append(int32(v.Uint())) }}
		case reflect.Uint32:
			d = directField{check: func(v reflect.Value) (int, error) {
				if x := v.Uint(); x > math.MaxInt32 {
					return 0, fmt.Errorf("%w: %d overflows int", ErrTypeMismatch, x)
				}
				return 4, nil
			}, put: func(v reflect.Value) { bb.Append(int32(v.Uint())) }}
		}
	case ibg.Float64Type:
		if bb, ok := bld.(*array.Float64Builder); ok && (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32) {
			d = directField{check: fixed(8), put: func(v reflect.Value) { bb.Append(v.Float()) }}
		}
	case ibg.Float32Type:
		if bb, ok := bld.(*array.Float32Builder); ok && t.Kind() == reflect.Float32 {
			d = directField{check: fixed(4), put: func(v reflect.Value) { bb.Append(float32(v.Float())) }}
		}
	case ibg.BooleanType:
		if bb, ok := bld.(*array.BooleanBuilder); ok && t.Kind() == reflect.Bool {
			d = directField{check: fixed(1), put: func(v reflect.Value) { bb.Append(v.Bool()) }}
		}
	case ibg.StringType:
		if bb, ok := bld.(*array.StringBuilder); ok && t.Kind() == reflect.String {
			d = directField{check: func(v reflect.Value) (int, error) {
				x := v.String()
				if !utf8.ValidString(x) {
					return 0, invalidUTF8(x)
				}
				return len(x), nil
			}, put: func(v reflect.Value) { bb.Append(v.String()) }}
		}
	}
	if d.put == nil || !ptr {
		return d
	}
	check, put, required := d.check, d.put, f.Required
	return directField{
		check: func(v reflect.Value) (int, error) {
			if v.IsNil() {
				if required {
					return 0, ErrRequiredNull
				}
				return 0, nil
			}
			return check(v.Elem())
		},
		put: func(v reflect.Value) {
			if v.IsNil() {
				bld.AppendNull()
				return
			}
			put(v.Elem())
		},
	}
}

// appendStruct validates struct value rv (of p's type) whole, then appends it.
func (b *BatchBuilder) appendStruct(p *structPlan, rv reflect.Value) error {
	vals := b.scratch
	clear(vals)
	size := 0
	for col, f := range b.fields {
		k := p.field[col]
		if k < 0 { // no field: null
			if _, _, err := b.checkValue(col, nil); err != nil {
				return err
			}
			continue
		}
		fv := rv.Field(p.sv.mapping.Fields[k].Index)
		if d := p.direct[k]; d.put != nil {
			n, err := d.check(fv)
			if err != nil {
				return fmt.Errorf("iceberg: append row: %w", inColumn(f.Name, err))
			}
			p.values[col], size = fv, size+n
			continue
		}
		x, err := p.sv.convs[k](fv)
		if err != nil {
			return fmt.Errorf("iceberg: struct values: %w", inColumn(f.Name, err))
		}
		x, n, err := b.checkValue(col, x)
		if err != nil {
			return err
		}
		vals[col], size = x, size+n
	}
	for col := range b.fields {
		if k := p.field[col]; k >= 0 && p.direct[k].put != nil {
			p.direct[k].put(p.values[col])
		} else {
			appendArrow(b.rb.Field(col), vals[col])
		}
	}
	clear(p.values) // the struct's memory is not kept
	b.n++
	b.bytes += size
	return nil
}
