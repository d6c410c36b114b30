package row

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	ibg "github.com/apache/iceberg-go"
)

// Wire format of a Row (deterministic: equal rows encode to equal bytes):
//
//	row    := uvarint(len(schema)) schema body      (len 0: the zero Row, no body)
//	schema := uvarint(n) { string(name) [22] type }*n (type: see appendType; tag 0 = unknown;
//	                                                   22: the column is required)
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
			if s.Required(i) {
				b = append(b, tagRequired)
			}
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
