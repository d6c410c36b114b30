package cdc

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// keyCodec encodes the values of the equality columns into bytes that compare,
// bytewise, in the order of the values (column by column): integers big-endian with
// the sign bit flipped, strings and binaries with 0x00 escaped and a terminator,
// UUIDs raw, decimals as their 128-bit unscaled value. Equal keys encode equally,
// which is all grouping needs; the order keeps neighbouring keys together for
// planning.
//
// An int encodes as a long (8 bytes), so that a key's encoding survives the int ->
// long promotion of its column during a run: changes parsed with the schema before
// it (by a worker that has not seen it, or held in a shuffle) go to the same shard,
// and sort with the same key, as those parsed after. Decimals are invariant under
// their promotion (a wider precision) too; a date promoted to a timestamp is not.
type keyCodec struct {
	names []string
	ids   []int
	types []ibg.Type
}

// newKeyCodec looks up cols in sc. Float and double columns cannot be keys (NaN and
// -0 have no usable equality; equality deletes reject them too); nested and complex
// types are not supported.
func newKeyCodec(sc *ibg.Schema, cols []string) (*keyCodec, error) {
	if len(cols) == 0 {
		return nil, config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column")
	}
	k := &keyCodec{names: cols}
	for _, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return nil, config.Errorf(config.KeyEqualityColumns, "no column %q in the table schema", c)
		}
		switch f.Type.(type) {
		case ibg.BooleanType, ibg.Int32Type, ibg.Int64Type, ibg.DateType, ibg.TimeType,
			ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType,
			ibg.StringType, ibg.BinaryType, ibg.FixedType, ibg.UUIDType, ibg.DecimalType:
		default:
			return nil, &config.ConfigError{Key: config.KeyEqualityColumns,
				Err: fmt.Errorf("%w: column %q of type %s cannot be an equality column", config.ErrUnsupported, c, f.Type)}
		}
		k.ids = append(k.ids, f.ID)
		k.types = append(k.types, f.Type)
	}
	return k, nil
}

func appendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

func appendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v)^(1<<31))
}

// appendEscaped appends b with 0x00 escaped as 0x00 0xFF and the terminator 0x00 0x01,
// so that a prefix sorts before its extensions and concatenated columns stay
// unambiguous.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, 0, 1)
}

func appendEscapedString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xFF)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, 0, 1)
}

func appendDecimal(dst []byte, n decimal128.Num) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.HighBits())^(1<<63))
	return binary.BigEndian.AppendUint64(dst, n.LowBits())
}

// appendValue appends the encoding of v, a value normalized to column i's type
// (see row.Normalize).
func (k *keyCodec) appendValue(dst []byte, i int, v any) ([]byte, error) {
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("equality column %q: value %v (%T) does not match type %s", k.names[i], v, v, k.types[i])
	}
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("equality column %q: null", k.names[i])
	case bool:
		if x {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case int32:
		return appendInt64(dst, int64(x)), nil
	case ibg.Date:
		return appendInt32(dst, int32(x)), nil
	case int64:
		return appendInt64(dst, x), nil
	case ibg.Time:
		return appendInt64(dst, int64(x)), nil
	case ibg.Timestamp:
		return appendInt64(dst, int64(x)), nil
	case ibg.TimestampNano:
		return appendInt64(dst, int64(x)), nil
	case string:
		return appendEscapedString(dst, x), nil
	case []byte:
		return appendEscaped(dst, x), nil
	case uuid.UUID:
		return append(dst, x[:]...), nil
	case ibg.Decimal:
		return appendDecimal(dst, x.Val), nil
	}
	return bad()
}

