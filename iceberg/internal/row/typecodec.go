package row

import (
	"encoding/binary"
	"fmt"

	ibg "github.com/apache/iceberg-go"
)

// Type tags of the encoded schema. The values are part of the wire format: never reuse
// or renumber one.
const (
	tagNone          byte = 0 // type unknown (dynamic values)
	tagBool          byte = 1
	tagInt           byte = 2
	tagLong          byte = 3
	tagFloat         byte = 4
	tagDouble        byte = 5
	tagDecimal       byte = 6
	tagDate          byte = 7
	tagTime          byte = 8
	tagTimestamp     byte = 9
	tagTimestampTz   byte = 10
	tagTimestampNs   byte = 11
	tagTimestampTzNs byte = 12
	tagString        byte = 13
	tagUUID          byte = 14
	tagFixed         byte = 15
	tagBinary        byte = 16
	tagList          byte = 17
	tagMap           byte = 18
	tagStruct        byte = 19
	tagUnknown       byte = 20 // Iceberg's "unknown" type: always null
	tagVariant       byte = 21
	// tagRequired precedes the type of a top-level column declared required
	// (Schema.Required); nested fields carry their flag in their struct type.
	tagRequired byte = 22
)

// typeTag returns the wire tag of t.
func typeTag(t ibg.Type) (byte, error) {
	switch t := t.(type) {
	case nil:
		return tagNone, nil
	case ibg.BooleanType:
		return tagBool, nil
	case ibg.Int32Type:
		return tagInt, nil
	case ibg.Int64Type:
		return tagLong, nil
	case ibg.Float32Type:
		return tagFloat, nil
	case ibg.Float64Type:
		return tagDouble, nil
	case ibg.DecimalType:
		return tagDecimal, nil
	case ibg.DateType:
		return tagDate, nil
	case ibg.TimeType:
		return tagTime, nil
	case ibg.TimestampType:
		return tagTimestamp, nil
	case ibg.TimestampTzType:
		return tagTimestampTz, nil
	case ibg.TimestampNsType:
		return tagTimestampNs, nil
	case ibg.TimestampTzNsType:
		return tagTimestampTzNs, nil
	case ibg.StringType:
		return tagString, nil
	case ibg.UUIDType:
		return tagUUID, nil
	case ibg.FixedType:
		return tagFixed, nil
	case ibg.BinaryType:
		return tagBinary, nil
	case *ibg.ListType:
		return tagList, nil
	case *ibg.MapType:
		return tagMap, nil
	case *ibg.StructType:
		return tagStruct, nil
	case ibg.UnknownType:
		return tagUnknown, nil
	case ibg.VariantType:
		return tagVariant, nil
	default:
		return 0, fmt.Errorf("iceberg type %s: %w", t, ErrUnsupportedType)
	}
}

