package row

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Normalize converts v to the Go type Row uses for Iceberg type t (see Row), accepting
// only lossless conversions: narrower integers into int and long, float into double,
// time.Time into date (midnight UTC only), timestamps (whole microseconds for micro
// types), a decimal of smaller scale into a larger one, a UUID string or [16]byte into
// uuid. Anything else, or a value out of range, is an error wrapping ErrTypeMismatch; a
// string that is not valid UTF-8 wraps ErrInvalidUTF8.
// Nested values are converted element by element; nulls inside required list elements,
// map keys or struct fields wrap ErrRequiredNull. Nil stays nil.
func Normalize(v any, t ibg.Type) (any, error) {
	out, _, err := normalize(v, t)
	return out, err
}

// normalize is Normalize that also returns an estimate of the value's size in bytes.
// A value already of the column's Go type comes back as the same interface value:
// boxing it again allocated for every value of every row, and values are normalized
// twice on the hash distribution's path (routing, then the writer).
func normalize(v any, t ibg.Type) (any, int, error) {
	if v == nil {
		return nil, 0, nil
	}
	switch t := t.(type) {
	case ibg.BooleanType:
		if x, ok := v.(bool); ok {
			return x, 1, nil
		}
	case ibg.Int32Type:
		if x, ok := toInt64(v); ok {
			if x != int64(int32(x)) {
				return nil, 0, fmt.Errorf("%w: %d overflows int", ErrTypeMismatch, x)
			}
			if _, is := v.(int32); is {
				return v, 4, nil
			}
			if _, is := v.(int64); !is {
				return int32(x), 4, nil
			}
			return nil, 0, mismatch(v, t)
		}
	case ibg.Int64Type:
		if _, ok := v.(int64); ok {
			return v, 8, nil
		}
		if x, ok := toInt64(v); ok {
			return x, 8, nil
		}
	case ibg.Float32Type:
		if _, ok := v.(float32); ok {
			return v, 4, nil
		}
	case ibg.Float64Type:
		switch x := v.(type) {
		case float64:
			return v, 8, nil
		case float32:
			return float64(x), 8, nil
		}
	case ibg.DecimalType:
		if x, ok := v.(ibg.Decimal); ok {
			if x.Scale > t.Scale() || x.Scale < 0 {
				return nil, 0, fmt.Errorf("%w: decimal %s of scale %d for %s", ErrTypeMismatch, x, x.Scale, t)
			}
			val := x.Val
			if x.Scale < t.Scale() {
				val = val.IncreaseScaleBy(int32(t.Scale() - x.Scale))
			}
			if !val.FitsInPrecision(int32(t.Precision())) {
				return nil, 0, fmt.Errorf("%w: decimal %s does not fit %s", ErrTypeMismatch, x, t)
			}
			return ibg.Decimal{Val: val, Scale: t.Scale()}, 16, nil
		}
	case ibg.DateType:
		switch x := v.(type) {
		case ibg.Date:
			return v, 4, nil
		case time.Time:
			u := x.UTC()
			if u.Hour() != 0 || u.Minute() != 0 || u.Second() != 0 || u.Nanosecond() != 0 {
				return nil, 0, fmt.Errorf("%w: time %s is not a UTC midnight for date", ErrTypeMismatch, x.Format(time.RFC3339Nano))
			}
			return ibg.Date(u.Unix() / 86400), 4, nil
		}
	case ibg.TimeType:
		if x, ok := v.(ibg.Time); ok {
			if x < 0 || x >= 86_400_000_000 {
				return nil, 0, fmt.Errorf("%w: time %d outside a day", ErrTypeMismatch, int64(x))
			}
			return v, 8, nil
		}
	case ibg.TimestampType, ibg.TimestampTzType:
		switch x := v.(type) {
		case ibg.Timestamp:
			return v, 8, nil
		case time.Time:
			if x.Nanosecond()%1000 != 0 {
				return nil, 0, fmt.Errorf("%w: time %s has sub-microsecond digits for %s", ErrTypeMismatch, x.Format(time.RFC3339Nano), t)
			}
			return ibg.Timestamp(x.UnixMicro()), 8, nil
		}
	case ibg.TimestampNsType, ibg.TimestampTzNsType:
		switch x := v.(type) {
		case ibg.TimestampNano:
			return v, 8, nil
		case ibg.Timestamp:
			if int64(x) > math.MaxInt64/1000 || int64(x) < math.MinInt64/1000 {
				return nil, 0, fmt.Errorf("%w: timestamp %d overflows nanoseconds", ErrTypeMismatch, int64(x))
			}
			return ibg.TimestampNano(int64(x) * 1000), 8, nil
		case time.Time:
			return ibg.TimestampNano(x.UnixNano()), 8, nil
		}
	case ibg.StringType:
		if x, ok := v.(string); ok {
			if !utf8.ValidString(x) {
				return nil, 0, invalidUTF8(x)
			}
			return v, len(x), nil
		}
	case ibg.UUIDType:
		switch x := v.(type) {
		case uuid.UUID:
			return v, 16, nil
		case [16]byte:
			return uuid.UUID(x), 16, nil
		case string:
			u, err := uuid.Parse(x)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: %q is not a UUID", ErrTypeMismatch, x)
			}
			return u, 16, nil
		}
	case ibg.FixedType:
		if x, ok := v.([16]byte); ok && t.Len() == 16 {
			// A [16]byte struct field (kept as is for uuid columns), whose inferred
			// type is fixed[16].
			return x[:], 16, nil
		}
		if x, ok := v.([]byte); ok {
			if len(x) != t.Len() {
				return nil, 0, fmt.Errorf("%w: %d bytes for %s", ErrTypeMismatch, len(x), t)
			}
			return v, len(x), nil
		}
	case ibg.BinaryType:
		if x, ok := v.([]byte); ok {
			return v, len(x), nil
		}
	case *ibg.ListType:
		if xs, ok := v.([]any); ok {
			out := make([]any, len(xs))
			size := 0
			for i, x := range xs {
				if x == nil && t.ElementRequired {
					return nil, 0, inColumn("element", ErrRequiredNull)
				}
				y, n, err := normalize(x, t.Element)
				if err != nil {
					return nil, 0, inColumn("element", err)
				}
				out[i], size = y, size+n
			}
			return out, size + 4, nil
		}
	case *ibg.MapType:
		if es, ok := v.([]MapEntry); ok {
			out := make([]MapEntry, len(es))
			size := 0
			for i, e := range es {
				if e.Key == nil {
					return nil, 0, inColumn("key", ErrRequiredNull)
				}
				k, n, err := normalize(e.Key, t.KeyType)
				if err != nil {
					return nil, 0, inColumn("key", err)
				}
				if e.Value == nil && t.ValueRequired {
					return nil, 0, inColumn("value", ErrRequiredNull)
				}
				val, m, err := normalize(e.Value, t.ValueType)
				if err != nil {
					return nil, 0, inColumn("value", err)
				}
				out[i], size = MapEntry{Key: k, Value: val}, size+n+m
			}
			return out, size + 4, nil
		}
	case *ibg.StructType:
		if r, ok := v.(Row); ok {
			s := structSchema(t)
			vals := make([]any, len(t.FieldList))
			for _, name := range r.Names() {
				if s.Index(name) < 0 {
					return nil, 0, inColumn(name, fmt.Errorf("%w: not a field of %s", ErrUnknownColumn, t))
				}
			}
			size := 0
			for i, f := range t.FieldList {
				x, _ := r.Get(f.Name)
				if x == nil && f.Required {
					return nil, 0, inColumn(f.Name, ErrRequiredNull)
				}
				y, n, err := normalize(x, f.Type)
				if err != nil {
					return nil, 0, inColumn(f.Name, err)
				}
				vals[i], size = y, size+n
			}
			return Row{schema: s, values: vals}, size, nil
		}
	case ibg.UnknownType:
		// only null is valid
	case ibg.VariantType:
		if x, ok := v.(Variant); ok {
			if x.IsZero() {
				return nil, 0, fmt.Errorf("%w: the zero Variant holds no value (nil is null, NewVariant(nil) a variant null)", ErrTypeMismatch)
			}
			return v, len(x.Metadata()) + len(x.Bytes()), nil
		}
		x, err := NewVariant(v)
		if err != nil {
			return nil, 0, err
		}
		return x, len(x.Metadata()) + len(x.Bytes()), nil
	}
	return nil, 0, mismatch(v, t)
}

// invalidUTF8 describes string x, which is not valid UTF-8: where the first bad byte is.
func invalidUTF8(x string) error {
	i := 0
	for i < len(x) {
		r, n := utf8.DecodeRuneInString(x[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return fmt.Errorf("%w: byte 0x%02x at offset %d of a %d-byte string",
		ErrInvalidUTF8, x[i], i, len(x))
}

// toInt64 returns integer v as int64 when the conversion is lossless.
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}