// append appends the encoding of the key values vals (one per equality column).
func (k *keyCodec) append(dst []byte, vals []any) ([]byte, error) {
	if len(vals) != len(k.types) {
		return nil, fmt.Errorf("key has %d values, want %d (%v)", len(vals), len(k.types), k.names)
	}
	var err error
	for i, v := range vals {
		if dst, err = k.appendValue(dst, i, v); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// decode appends to dst the key values (as append takes them, normalized to the
// columns' types) of the encoded key enc.
func (k *keyCodec) decode(dst []any, enc []byte) ([]any, error) {
	short := func(i int) ([]any, error) {
		return nil, fmt.Errorf("equality column %q: encoded key %x is cut short", k.names[i], enc)
	}
	for i, t := range k.types {
		switch t := t.(type) {
		case ibg.BooleanType:
			if len(enc) < 1 {
				return short(i)
			}
			dst, enc = append(dst, enc[0] == 1), enc[1:]
		case ibg.DateType:
			if len(enc) < 4 {
				return short(i)
			}
			dst, enc = append(dst, ibg.Date(int32(binary.BigEndian.Uint32(enc)^1<<31))), enc[4:]
		case ibg.Int32Type:
			if len(enc) < 8 {
				return short(i)
			}
			v := int64(binary.BigEndian.Uint64(enc) ^ 1<<63)
			if v != int64(int32(v)) {
				return nil, fmt.Errorf("equality column %q: encoded key %x holds %d, out of the int range", k.names[i], enc, v)
			}
			dst, enc = append(dst, int32(v)), enc[8:]
		case ibg.Int64Type, ibg.TimeType, ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType:
			if len(enc) < 8 {
				return short(i)
			}
			v := int64(binary.BigEndian.Uint64(enc) ^ 1<<63)
			switch t.(type) {
			case ibg.TimeType:
				dst = append(dst, ibg.Time(v))
			case ibg.TimestampType, ibg.TimestampTzType:
				dst = append(dst, ibg.Timestamp(v))
			case ibg.TimestampNsType, ibg.TimestampTzNsType:
				dst = append(dst, ibg.TimestampNano(v))
			default:
				dst = append(dst, v)
			}
			enc = enc[8:]
		case ibg.UUIDType:
			if len(enc) < 16 {
				return short(i)
			}
			dst, enc = append(dst, uuid.UUID(enc[:16])), enc[16:]
		case ibg.DecimalType:
			if len(enc) < 16 {
				return short(i)
			}
			n := decimal128.New(int64(binary.BigEndian.Uint64(enc)^1<<63), binary.BigEndian.Uint64(enc[8:]))
			dst, enc = append(dst, ibg.Decimal{Val: n, Scale: t.Scale()}), enc[16:]
		case ibg.StringType, ibg.BinaryType, ibg.FixedType:
			var b []byte
			for j := 0; ; j++ {
				if j+1 >= len(enc) {
					return short(i)
				}
				if enc[j] != 0 {
					continue
				}
				if enc[j+1] == 1 { // the terminator
					b = unescape(enc[:j])
					enc = enc[j+2:]
					break
				}
				j++ // 0x00 0xFF: an escaped 0x00
			}
			if _, str := t.(ibg.StringType); str {
				dst = append(dst, string(b))
			} else {
				dst = append(dst, b)
			}
		default:
			return nil, fmt.Errorf("equality column %q: cannot decode %s", k.names[i], t)
		}
	}
	if len(enc) != 0 {
		return nil, fmt.Errorf("encoded key has %d bytes past its %d columns", len(enc), len(k.types))
	}
	return dst, nil
}

// unescape returns a copy of b with each 0x00 0xFF (appendEscaped) back to 0x00.
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for j := 0; j < len(b); j++ {
		out = append(out, b[j])
		if b[j] == 0 {
			j++
		}
	}
	return out
}

// arrowKeyFn appends the key encoding of row i of one Arrow column.
type arrowKeyFn func(dst []byte, i int) []byte

// arrowEncoder returns the encoder of column i's values in arr, as read from a data
// file, or an error when the Arrow type does not fit the column's type. A file
// written before a type promotion holds the narrower type: an int column promoted
// to long reads as Int32, a date promoted to a timestamp as Date32 (days); their
// values are encoded as the column's type encodes them, so that they equal the
// keys of changes. Int64 values of an int column (a file written after a
// promotion the codec's schema predates) encode as ints do, as longs.
func (k *keyCodec) arrowEncoder(i int, arr arrow.Array) (arrowKeyFn, error) {
	if ext, ok := arr.(array.ExtensionArray); ok {
		arr = ext.Storage()
	}
	var fn arrowKeyFn
	switch a := arr.(type) {
	case *array.Boolean:
		if _, ok := k.types[i].(ibg.BooleanType); ok {
			fn = func(dst []byte, j int) []byte {
				if a.Value(j) {
					return append(dst, 1)
				}
				return append(dst, 0)
			}
		}
	case *array.Int32:
		switch k.types[i].(type) {
		case ibg.Int32Type, ibg.Int64Type: // an int encodes as a long
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, int64(a.Value(j))) }
		}
	case *array.Date32:
		switch k.types[i].(type) {
		case ibg.DateType:
			fn = func(dst []byte, j int) []byte { return appendInt32(dst, int32(a.Value(j))) }
		case ibg.TimestampType, ibg.TimestampTzType:
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, int64(a.Value(j))*86_400_000_000) }
		case ibg.TimestampNsType, ibg.TimestampTzNsType:
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, int64(a.Value(j))*86_400_000_000_000) }
		}
	case *array.Int64:
		switch k.types[i].(type) {
		case ibg.Int64Type, ibg.Int32Type: // the latter: the column was promoted since the codec's schema
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, a.Value(j)) }
		}
	case *array.Time64:
		if _, ok := k.types[i].(ibg.TimeType); ok {
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, int64(a.Value(j))) }
		}
	case *array.Timestamp:
		switch k.types[i].(type) {
		case ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType:
			fn = func(dst []byte, j int) []byte { return appendInt64(dst, int64(a.Value(j))) }
		}
	case *array.String, *array.LargeString, *array.Binary, *array.LargeBinary:
		switch k.types[i].(type) {
		case ibg.StringType, ibg.BinaryType: // string and binary promote to each other
			switch a := a.(type) {
			case *array.String:
				fn = func(dst []byte, j int) []byte { return appendEscapedString(dst, a.Value(j)) }
			case *array.LargeString:
				fn = func(dst []byte, j int) []byte { return appendEscapedString(dst, a.Value(j)) }
			case *array.Binary:
				fn = func(dst []byte, j int) []byte { return appendEscaped(dst, a.Value(j)) }
			case *array.LargeBinary:
				fn = func(dst []byte, j int) []byte { return appendEscaped(dst, a.Value(j)) }
			}
		}
	case *array.FixedSizeBinary:
		switch k.types[i].(type) {
		case ibg.UUIDType:
			fn = func(dst []byte, j int) []byte { return append(dst, a.Value(j)...) }
		case ibg.FixedType:
			fn = func(dst []byte, j int) []byte { return appendEscaped(dst, a.Value(j)) }
		}
	case *array.Decimal128:
		if _, ok := k.types[i].(ibg.DecimalType); ok {
			fn = func(dst []byte, j int) []byte { return appendDecimal(dst, a.Value(j)) }
		}
	}
	if fn == nil {
		return nil, fmt.Errorf("equality column %q: cannot read Arrow type %s as %s", k.names[i], arr.DataType(), k.types[i])
	}
	return fn, nil
}

