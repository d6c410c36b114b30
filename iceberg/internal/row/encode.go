package row

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Encode returns the deterministic encoding of r. It fails when a value does not match
// its column's type; the error names the column and wraps ErrTypeMismatch or
// ErrRequiredNull.
func Encode(r Row) ([]byte, error) {
	bp := bufPool.Get().(*[]byte)
	b, err := AppendEncoded((*bp)[:0], r)
	if err != nil {
		bufPool.Put(bp)
		return nil, err
	}
	out := make([]byte, len(b))
	copy(out, b)
	if cap(b) <= 1<<20 {
		*bp = b
		bufPool.Put(bp)
	}
	return out, nil
}

// AppendEncoded appends the encoding of r to dst (see Encode).
func AppendEncoded(dst []byte, r Row) ([]byte, error) {
	if r.schema == nil {
		if len(r.values) != 0 {
			return nil, fmt.Errorf("iceberg: encode row: %d values without a schema: %w", len(r.values), ErrTypeMismatch)
		}
		return append(dst, 0), nil
	}
	p, sb, err := r.schema.state()
	if err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", err)
	}
	dst = binary.AppendUvarint(dst, uint64(len(sb)))
	dst = append(dst, sb...)
	dst, err = appendBody(dst, p, r)
	if err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", err)
	}
	return dst, nil
}

func appendBody(b []byte, p *plan, r Row) ([]byte, error) {
	vals := r.vals()
	if len(vals) != len(p.cols) {
		return nil, fmt.Errorf("%w: %d values for %d columns", ErrTypeMismatch, len(vals), len(p.cols))
	}
	start := len(b)
	b = appendZeros(b, (len(p.cols)+7)/8)
	var err error
	for i, v := range vals {
		if v == nil {
			continue
		}
		b[start+i/8] |= 1 << (i % 8)
		if b, err = appendValue(b, p.cols[i], v); err != nil {
			return nil, inColumn(r.schema.names[i], err)
		}
	}
	return b, nil
}

// AppendBodyWith appends to dst the body (see AppendBody) of a row of s whose
// columns but the last hold the values packed in body, a body of those columns,
// and whose last column holds v (nil: null), without decoding body.
func AppendBodyWith(dst, body []byte, s *Schema, v any) ([]byte, error) {
	p, _, err := s.state()
	if err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", err)
	}
	n := len(p.cols)
	if n == 0 {
		return nil, fmt.Errorf("iceberg: encode row: %w: a schema without columns", ErrTypeMismatch)
	}
	had, has := (n-1+7)/8, (n+7)/8 // presence bytes of body, and of the row
	if len(body) < had {
		return nil, fmt.Errorf("iceberg: encode row: %w: a body of %d bytes for %d columns", ErrTypeMismatch, len(body), n-1)
	}
	start := len(dst)
	dst = append(dst, body[:had]...)
	dst = appendZeros(dst, has-had)
	dst = append(dst, body[had:]...)
	if v == nil {
		return dst, nil
	}
	dst[start+(n-1)/8] |= 1 << ((n - 1) % 8)
	if dst, err = appendValue(dst, p.cols[n-1], v); err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", inColumn(s.names[n-1], err))
	}
	return dst, nil
}

