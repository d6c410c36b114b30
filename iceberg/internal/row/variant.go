package row

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet/variant"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Variant is the value of an Iceberg variant column: one semi-structured value (null,
// boolean, number, string, binary, date, time, timestamp, UUID, array or object) in
// the Parquet variant binary encoding, metadata and value bytes. Build one from Go
// values with NewVariant, from JSON with ParseVariantJSON or from its encoding with
// VariantFromBytes; read it with Value, JSON, Metadata and Bytes. A Variant is
// immutable. The zero Variant holds no value: as a struct field it is null, as a Row
// value it is an error (nil is null); NewVariant(nil) is a variant null, a value.
type Variant struct {
	v variant.Value // zero (no bytes): the zero Variant
}

// NewVariant encodes the Go value v as a variant. Accepted, at any depth: nil (variant
// null), bool, integers (int8 to int64, uint8 to uint32, int, and uint and uint64 up
// to MaxInt64; all become the smallest variant integer that holds them), float32,
// float64, json.Number, string (valid UTF-8), []byte, uuid.UUID, ibg.Decimal (decimal
// of its scale, precision up to 38), ibg.Date, ibg.Time, ibg.Timestamp (timestamp
// without time zone, microseconds), ibg.TimestampNano (without time zone,
// nanoseconds), time.Time (timestamp with time zone, UTC: microseconds, or
// nanoseconds when it has sub-microsecond digits), Variant, []any and other slices
// (arrays), map[string]any and other maps with string keys, []MapEntry with string
// keys and Row (objects). Anything else is an error wrapping ErrUnsupportedType.
func NewVariant(v any) (Variant, error) {
	var b variant.Builder
	if err := appendVariant(&b, v, 0); err != nil {
		return Variant{}, fmt.Errorf("iceberg: variant: %w", err)
	}
	val, err := b.Build()
	if err != nil {
		return Variant{}, fmt.Errorf("iceberg: variant: %w: %w", ErrTypeMismatch, err)
	}
	return Variant{v: val}, nil
}

// ParseVariantJSON returns the variant of JSON text s: objects, arrays, strings,
// booleans, null, and numbers as integers, decimals or doubles as they are written.
// Duplicate object keys are an error.
func ParseVariantJSON(s string) (Variant, error) {
	val, err := variant.ParseJSON(s, false)
	if err != nil {
		return Variant{}, fmt.Errorf("iceberg: variant: %w: %w", ErrTypeMismatch, err)
	}
	return Variant{v: val}, nil
}

// VariantFromBytes returns the variant of encoded metadata and value bytes (the Parquet
// variant encoding), checking them; the Variant keeps its own copy.
func VariantFromBytes(metadata, value []byte) (Variant, error) {
	val, err := variant.New(bytes.Clone(metadata), bytes.Clone(value))
	if err != nil {
		return Variant{}, fmt.Errorf("iceberg: variant: %w: %w", ErrTypeMismatch, err)
	}
	return Variant{v: val}, nil
}

// variantOf returns the Variant of metadata and value that the caller gives up (no copy).
func variantOf(metadata, value []byte) (Variant, error) {
	val, err := variant.New(metadata, value)
	if err != nil {
		return Variant{}, err
	}
	return Variant{v: val}, nil
}

// IsZero reports whether v is the zero Variant (no value).
func (v Variant) IsZero() bool { return len(v.v.Bytes()) == 0 }

// Metadata returns the encoded metadata (the key dictionary). Do not modify the result.
func (v Variant) Metadata() []byte {
	if v.IsZero() {
		return nil
	}
	return v.v.Metadata().Bytes()
}

// Bytes returns the encoded value. Do not modify the result.
func (v Variant) Bytes() []byte { return v.v.Bytes() }

// VariantValue returns the value as arrow-go's variant.Value (for its path and type
// accessors); the zero Variant gives the zero variant.Value. It shares v's bytes.
func (v Variant) VariantValue() variant.Value { return v.v }

// Value returns the variant as Go values: nil for a variant null (and the zero
// Variant), bool, int64 (every integer width), float32, float64, string, []byte,
// uuid.UUID, ibg.Decimal, ibg.Date, ibg.Time, ibg.Timestamp (timestamp without time
// zone), ibg.TimestampNano (without time zone, nanoseconds), time.Time in UTC
// (timestamps with time zone), []any (arrays) and map[string]any (objects).
// NewVariant of the result encodes the same value.
func (v Variant) Value() any {
	if v.IsZero() {
		return nil
	}
	return goValue(v.v)
}

// JSON returns the variant as JSON text: object keys sorted, binary in base64, decimals
// as exact numbers, dates, times, timestamps and UUIDs as strings (timestamps in RFC
// 3339 form, with a Z when they have a time zone), NaN and infinities as strings. The
// zero Variant is null.
func (v Variant) JSON() string {
	var b strings.Builder
	writeVariantJSON(&b, v.Value())
	return b.String()
}

