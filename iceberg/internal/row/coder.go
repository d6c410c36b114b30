package row

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Wire format of a Row (deterministic: equal rows encode to equal bytes):
//
//	row    := uvarint(len(schema)) schema body      (len 0: the zero Row, no body)
//	schema := uvarint(n) { string(name) type }*n    (type: see appendType; tag 0 = unknown)
//	body   := bitmap(n) { value }*                  (bit i set: column i is not null)
//
// Typed values: bool 1 byte; int, long, date, time, timestamps zigzag varints; float and
// double little-endian IEEE bits; decimal 0+varint or 1+16 bytes; string, binary
// uvarint length + bytes; uuid 16 bytes; fixed[L] L bytes; list uvarint count, a bitmap
// when elements are optional, elements; map count, keys, bitmap when values are
// optional, values; struct a body. Columns of unknown type hold dynamic values: a type
// tag then the value (a nested Row then is a whole row).

// node is the compiled codec of one Iceberg type.
type node struct {
	tag      byte
	typ      ibg.Type
	prec     int32
	scale    int   // decimal
	fixedLen int   // fixed
	elem     *node // list element, map key
	val      *node // map value
	optional bool  // list element or map value may be null
	schema   *Schema
}

// plan is the compiled codec of a Schema: one node per column.
type plan struct {
	cols    []*node
	words   int // 8-byte words of scalar slab per row (see reader.body)
	strings int // string columns
}

// slabWords returns how many 8-byte words a decoded scalar of tag needs in the row's
// slab, or 0 when the column is not decoded into the slab.
func slabWords(tag byte) int {
	switch tag {
	case tagInt, tagLong, tagFloat, tagDouble, tagDate, tagTime, tagTimestamp, tagTimestampTz,
		tagTimestampNs, tagTimestampTzNs:
		return 1
	case tagUUID:
		return 2
	case tagDecimal:
		return 3
	}
	return 0
}

// schemaState builds s.cached and s.plan once and returns them.
func (s *Schema) state() (*plan, []byte, error) {
	s.once.Do(func() {
		b := binary.AppendUvarint(nil, uint64(len(s.names)))
		p := &plan{cols: make([]*node, len(s.names))}
		for i, n := range s.names {
			b = appendString(b, n)
			var err error
			if b, err = appendType(b, s.types[i]); err != nil {
				s.err = &colError{path: n, err: err}
				return
			}
			p.cols[i] = compile(s.types[i])
			p.words += slabWords(p.cols[i].tag)
			if p.cols[i].tag == tagString {
				p.strings++
			}
		}
		s.cached, s.plan = b, p
	})
	return s.plan, s.cached, s.err
}

// compile builds the node of t (t must have passed appendType).
func compile(t ibg.Type) *node {
	tag, _ := typeTag(t)
	n := &node{tag: tag, typ: t}
	switch t := t.(type) {
	case ibg.DecimalType:
		n.prec, n.scale = int32(t.Precision()), t.Scale()
	case ibg.FixedType:
		n.fixedLen = t.Len()
	case *ibg.ListType:
		n.elem, n.optional = compile(t.Element), !t.ElementRequired
	case *ibg.MapType:
		n.elem, n.val, n.optional = compile(t.KeyType), compile(t.ValueType), !t.ValueRequired
	case *ibg.StructType:
		n.schema = structSchema(t)
	}
	return n
}

// structSchemas caches structSchema by struct type (bounded like the intern table).
var (
	structSchemas     sync.Map // *ibg.StructType -> *Schema
	structSchemaCount atomic.Int64
)

// structSchema returns the Schema of a struct type's fields, with its plan built. Rows
// of one struct type share it.
func structSchema(t *ibg.StructType) *Schema {
	if v, ok := structSchemas.Load(t); ok {
		return v.(*Schema)
	}
	s := newStructSchema(t)
	if structSchemaCount.Load() < maxInterned {
		if v, loaded := structSchemas.LoadOrStore(t, s); loaded {
			return v.(*Schema)
		}
		structSchemaCount.Add(1)
	}
	return s
}

func newStructSchema(t *ibg.StructType) *Schema {
	s := fieldsSchema(t.FieldList)
	s.state() // cannot fail: the parent type encoded
	return s
}

// colError is an error about one column; nested columns prefix their parent's name.
type colError struct {
	path string
	err  error
}

func (e *colError) Error() string { return fmt.Sprintf("column %q: %v", e.path, e.err) }
func (e *colError) Unwrap() error { return e.err }

func inColumn(name string, err error) error {
	if ce, ok := err.(*colError); ok {
		ce.path = name + "." + ce.path
		return ce
	}
	return &colError{path: name, err: err}
}