func appendZeros(b []byte, n int) []byte {
	for range n {
		b = append(b, 0)
	}
	return b
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// appendValue appends the non-null value v of type n.
func appendValue(b []byte, n *node, v any) ([]byte, error) {
	switch n.tag {
	case tagNone:
		return appendDynamic(b, v, 0)
	case tagBool:
		if x, ok := v.(bool); ok {
			return appendBool(b, x), nil
		}
	case tagInt:
		if x, ok := v.(int32); ok {
			return binary.AppendUvarint(b, zigzag(int64(x))), nil
		}
	case tagLong:
		if x, ok := v.(int64); ok {
			return binary.AppendUvarint(b, zigzag(x)), nil
		}
	case tagFloat:
		if x, ok := v.(float32); ok {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(x)), nil
		}
	case tagDouble:
		if x, ok := v.(float64); ok {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(x)), nil
		}
	case tagDecimal:
		if x, ok := v.(ibg.Decimal); ok {
			if x.Scale != n.scale {
				return nil, fmt.Errorf("%w: decimal of scale %d for %s", ErrTypeMismatch, x.Scale, n.typ)
			}
			if !x.Val.FitsInPrecision(n.prec) {
				return nil, fmt.Errorf("%w: decimal %s does not fit %s", ErrTypeMismatch, x, n.typ)
			}
			return appendDecimal(b, x.Val), nil
		}
	case tagDate:
		if x, ok := v.(ibg.Date); ok {
			return binary.AppendUvarint(b, zigzag(int64(x))), nil
		}
	case tagTime:
		if x, ok := v.(ibg.Time); ok {
			return binary.AppendUvarint(b, zigzag(int64(x))), nil
		}
	case tagTimestamp, tagTimestampTz:
		if x, ok := v.(ibg.Timestamp); ok {
			return binary.AppendUvarint(b, zigzag(int64(x))), nil
		}
	case tagTimestampNs, tagTimestampTzNs:
		if x, ok := v.(ibg.TimestampNano); ok {
			return binary.AppendUvarint(b, zigzag(int64(x))), nil
		}
	case tagString:
		if x, ok := v.(string); ok {
			return appendString(b, x), nil
		}
	case tagUUID:
		if x, ok := v.(uuid.UUID); ok {
			return append(b, x[:]...), nil
		}
	case tagFixed:
		if x, ok := v.([]byte); ok {
			if len(x) != n.fixedLen {
				return nil, fmt.Errorf("%w: %d bytes for %s", ErrTypeMismatch, len(x), n.typ)
			}
			return append(b, x...), nil
		}
	case tagBinary:
		if x, ok := v.([]byte); ok {
			b = binary.AppendUvarint(b, uint64(len(x)))
			return append(b, x...), nil
		}
	case tagList:
		if x, ok := v.([]any); ok {
			return appendList(b, n, x)
		}
	case tagMap:
		if x, ok := v.([]MapEntry); ok {
			return appendMap(b, n, x)
		}
	case tagVariant:
		if x, ok := v.(Variant); ok {
			return appendVariantBytes(b, x), nil
		}
	case tagStruct:
		if x, ok := v.(Row); ok {
			if err := sameFields(x, n.schema); err != nil {
				return nil, err
			}
			return appendBody(b, n.schema.plan, x)
		}
	}
	return nil, mismatch(v, n.typ)
}

// sameFields checks that a nested row has the struct type's fields in order.
func sameFields(r Row, s *Schema) error {
	if r.schema == s {
		return nil
	}
	if r.schema == nil || len(r.schema.names) != len(s.names) {
		return fmt.Errorf("%w: row with columns %v for struct with fields %v", ErrTypeMismatch, r.Names(), s.names)
	}
	for i, n := range s.names {
		if r.schema.names[i] != n {
			return fmt.Errorf("%w: row with columns %v for struct with fields %v", ErrTypeMismatch, r.Names(), s.names)
		}
	}
	return nil
}

func appendDecimal(b []byte, d decimal128.Num) []byte {
	hi, lo := d.HighBits(), d.LowBits()
	if (hi == 0 && lo>>63 == 0) || (hi == -1 && lo>>63 == 1) {
		b = append(b, 0)
		return binary.AppendUvarint(b, zigzag(int64(lo)))
	}
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint64(b, uint64(hi))
	return binary.LittleEndian.AppendUint64(b, lo)
}

func appendList(b []byte, n *node, xs []any) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(xs)))
	start := len(b)
	if n.optional {
		b = appendZeros(b, (len(xs)+7)/8)
	}
	var err error
	for i, x := range xs {
		if x == nil {
			if !n.optional {
				return nil, inColumn("element", ErrRequiredNull)
			}
			continue
		}
		if n.optional {
			b[start+i/8] |= 1 << (i % 8)
		}
		if b, err = appendValue(b, n.elem, x); err != nil {
			return nil, inColumn("element", err)
		}
	}
	return b, nil
}