// MarshalJSON returns v.JSON().
func (v Variant) MarshalJSON() ([]byte, error) { return []byte(v.JSON()), nil }

// String returns v.JSON().
func (v Variant) String() string { return v.JSON() }

// Equal reports whether v and w hold the same value: the same encoding, or values
// equal as Value returns them (integers of any width by value, floats by bits, decimals
// by value and scale, objects by keys and values, timestamps by kind and instant).
func (v Variant) Equal(w Variant) bool {
	if bytes.Equal(v.v.Bytes(), w.v.Bytes()) && bytes.Equal(v.Metadata(), w.Metadata()) {
		return true
	}
	if v.IsZero() || w.IsZero() {
		return false
	}
	return variantValuesEqual(v.Value(), w.Value())
}

func variantValuesEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !variantValuesEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !variantValuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return equalValue(a, b)
}

// goValue converts a decoded variant value to the Go values Value documents.
func goValue(v variant.Value) any {
	switch x := v.Value().(type) {
	case nil, bool, float32, float64, uuid.UUID:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case string:
		return strings.Clone(x)
	case []byte:
		return bytes.Clone(x)
	case variant.DecimalValue[decimal.Decimal32]:
		return ibg.Decimal{Val: decimal128.FromI64(int64(x.Value.(decimal.Decimal32))), Scale: int(x.Scale)}
	case variant.DecimalValue[decimal.Decimal64]:
		return ibg.Decimal{Val: decimal128.FromI64(int64(x.Value.(decimal.Decimal64))), Scale: int(x.Scale)}
	case variant.DecimalValue[decimal.Decimal128]:
		return ibg.Decimal{Val: x.Value.(decimal.Decimal128), Scale: int(x.Scale)}
	case arrow.Date32:
		return ibg.Date(x)
	case arrow.Time64:
		return ibg.Time(x)
	case arrow.Timestamp:
		switch v.Type() {
		case variant.TimestampMicros:
			return time.UnixMicro(int64(x)).UTC()
		case variant.TimestampNanos:
			return time.Unix(0, int64(x)).UTC()
		case variant.TimestampNanosNTZ:
			return ibg.TimestampNano(x)
		}
		return ibg.Timestamp(x)
	case variant.ArrayValue:
		out := make([]any, 0, x.Len())
		for e := range x.Values() {
			out = append(out, goValue(e))
		}
		return out
	case variant.ObjectValue:
		out := make(map[string]any, x.NumElements())
		for k, e := range x.Values() {
			out[strings.Clone(k)] = goValue(e)
		}
		return out
	}
	return nil
}

// appendVariant appends Go value v to b (see NewVariant).
func appendVariant(b *variant.Builder, v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: value nested deeper than %d", ErrUnsupportedType, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return b.AppendNull()
	case Variant:
		if x.IsZero() {
			return b.AppendNull()
		}
		return appendVariant(b, x.Value(), depth+1)
	case bool:
		return b.AppendBool(x)
	case float32:
		return b.AppendFloat32(x)
	case float64:
		return b.AppendFloat64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return b.AppendInt(i)
		}
		f, err := x.Float64()
		if err != nil {
			return fmt.Errorf("%w: json.Number %q", ErrTypeMismatch, string(x))
		}
		return b.AppendFloat64(f)
	case string:
		if !utf8.ValidString(x) {
			return invalidUTF8(x)
		}
		return b.AppendString(x)
	case []byte:
		return b.AppendBinary(x)
	case uuid.UUID:
		return b.AppendUUID(x)
	case ibg.Decimal:
		return appendVariantDecimal(b, x)
	case ibg.Date:
		return b.AppendDate(arrow.Date32(x))
	case ibg.Time:
		return b.AppendTimeMicro(arrow.Time64(x))
	case ibg.Timestamp:
		return b.AppendTimestamp(arrow.Timestamp(x), true, false)
	case ibg.TimestampNano:
		return b.AppendTimestamp(arrow.Timestamp(x), false, false)
	case time.Time:
		if x.Nanosecond()%1000 == 0 {
			return b.AppendTimestamp(arrow.Timestamp(x.UnixMicro()), true, true)
		}
		return b.AppendTimestamp(arrow.Timestamp(x.UnixNano()), false, true)
	case []any:
		start, offs := b.Offset(), make([]int, 0, len(x))
		for _, e := range x {
			offs = append(offs, b.NextElement(start))
			if err := appendVariant(b, e, depth+1); err != nil {
				return err
			}
		}
		return b.FinishArray(start, offs)
	case map[string]any:
		return appendVariantObject(b, slices.Sorted(maps.Keys(x)), func(k string) any { return x[k] }, depth)
	case Row:
		return appendVariantObject(b, x.Names(), func(k string) any { v, _ := x.Get(k); return v }, depth)
	case []MapEntry:
		keys := make([]string, len(x))
		vals := make(map[string]any, len(x))
		for i, e := range x {
			k, ok := e.Key.(string)
			if !ok {
				return fmt.Errorf("%w: map key %T in a variant object (keys are strings)", ErrUnsupportedType, e.Key)
			}
			keys[i], vals[k] = k, e.Value
		}
		return appendVariantObject(b, keys, func(k string) any { return vals[k] }, depth)
	}
	if i, ok := toInt64(v); ok {
		return b.AppendInt(i)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return b.AppendNull()
		}
		return appendVariant(b, rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		start, offs := b.Offset(), make([]int, 0, rv.Len())
		for i := range rv.Len() {
			offs = append(offs, b.NextElement(start))
			if err := appendVariant(b, rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		return b.FinishArray(start, offs)
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			keys := make([]string, 0, rv.Len())
			for _, k := range rv.MapKeys() {
				keys = append(keys, k.String())
			}
			slices.Sort(keys)
			return appendVariantObject(b, keys, func(k string) any {
				return rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface()
			}, depth)
		}
	}
	return fmt.Errorf("%w: Go type %T in a variant", ErrUnsupportedType, v)
}