// appendType appends the wire form of t.
func appendType(b []byte, t ibg.Type) ([]byte, error) {
	tag, err := typeTag(t)
	if err != nil {
		return nil, err
	}
	b = append(b, tag)
	switch t := t.(type) {
	case ibg.DecimalType:
		b = append(b, byte(t.Precision()), byte(t.Scale()))
	case ibg.FixedType:
		b = binary.AppendUvarint(b, uint64(t.Len()))
	case *ibg.ListType:
		b = binary.AppendUvarint(b, uint64(t.ElementID))
		b = appendBool(b, t.ElementRequired)
		return appendType(b, t.Element)
	case *ibg.MapType:
		b = binary.AppendUvarint(b, uint64(t.KeyID))
		if b, err = appendType(b, t.KeyType); err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(t.ValueID))
		b = appendBool(b, t.ValueRequired)
		return appendType(b, t.ValueType)
	case *ibg.StructType:
		b = binary.AppendUvarint(b, uint64(len(t.FieldList)))
		for _, f := range t.FieldList {
			b = binary.AppendUvarint(b, uint64(f.ID))
			b = appendString(b, f.Name)
			b = appendBool(b, f.Required)
			if f.Type == nil {
				return nil, fmt.Errorf("struct field %q has no type: %w", f.Name, ErrUnsupportedType)
			}
			if b, err = appendType(b, f.Type); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// readType reads a type written by appendType.
func (r *reader) readType(depth int) (ibg.Type, error) {
	tag, err := r.tagAt(depth)
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagNone:
		return nil, nil
	case tagBool:
		return ibg.PrimitiveTypes.Bool, nil
	case tagInt:
		return ibg.PrimitiveTypes.Int32, nil
	case tagLong:
		return ibg.PrimitiveTypes.Int64, nil
	case tagFloat:
		return ibg.PrimitiveTypes.Float32, nil
	case tagDouble:
		return ibg.PrimitiveTypes.Float64, nil
	case tagDecimal:
		p, err := r.byte()
		if err != nil {
			return nil, err
		}
		s, err := r.byte()
		if err != nil {
			return nil, err
		}
		if p == 0 || p > 38 || s > p {
			return nil, fmt.Errorf("decimal(%d, %d): %w", p, s, ErrCorrupt)
		}
		return ibg.DecimalTypeOf(int(p), int(s)), nil
	case tagDate:
		return ibg.PrimitiveTypes.Date, nil
	case tagTime:
		return ibg.PrimitiveTypes.Time, nil
	case tagTimestamp:
		return ibg.PrimitiveTypes.Timestamp, nil
	case tagTimestampTz:
		return ibg.PrimitiveTypes.TimestampTz, nil
	case tagTimestampNs:
		return ibg.PrimitiveTypes.TimestampNs, nil
	case tagTimestampTzNs:
		return ibg.PrimitiveTypes.TimestampTzNs, nil
	case tagString:
		return ibg.PrimitiveTypes.String, nil
	case tagUUID:
		return ibg.PrimitiveTypes.UUID, nil
	case tagFixed:
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if n > 1<<31 {
			return nil, fmt.Errorf("fixed length %d: %w", n, ErrCorrupt)
		}
		return ibg.FixedTypeOf(int(n)), nil
	case tagBinary:
		return ibg.PrimitiveTypes.Binary, nil
	case tagUnknown:
		return ibg.PrimitiveTypes.Unknown, nil
	case tagVariant:
		return ibg.VariantType{}, nil
	case tagList:
		id, err := r.int()
		if err != nil {
			return nil, err
		}
		req, err := r.bool()
		if err != nil {
			return nil, err
		}
		et, err := r.readType(depth + 1)
		if err != nil {
			return nil, err
		}
		if et == nil {
			return nil, fmt.Errorf("list without element type: %w", ErrCorrupt)
		}
		return &ibg.ListType{ElementID: id, Element: et, ElementRequired: req}, nil
	case tagMap:
		kid, err := r.int()
		if err != nil {
			return nil, err
		}
		kt, err := r.readType(depth + 1)
		if err != nil {
			return nil, err
		}
		vid, err := r.int()
		if err != nil {
			return nil, err
		}
		req, err := r.bool()
		if err != nil {
			return nil, err
		}
		vt, err := r.readType(depth + 1)
		if err != nil {
			return nil, err
		}
		if kt == nil || vt == nil {
			return nil, fmt.Errorf("map without key or value type: %w", ErrCorrupt)
		}
		return &ibg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: req}, nil
	case tagStruct:
		n, err := r.count()
		if err != nil {
			return nil, err
		}
		fields := make([]ibg.NestedField, n)
		for i := range fields {
			id, err := r.int()
			if err != nil {
				return nil, err
			}
			name, err := r.string()
			if err != nil {
				return nil, err
			}
			req, err := r.bool()
			if err != nil {
				return nil, err
			}
			ft, err := r.readType(depth + 1)
			if err != nil {
				return nil, err
			}
			if ft == nil {
				return nil, fmt.Errorf("struct field without type: %w", ErrCorrupt)
			}
			fields[i] = ibg.NestedField{ID: id, Name: name, Required: req, Type: ft}
		}
		return &ibg.StructType{FieldList: fields}, nil
	default:
		return nil, fmt.Errorf("type tag %d: %w", tag, ErrCorrupt)
	}
}

// maxDepth bounds nesting when decoding, so corrupt input cannot exhaust the stack.
const maxDepth = 64

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader decodes from a byte slice; every method fails with ErrCorrupt on short input.
type reader struct {
	b   []byte
	off int
	s   string // string(b), made once when a row has string columns
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bool() (bool, error) {
	c, err := r.byte()
	if err != nil {
		return false, err
	}
	if c > 1 {
		return false, fmt.Errorf("bool byte %d: %w", c, ErrCorrupt)
	}
	return c == 1, nil
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, errShort
	}
	r.off += n
	return v, nil
}

func (r *reader) varint() (int64, error) {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		return 0, errShort
	}
	r.off += n
	return v, nil
}

func (r *reader) int() (int, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if v > 1<<31 {
		return 0, fmt.Errorf("field id %d: %w", v, ErrCorrupt)
	}
	return int(v), nil
}

// count reads a length that must fit in the remaining input (each item takes at least
// one byte, or one bit for bitmaps; a count is never more than 8x the remaining bytes).
// tagAt reads the tag of a value or type nested depth levels deep, refusing input
// nested deeper than maxDepth (corrupt input must not recurse without bound).
func (r *reader) tagAt(depth int) (byte, error) {
	if depth > maxDepth {
		return 0, errTooDeep
	}
	return r.byte()
}

// countAt is count for a list or map nested depth levels deep (see tagAt).
func (r *reader) countAt(depth int) (int, error) {
	if depth > maxDepth {
		return 0, errTooDeep
	}
	return r.count()
}

var errTooDeep = fmt.Errorf("nesting deeper than %d: %w", maxDepth, ErrCorrupt)

func (r *reader) count() (int, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64(len(r.b)-r.off)*8+8 {
		return 0, fmt.Errorf("count %d exceeds input: %w", v, ErrCorrupt)
	}
	return int(v), nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, errShort
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) lenBytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, errShort
	}
	return r.bytes(int(n))
}

func (r *reader) string() (string, error) {
	b, err := r.lenBytes()
	return string(b), err
}

func (r *reader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

var errShort = fmt.Errorf("unexpected end of input: %w", ErrCorrupt)