func appendMap(b []byte, n *node, es []MapEntry) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(es)))
	var err error
	for _, e := range es {
		if e.Key == nil {
			return nil, inColumn("key", ErrRequiredNull)
		}
		if b, err = appendValue(b, n.elem, e.Key); err != nil {
			return nil, inColumn("key", err)
		}
	}
	start := len(b)
	if n.optional {
		b = appendZeros(b, (len(es)+7)/8)
	}
	for i, e := range es {
		if e.Value == nil {
			if !n.optional {
				return nil, inColumn("value", ErrRequiredNull)
			}
			continue
		}
		if n.optional {
			b[start+i/8] |= 1 << (i % 8)
		}
		if b, err = appendValue(b, n.val, e.Value); err != nil {
			return nil, inColumn("value", err)
		}
	}
	return b, nil
}

// appendVariantBytes appends a variant's metadata and value, each with its length (the
// zero Variant has none of either).
func appendVariantBytes(b []byte, v Variant) []byte {
	m, x := v.Metadata(), v.Bytes()
	b = binary.AppendUvarint(b, uint64(len(m)))
	b = append(b, m...)
	b = binary.AppendUvarint(b, uint64(len(x)))
	return append(b, x...)
}

// appendDynamic appends a type tag and the value, for columns of unknown type.
func appendDynamic(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: value nested deeper than %d", ErrUnsupportedType, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, tagNone), nil
	case bool:
		return appendBool(append(b, tagBool), x), nil
	case int32:
		return binary.AppendUvarint(append(b, tagInt), zigzag(int64(x))), nil
	case int64:
		return binary.AppendUvarint(append(b, tagLong), zigzag(x)), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(b, tagFloat), math.Float32bits(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagDouble), math.Float64bits(x)), nil
	case ibg.Decimal:
		if x.Scale < 0 || x.Scale > 38 {
			return nil, fmt.Errorf("%w: decimal scale %d", ErrTypeMismatch, x.Scale)
		}
		return appendDecimal(append(b, tagDecimal, byte(x.Scale)), x.Val), nil
	case ibg.Date:
		return binary.AppendUvarint(append(b, tagDate), zigzag(int64(x))), nil
	case ibg.Time:
		return binary.AppendUvarint(append(b, tagTime), zigzag(int64(x))), nil
	case ibg.Timestamp:
		return binary.AppendUvarint(append(b, tagTimestamp), zigzag(int64(x))), nil
	case ibg.TimestampNano:
		return binary.AppendUvarint(append(b, tagTimestampNs), zigzag(int64(x))), nil
	case string:
		return appendString(append(b, tagString), x), nil
	case uuid.UUID:
		return append(append(b, tagUUID), x[:]...), nil
	case []byte:
		b = binary.AppendUvarint(append(b, tagBinary), uint64(len(x)))
		return append(b, x...), nil
	case Variant:
		return appendVariantBytes(append(b, tagVariant), x), nil
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		var err error
		for _, e := range x {
			if b, err = appendDynamic(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []MapEntry:
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(x)))
		var err error
		for _, e := range x {
			if b, err = appendDynamic(b, e.Key, depth+1); err != nil {
				return nil, err
			}
			if b, err = appendDynamic(b, e.Value, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case Row:
		b = append(b, tagStruct)
		if x.schema == nil {
			return append(b, 0), nil
		}
		p, sb, err := x.schema.state()
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(sb)))
		b = append(b, sb...)
		return appendBody(b, p, x)
	}
	return nil, mismatch(v, nil)
}

// AppendBody appends r's values without its schema, for packed row batches whose schema
// travels separately (for instance in a DoFn's configuration). r must have a schema;
// decode with DecodeBody and a schema of the same names and types.
func AppendBody(dst []byte, r Row) ([]byte, error) {
	if r.schema == nil {
		return nil, fmt.Errorf("iceberg: encode row: %w: row without a schema", ErrTypeMismatch)
	}
	p, _, err := r.schema.state()
	if err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", err)
	}
	if dst, err = appendBody(dst, p, r); err != nil {
		return nil, fmt.Errorf("iceberg: encode row: %w", err)
	}
	return dst, nil
}