// appendVariantObject appends an object of keys (in this order) whose values get gives.
func appendVariantObject(b *variant.Builder, keys []string, get func(string) any, depth int) error {
	start, fields := b.Offset(), make([]variant.FieldEntry, 0, len(keys))
	for _, k := range keys {
		if !utf8.ValidString(k) {
			return inColumn(k, invalidUTF8(k))
		}
		fields = append(fields, b.NextField(start, k))
		if err := appendVariant(b, get(k), depth+1); err != nil {
			return inColumn(k, err)
		}
	}
	if err := b.FinishObject(start, fields); err != nil {
		return fmt.Errorf("%w: %w", ErrTypeMismatch, err)
	}
	return nil
}

// appendVariantDecimal appends d as the narrowest variant decimal that holds it.
func appendVariantDecimal(b *variant.Builder, d ibg.Decimal) error {
	if d.Scale < 0 || d.Scale > 38 || !d.Val.FitsInPrecision(38) {
		return fmt.Errorf("%w: decimal %s of scale %d in a variant (at most 38 digits)", ErrTypeMismatch, d, d.Scale)
	}
	sc := uint8(d.Scale)
	switch {
	case d.Val.FitsInPrecision(9):
		return b.AppendDecimal4(sc, decimal.Decimal32(d.Val.LowBits()))
	case d.Val.FitsInPrecision(18):
		return b.AppendDecimal8(sc, decimal.Decimal64(d.Val.LowBits()))
	}
	return b.AppendDecimal16(sc, d.Val)
}

// writeVariantJSON writes a Value result as JSON (see Variant.JSON).
func writeVariantJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float32:
		writeJSONFloat(b, float64(x), 32)
	case float64:
		writeJSONFloat(b, x, 64)
	case string:
		writeJSONString(b, x)
	case []byte:
		writeJSONString(b, base64.StdEncoding.EncodeToString(x))
	case uuid.UUID:
		writeJSONString(b, x.String())
	case ibg.Decimal:
		b.WriteString(x.String())
	case ibg.Date:
		writeJSONString(b, x.ToTime().Format("2006-01-02"))
	case ibg.Time:
		writeJSONString(b, x.ToTime().Format("15:04:05.999999"))
	case ibg.Timestamp:
		writeJSONString(b, x.ToTime().Format("2006-01-02T15:04:05.999999"))
	case ibg.TimestampNano:
		writeJSONString(b, x.ToTime().Format("2006-01-02T15:04:05.999999999"))
	case time.Time:
		writeJSONString(b, x.UTC().Format(time.RFC3339Nano))
	case []any:
		writeJoined(b, "[", ",", "]", len(x), func(i int) { writeVariantJSON(b, x[i]) })
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		writeJoined(b, "{", ",", "}", len(keys), func(i int) {
			writeJSONString(b, keys[i])
			b.WriteByte(':')
			writeVariantJSON(b, x[keys[i]])
		})
	default:
		writeJSONString(b, fmt.Sprint(x))
	}
}

func writeJSONFloat(b *strings.Builder, f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		writeJSONString(b, strconv.FormatFloat(f, 'g', -1, bits))
		return
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
}

func writeJSONString(b *strings.Builder, s string) {
	out, _ := json.Marshal(s)
	b.Write(out)
}
