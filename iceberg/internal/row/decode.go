package row

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

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
	var required []bool
	for i := range names {
		if names[i], err = r.string(); err != nil {
			return nil, err
		}
		if r.off < len(b) && b[r.off] == tagRequired {
			r.off++
			if required == nil {
				required = make([]bool, n)
			}
			required[i] = true
		}
		if types[i], err = r.readType(0); err != nil {
			return nil, err
		}
		if required != nil && required[i] && types[i] == nil {
			return nil, fmt.Errorf("required column %q of unknown type: %w", names[i], ErrCorrupt)
		}
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%d trailing schema bytes: %w", len(b)-r.off, ErrCorrupt)
	}
	s := NewSchema(names, types)
	s.required = required
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
			return nil, errTooDeep
		}
		return r.body(n.schema, depth+1)
	case tagUnknown:
		return nil, fmt.Errorf("value for unknown type: %w", ErrCorrupt)
	case tagVariant:
		return r.variant()
	}
	return nil, fmt.Errorf("type tag %d: %w", n.tag, ErrCorrupt)
}

// variant reads a variant written by appendVariantBytes, checking its encoding.
func (r *reader) variant() (any, error) {
	m, err := r.lenBytes()
	if err != nil {
		return nil, err
	}
	x, err := r.lenBytes()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 && len(x) == 0 {
		return Variant{}, nil
	}
	v, err := variantOf(clone(m), clone(x))
	if err != nil {
		return nil, fmt.Errorf("variant: %v: %w", err, ErrCorrupt)
	}
	return v, nil
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
	c, err := r.countAt(depth)
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
	c, err := r.countAt(depth)
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
	tag, err := r.tagAt(depth)
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
	case tagVariant:
		return r.variant()
	case tagBool, tagInt, tagLong, tagFloat, tagDouble, tagDate, tagTime, tagTimestamp,
		tagTimestampNs, tagString, tagUUID, tagBinary:
		return r.value(&dynNodes[tag], depth)
	}
	return nil, fmt.Errorf("value tag %d: %w", tag, ErrCorrupt)
}

// dynNodes are the nodes of the primitive dynamic tags.
var dynNodes = func() (ns [tagVariant + 1]node) {
	for i := range ns {
		ns[i].tag = byte(i)
	}
	return ns
}()

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
