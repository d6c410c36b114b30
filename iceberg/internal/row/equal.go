package row

import (
	"bytes"
	"math"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Equal reports whether a and b have the same column names and equal values. Column
// types are not compared (a row built with New equals the same row decoded from a typed
// schema). []byte values compare by content, nested rows, lists and maps element by
// element in order, floats by bits so that NaN equals NaN and -0 differs from 0, and
// decimals by value and scale.
func Equal(a, b Row) bool {
	av, bv := a.vals(), b.vals()
	if len(av) != len(bv) {
		return false
	}
	an, bn := a.Names(), b.Names()
	if len(an) != len(bn) {
		return false
	}
	if a.schema != b.schema {
		for i := range an {
			if an[i] != bn[i] {
				return false
			}
		}
	}
	for i := range av {
		if !equalValue(av[i], bv[i]) {
			return false
		}
	}
	return true
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case ibg.Decimal:
		y, ok := b.(ibg.Decimal)
		return ok && x.Scale == y.Scale && x.Val == y.Val
	case Row:
		y, ok := b.(Row)
		return ok && Equal(x, y)
	case Variant:
		y, ok := b.(Variant)
		return ok && x.Equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []MapEntry:
		y, ok := b.([]MapEntry)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i].Key, y[i].Key) || !equalValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return isComparable(a) && a == b
}

// isComparable reports whether a's dynamic type can be compared with ==.
func isComparable(a any) bool {
	switch a.(type) {
	case bool, int32, int64, string, ibg.Date, ibg.Time, ibg.Timestamp, ibg.TimestampNano,
		[16]byte, int, int8, int16, uint8, uint16, uint32, uint64:
		return true
	}
	_, ok := a.(uuid.UUID)
	return ok
}