// literal returns column i's value v as an iceberg-go literal for planning.
func literal(v any) (ibg.Literal, error) {
	switch x := v.(type) {
	case bool:
		return ibg.NewLiteral(x), nil
	case int32:
		return ibg.NewLiteral(x), nil
	case int64:
		return ibg.NewLiteral(x), nil
	case ibg.Date:
		return ibg.NewLiteral(x), nil
	case ibg.Time:
		return ibg.NewLiteral(x), nil
	case ibg.Timestamp:
		return ibg.NewLiteral(x), nil
	case ibg.TimestampNano:
		return ibg.NewLiteral(x), nil
	case string:
		return ibg.NewLiteral(x), nil
	case []byte:
		return ibg.NewLiteral(x), nil
	case uuid.UUID:
		return ibg.NewLiteral(x), nil
	case ibg.Decimal:
		return ibg.NewLiteral(x), nil
	}
	return nil, fmt.Errorf("no literal for %T", v)
}

// hashKey is FNV-1a over an encoded key, finalized with MurmurHash3's fmix64: stable
// across processes and Go versions, which shard assignment needs. The finalizer
// matters: the low bits of FNV-1a depend only on the low bits of the input bytes, so
// a plain modulo would put keys that differ in high bits only (ids stepping by 16,
// say) into few shards.
func hashKey(key []byte) uint64 {
	if len(key) == 8 {
		return hash8(binary.BigEndian.Uint64(key))
	}
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix(h)
}

// hashTop is hashKey of the first n (at most 8) bytes of v's big-endian
// encoding, without encoding it.
func hashTop(v uint64, n int) uint64 {
	if n == 8 {
		return hash8(v)
	}
	h := uint64(14695981039346656037)
	for i := range n {
		h ^= v >> (56 - 8*i) & 0xff
		h *= 1099511628211
	}
	return mix(h)
}

// hash8 is hashKey of v's 8-byte big-endian encoding, the loop unrolled: 6 ns a
// key instead of 12.5 (hashKey's loop) or 20 (hashTop's), and a cold key index
// build hashes every row of the table (BenchmarkHashKey, TestHashKeyUnrolled).
func hash8(v uint64) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	h = (h ^ v>>56) * prime
	h = (h ^ v>>48&0xff) * prime
	h = (h ^ v>>40&0xff) * prime
	h = (h ^ v>>32&0xff) * prime
	h = (h ^ v>>24&0xff) * prime
	h = (h ^ v>>16&0xff) * prime
	h = (h ^ v>>8&0xff) * prime
	h = (h ^ v&0xff) * prime
	return mix(h)
}

// mix is hashKey's finalizer.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Shard returns the shard, in [0, numShards), of the encoded key (see
// Parser.AppendKey). Every change of one key lands in the same shard, which the
// per-key collapse needs; the key alone decides, so a key whose partition changes
// does not move between shards.
func Shard(key []byte, numShards int) int {
	if numShards <= 1 {
		return 0
	}
	return int(hashKey(key) % uint64(numShards))
}