func mismatch(v any, t ibg.Type) error {
	if t == nil {
		return fmt.Errorf("%w: Go type %T is not a row value type", ErrTypeMismatch, v)
	}
	return fmt.Errorf("%w: %T for %s", ErrTypeMismatch, v, t)
}

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
	if len(r.values) != len(p.cols) {
		return nil, fmt.Errorf("%w: %d values for %d columns", ErrTypeMismatch, len(r.values), len(p.cols))
	}
	start := len(b)
	b = appendZeros(b, (len(p.cols)+7)/8)
	var err error
	for i, v := range r.values {
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

// Schema interning: rows of one schema decode to one shared *Schema.
var (
	lastSchema   atomic.Pointer[Schema]
	schemaIntern sync.Map // string(encoded schema) -> *Schema
	internCount  atomic.Int64
)

// maxInterned bounds the intern table; schemas beyond it are decoded per row.
const maxInterned = 4096

func internSchema(b []byte) (*Schema, error) {
	if s := lastSchema.Load(); s != nil && string(s.cached) == string(b) {
		return s, nil
	}
	if v, ok := schemaIntern.Load(string(b)); ok {
		s := v.(*Schema)
		lastSchema.Store(s)
		return s, nil
	}
	r := &reader{b: b}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	types := make([]ibg.Type, n)
	for i := range names {
		if names[i], err = r.string(); err != nil {
			return nil, err
		}
		if types[i], err = r.readType(0); err != nil {
			return nil, err
		}
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%d trailing schema bytes: %w", len(b)-r.off, ErrCorrupt)
	}
	s := NewSchema(names, types)
	if _, _, err := s.state(); err != nil {
		return nil, err
	}
	if internCount.Load() < maxInterned {
		if v, loaded := schemaIntern.LoadOrStore(string(s.cached), s); loaded {
			s = v.(*Schema)
		} else {
			internCount.Add(1)
		}
	}
	lastSchema.Store(s)
	return s, nil
}

// Decode decodes a row encoded by Encode. Rows of one schema share one *Schema.
func Decode(b []byte) (Row, error) {
	r := &reader{b: b}
	row, err := r.row(0)
	if err != nil {
		return Row{}, fmt.Errorf("iceberg: decode row: %w", err)
	}
	if r.off != len(b) {
		return Row{}, fmt.Errorf("iceberg: decode row: %d trailing bytes: %w", len(b)-r.off, ErrCorrupt)
	}
	return row, nil
}

func (r *reader) row(depth int) (Row, error) {
	sb, err := r.lenBytes()
	if err != nil {
		return Row{}, err
	}
	if len(sb) == 0 {
		return Row{}, nil
	}
	s, err := internSchema(sb)
	if err != nil {
		return Row{}, err
	}
	return r.body(s, depth)
}

func (r *reader) body(s *Schema, depth int) (Row, error) {
	cols := s.plan.cols
	bm, err := r.bytes((len(cols) + 7) / 8)
	if err != nil {
		return Row{}, err
	}
	vals := make([]any, len(cols))
	// Scalars and strings of the row are boxed into two per-row slabs instead of one
	// allocation per value; strings alias one string copy of the input.
	var (
		words []uint64
		strs  []string
	)
	if p := s.plan; p.words > 0 {
		words = make([]uint64, p.words)
	}
	if p := s.plan; p.strings > 0 {
		strs = make([]string, 0, p.strings)
		if r.s == "" {
			r.s = string(r.b)
		}
	}
	w := 0
	for i, n := range cols {
		if bm[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if n.tag == tagString && strs != nil {
			l, err := r.uvarint()
			if err != nil {
				return Row{}, err
			}
			if l > uint64(len(r.b)-r.off) {
				return Row{}, errShort
			}
			strs = append(strs, r.s[r.off:r.off+int(l)])
			r.off += int(l)
			vals[i] = boxAt(typeString, unsafe.Pointer(&strs[len(strs)-1]))
			continue
		}
		if k := slabWords(n.tag); k > 0 {
			v, err := r.slabValue(n, unsafe.Pointer(&words[w]))
			if err != nil {
				return Row{}, err
			}
			w += k
			vals[i] = v
			continue
		}
		if vals[i], err = r.value(n, depth); err != nil {
			return Row{}, err
		}
	}
	return Row{schema: s, values: vals}, nil
}

var typeString = typeWord[string]()

// boxAt returns an interface of runtime type typ whose data is at p.
func boxAt(typ, p unsafe.Pointer) any {
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ: typ, data: p}
	return v
}

var (
	typeInt32     = typeWord[int32]()
	typeInt64     = typeWord[int64]()
	typeFloat32   = typeWord[float32]()
	typeFloat64   = typeWord[float64]()
	typeDate      = typeWord[ibg.Date]()
	typeTime      = typeWord[ibg.Time]()
	typeTimestamp = typeWord[ibg.Timestamp]()
	typeTsNano    = typeWord[ibg.TimestampNano]()
	typeUUID      = typeWord[uuid.UUID]()
	typeDecimal   = typeWord[ibg.Decimal]()
)

// slabValue decodes a scalar of n (slabWords(n.tag) > 0) into the slab at p and returns
// an interface pointing there; the slab is pointer-free, as are all these types.
func (r *reader) slabValue(n *node, p unsafe.Pointer) (any, error) {
	switch n.tag {
	case tagFloat:
		v, err := r.u32()
		if err != nil {
			return nil, err
		}
		*(*float32)(p) = math.Float32frombits(v)
		return boxAt(typeFloat32, p), nil
	case tagDouble:
		v, err := r.u64()
		if err != nil {
			return nil, err
		}
		*(*float64)(p) = math.Float64frombits(v)
		return boxAt(typeFloat64, p), nil
	case tagUUID:
		b, err := r.bytes(16)
		if err != nil {
			return nil, err
		}
		*(*uuid.UUID)(p) = uuid.UUID(b)
		return boxAt(typeUUID, p), nil
	case tagDecimal:
		d, err := r.decimal()
		if err != nil {
			return nil, err
		}
		if !d.FitsInPrecision(n.prec) {
			return nil, fmt.Errorf("decimal exceeds precision %d: %w", n.prec, ErrCorrupt)
		}
		*(*ibg.Decimal)(p) = ibg.Decimal{Val: d, Scale: n.scale}
		return boxAt(typeDecimal, p), nil
	}
	v, err := r.varint()
	if err != nil {
		return nil, err
	}
	switch n.tag {
	case tagInt, tagDate:
		if v != int64(int32(v)) {
			return nil, fmt.Errorf("32-bit value out of range: %w", ErrCorrupt)
		}
		*(*int32)(p) = int32(v)
		if n.tag == tagDate {
			return boxAt(typeDate, p), nil
		}
		return boxAt(typeInt32, p), nil
	case tagLong:
		*(*int64)(p) = v
		return boxAt(typeInt64, p), nil
	case tagTime:
		*(*int64)(p) = v
		return boxAt(typeTime, p), nil
	case tagTimestamp, tagTimestampTz:
		*(*int64)(p) = v
		return boxAt(typeTimestamp, p), nil
	case tagTimestampNs, tagTimestampTzNs:
		*(*int64)(p) = v
		return boxAt(typeTsNano, p), nil
	}
	return nil, fmt.Errorf("type tag %d: %w", n.tag, ErrCorrupt)
}

func (r *reader) value(n *node, depth int) (any, error) {
	switch n.tag {
	case tagNone:
		return r.dynamic(depth)
	case tagBool:
		return r.bool()
	case tagInt:
		v, err := r.varint()
		if err != nil {
			return nil, err
		}
		if v != int64(int32(v)) {
			return nil, fmt.Errorf("int out of range: %w", ErrCorrupt)
		}
		return int32(v), nil
	case tagLong:
		return r.varint()
	case tagFloat:
		v, err := r.u32()
		return math.Float32frombits(v), err
	case tagDouble:
		v, err := r.u64()
		return math.Float64frombits(v), err
	case tagDecimal:
		d, err := r.decimal()
		if err != nil {
			return nil, err
		}
		if !d.FitsInPrecision(n.prec) {
			return nil, fmt.Errorf("decimal exceeds precision %d: %w", n.prec, ErrCorrupt)
		}
		return ibg.Decimal{Val: d, Scale: n.scale}, nil
	case tagDate:
		v, err := r.varint()
		if v != int64(int32(v)) {
			return nil, fmt.Errorf("date out of range: %w", ErrCorrupt)
		}
		return ibg.Date(v), err
	case tagTime:
		v, err := r.varint()
		return ibg.Time(v), err
	case tagTimestamp, tagTimestampTz:
		v, err := r.varint()
		return ibg.Timestamp(v), err
	case tagTimestampNs, tagTimestampTzNs:
		v, err := r.varint()
		return ibg.TimestampNano(v), err
	case tagString:
		return r.string()
	case tagUUID:
		b, err := r.bytes(16)
		if err != nil {
			return nil, err
		}
		return uuid.UUID(b), nil
	case tagFixed:
		b, err := r.bytes(n.fixedLen)
		return clone(b), err
	case tagBinary:
		b, err := r.lenBytes()
		return clone(b), err
	case tagList:
		return r.list(n, depth)
	case tagMap:
		return r.mapValue(n, depth)
	case tagStruct:
		if depth > maxDepth {
			return nil, fmt.Errorf("nesting deeper than %d: %w", maxDepth, ErrCorrupt)
		}
		return r.body(n.schema, depth+1)
	case tagUnknown:
		return nil, fmt.Errorf("value for unknown type: %w", ErrCorrupt)
	}
	return nil, fmt.Errorf("type tag %d: %w", n.tag, ErrCorrupt)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (r *reader) decimal() (decimal128.Num, error) {
	k, err := r.byte()
	if err != nil {
		return decimal128.Num{}, err
	}
	switch k {
	case 0:
		v, err := r.varint()
		return decimal128.FromI64(v), err
	case 1:
		hi, err := r.u64()
		if err != nil {
			return decimal128.Num{}, err
		}
		lo, err := r.u64()
		return decimal128.New(int64(hi), lo), err
	}
	return decimal128.Num{}, fmt.Errorf("decimal kind %d: %w", k, ErrCorrupt)
}

func (r *reader) list(n *node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nesting deeper than %d: %w", maxDepth, ErrCorrupt)
	}
	c, err := r.count()
	if err != nil {
		return nil, err
	}
	var bm []byte
	if n.optional {
		if bm, err = r.bytes((c + 7) / 8); err != nil {
			return nil, err
		}
	}
	xs := make([]any, c)
	for i := range xs {
		if bm != nil && bm[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if xs[i], err = r.value(n.elem, depth+1); err != nil {
			return nil, err
		}
	}
	return xs, nil
}

func (r *reader) mapValue(n *node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nesting deeper than %d: %w", maxDepth, ErrCorrupt)
	}
	c, err := r.count()
	if err != nil {
		return nil, err
	}
	es := make([]MapEntry, c)
	for i := range es {
		if es[i].Key, err = r.value(n.elem, depth+1); err != nil {
			return nil, err
		}
	}
	var bm []byte
	if n.optional {
		if bm, err = r.bytes((c + 7) / 8); err != nil {
			return nil, err
		}
	}
	for i := range es {
		if bm != nil && bm[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if es[i].Value, err = r.value(n.val, depth+1); err != nil {
			return nil, err
		}
	}
	return es, nil
}

func (r *reader) dynamic(depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nesting deeper than %d: %w", maxDepth, ErrCorrupt)
	}
	tag, err := r.byte()
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagNone:
		return nil, nil
	case tagDecimal:
		sc, err := r.byte()
		if err != nil {
			return nil, err
		}
		if sc > 38 {
			return nil, fmt.Errorf("decimal scale %d: %w", sc, ErrCorrupt)
		}
		d, err := r.decimal()
		return ibg.Decimal{Val: d, Scale: int(sc)}, err
	case tagList:
		c, err := r.count()
		if err != nil {
			return nil, err
		}
		xs := make([]any, c)
		for i := range xs {
			if xs[i], err = r.dynamic(depth + 1); err != nil {
				return nil, err
			}
		}
		return xs, nil
	case tagMap:
		c, err := r.count()
		if err != nil {
			return nil, err
		}
		es := make([]MapEntry, c)
		for i := range es {
			if es[i].Key, err = r.dynamic(depth + 1); err != nil {
				return nil, err
			}
			if es[i].Value, err = r.dynamic(depth + 1); err != nil {
				return nil, err
			}
		}
		return es, nil
	case tagStruct:
		return r.row(depth + 1)
	case tagBool, tagInt, tagLong, tagFloat, tagDouble, tagDate, tagTime, tagTimestamp,
		tagTimestampNs, tagString, tagUUID, tagBinary:
		return r.value(&dynNodes[tag], depth)
	}
	return nil, fmt.Errorf("value tag %d: %w", tag, ErrCorrupt)
}

// dynNodes are the nodes of the primitive dynamic tags.
var dynNodes = func() (ns [tagUnknown + 1]node) {
	for i := range ns {
		ns[i].tag = byte(i)
	}
	return ns
}()

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

// DecodeBodies decodes the rows of schema s written one after another by AppendBody
// into b, calling each with every row in turn. The rows' strings share one copy of b
// (DecodeBody on each row of a long b would copy the rest of b for every row).
func DecodeBodies(s *Schema, b []byte, each func(Row) error) error {
	if _, _, err := s.state(); err != nil {
		return fmt.Errorf("iceberg: decode row: %w", err)
	}
	r := &reader{b: b}
	for r.off < len(b) {
		row, err := r.body(s, 0)
		if err != nil {
			return fmt.Errorf("iceberg: decode row: %w", err)
		}
		if err := each(row); err != nil {
			return err
		}
	}
	return nil
}

// DecodeBody decodes one row of schema s written by AppendBody at the start of b and
// returns it with the number of bytes it took. The row shares s.
func DecodeBody(s *Schema, b []byte) (Row, int, error) {
	if _, _, err := s.state(); err != nil {
		return Row{}, 0, fmt.Errorf("iceberg: decode row: %w", err)
	}
	r := &reader{b: b}
	row, err := r.body(s, 0)
	if err != nil {
		return Row{}, 0, fmt.Errorf("iceberg: decode row: %w", err)
	}
	return row, r.off, nil
}
