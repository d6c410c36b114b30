package read

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// filterLitKind is the syntactic kind of a literal in a filter.
type filterLitKind int

const (
	filterLitString filterLitKind = iota
	filterLitNumber
	filterLitBool
	filterLitNull
	filterLitBinary
	filterLitDate
	filterLitTime
	filterLitTimestamp
)

// filterLit is a literal as written, before it is typed by its column.
type filterLit struct {
	kind filterLitKind
	text string // string content, number text, hex digits, or the typed literal's string
	b    bool
	pos  int
}

// source renders the literal as written, for error messages.
func (l *filterLit) source() string {
	t := filterTruncate(l.text)
	switch l.kind {
	case filterLitString:
		return filterQuoteString(t)
	case filterLitBinary:
		return "X'" + t + "'"
	case filterLitDate:
		return "DATE " + filterQuoteString(t)
	case filterLitTime:
		return "TIME " + filterQuoteString(t)
	case filterLitTimestamp:
		return "TIMESTAMP " + filterQuoteString(t)
	default:
		return t
	}
}

// literalFor converts a literal to the Iceberg type of col.
func (p *parseState) literalFor(col *parseColumn, l *filterLit) (ibg.Literal, *FilterError) {
	fail := func(format string, args ...any) *FilterError {
		return &FilterError{Pos: l.pos, Column: col.name, Msg: fmt.Sprintf(format, args...)}
	}
	typ := col.field.Type
	mismatch := func() *FilterError {
		return fail("cannot compare %s with %s", filterTypeName(typ), l.source())
	}
	if l.kind == filterLitNull {
		return nil, fail("comparison with NULL is never true: use IS NULL or IS NOT NULL")
	}
	switch t := typ.(type) {
	case ibg.BooleanType:
		if l.kind != filterLitBool {
			return nil, mismatch()
		}
		return ibg.NewLiteral(l.b), nil
	case ibg.Int32Type, ibg.Int64Type:
		if l.kind != filterLitNumber {
			return nil, mismatch()
		}
		bits := 64
		if _, ok := t.(ibg.Int32Type); ok {
			bits = 32
		}
		v, msg := filterScaledInteger(l.text, 0)
		if msg != "" {
			return nil, fail("%s is not an integer", l.source())
		}
		if !v.IsInt64() || (bits == 32 && (v.Int64() > math.MaxInt32 || v.Int64() < math.MinInt32)) {
			return nil, fail("%s is out of range for %s", l.source(), filterTypeName(typ))
		}
		if bits == 32 {
			return ibg.NewLiteral(int32(v.Int64())), nil
		}
		return ibg.NewLiteral(v.Int64()), nil
	case ibg.Float32Type, ibg.Float64Type:
		if l.kind != filterLitNumber {
			return nil, mismatch()
		}
		bits := 64
		if _, ok := t.(ibg.Float32Type); ok {
			bits = 32
		}
		f, err := strconv.ParseFloat(l.text, bits)
		if err != nil || math.IsInf(f, 0) {
			return nil, fail("%s is out of range for %s", l.source(), filterTypeName(typ))
		}
		if bits == 32 {
			return ibg.NewLiteral(float32(f)), nil
		}
		return ibg.NewLiteral(f), nil
	case ibg.DecimalType:
		if l.kind != filterLitNumber {
			return nil, mismatch()
		}
		v, msg := filterScaledInteger(l.text, t.Scale())
		if msg != "" {
			return nil, fail("%s has more than %d decimal places for %s", l.source(), t.Scale(), filterTypeName(typ))
		}
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision())), nil)
		if new(big.Int).Abs(v).Cmp(limit) >= 0 {
			return nil, fail("%s does not fit %s", l.source(), filterTypeName(typ))
		}
		return ibg.NewLiteral(ibg.Decimal{Val: decimal128.FromBigInt(v), Scale: t.Scale()}), nil
	case ibg.StringType:
		if l.kind != filterLitString {
			return nil, mismatch()
		}
		return ibg.NewLiteral(l.text), nil
	case ibg.UUIDType:
		if l.kind != filterLitString {
			return nil, mismatch()
		}
		u, err := uuid.Parse(l.text)
		if err != nil {
			return nil, fail("%s is not a UUID", l.source())
		}
		return ibg.NewLiteral(u), nil
	case ibg.BinaryType, ibg.FixedType:
		if l.kind != filterLitBinary {
			return nil, fail("cannot compare %s with %s: write binary values as X'<hex>'", filterTypeName(typ), l.source())
		}
		b, err := hex.DecodeString(l.text)
		if err != nil {
			return nil, mismatch()
		}
		if ft, ok := t.(ibg.FixedType); ok {
			if len(b) != ft.Len() {
				return nil, fail("%s has %d bytes, %s needs %d", l.source(), len(b), filterTypeName(typ), ft.Len())
			}
			return ibg.FixedLiteral(b), nil
		}
		return ibg.NewLiteral(b), nil
	case ibg.DateType:
		if l.kind != filterLitString && l.kind != filterLitDate {
			return nil, mismatch()
		}
		d, ok := filterParseDate(l.text)
		if !ok {
			return nil, fail("%s is not a date (YYYY-MM-DD)", l.source())
		}
		return ibg.NewLiteral(ibg.Date(d)), nil
	case ibg.TimeType:
		if l.kind != filterLitString && l.kind != filterLitTime {
			return nil, mismatch()
		}
		ns, ok := filterParseTime(l.text, 6)
		if !ok {
			return nil, fail("%s is not a time (HH:MM:SS[.ffffff])", l.source())
		}
		return ibg.NewLiteral(ibg.Time(ns / 1000)), nil
	case ibg.TimestampType, ibg.TimestampTzType, ibg.TimestampNsType, ibg.TimestampTzNsType:
		if l.kind != filterLitString && l.kind != filterLitTimestamp && l.kind != filterLitDate {
			return nil, mismatch()
		}
		withTZ, nanos := false, false
		switch t.(type) {
		case ibg.TimestampTzType:
			withTZ = true
		case ibg.TimestampNsType:
			nanos = true
		case ibg.TimestampTzNsType:
			withTZ, nanos = true, true
		}
		digits := 6
		if nanos {
			digits = 9
		}
		ns, msg := filterParseTimestamp(l.text, digits, withTZ)
		if msg != "" {
			return nil, fail("%s is not a %s: %s", l.source(), filterTypeName(typ), msg)
		}
		if nanos {
			if !ns.IsInt64() {
				return nil, fail("%s is out of range for %s", l.source(), filterTypeName(typ))
			}
			return ibg.NewLiteral(ibg.TimestampNano(ns.Int64())), nil
		}
		return ibg.NewLiteral(ibg.Timestamp(new(big.Int).Quo(ns, big.NewInt(1000)).Int64())), nil
	}
	return nil, &FilterError{Pos: l.pos, Column: col.name, Err: errFilterUnsupported,
		Msg: fmt.Sprintf("filtering %s columns is not supported", filterTypeName(typ))}
}

// filterScaledInteger returns the number text times 10^scale as an integer, or a
// non-empty message when that value has a fractional part.
func filterScaledInteger(text string, scale int) (*big.Int, string) {
	neg := false
	switch {
	case strings.HasPrefix(text, "-"):
		neg, text = true, text[1:]
	case strings.HasPrefix(text, "+"):
		text = text[1:]
	}
	exp := 0
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		e, err := strconv.Atoi(text[i+1:])
		if err != nil {
			return nil, "bad exponent"
		}
		exp, text = e, text[:i]
	}
	intPart, frac, _ := strings.Cut(text, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := exp - len(frac) + scale
	v := new(big.Int)
	if digits == "" {
		return v, ""
	}
	if shift < 0 {
		drop := -shift
		if drop > len(digits) || strings.TrimRight(digits[len(digits)-drop:], "0") != "" {
			return nil, "fractional"
		}
		digits = digits[:len(digits)-drop]
	} else {
		if len(digits)+shift > 80 {
			// Larger than any decimal(38) or int64; keep the magnitude cheap to build.
			shift = 80 - len(digits) + 1
			if shift < 0 {
				shift = 0
			}
		}
		digits += strings.Repeat("0", shift)
	}
	v.SetString(digits, 10)
	if neg {
		v.Neg(v)
	}
	return v, ""
}

// filterParseDate parses YYYY-MM-DD into days since the Unix epoch.
func filterParseDate(s string) (int32, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := filterDigits(s[0:4])
	m, ok2 := filterDigits(s[5:7])
	d, ok3 := filterDigits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return 0, false
	}
	tm := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if tm.Day() != d {
		return 0, false // e.g. February 30
	}
	days := tm.Unix() / 86400
	if tm.Unix()%86400 != 0 {
		days--
	}
	return int32(days), true
}

// filterParseTime parses HH:MM:SS[.f...] with at most maxDigits fractional digits into
// nanoseconds since midnight.
func filterParseTime(s string, maxDigits int) (int64, bool) {
	main, frac, hasFrac := strings.Cut(s, ".")
	if len(main) != 8 || main[2] != ':' || main[5] != ':' {
		return 0, false
	}
	h, ok1 := filterDigits(main[0:2])
	m, ok2 := filterDigits(main[3:5])
	sec, ok3 := filterDigits(main[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return 0, false
	}
	ns := int64(h*3600+m*60+sec) * int64(time.Second)
	if hasFrac {
		if frac == "" || len(frac) > 9 {
			return 0, false
		}
		f, ok := filterDigits(frac)
		if !ok {
			return 0, false
		}
		if strings.TrimRight(frac[min(len(frac), maxDigits):], "0") != "" {
			return 0, false
		}
		for range 9 - len(frac) {
			f *= 10
		}
		ns += int64(f)
	}
	return ns, true
}

// filterParseTimestamp parses `YYYY-MM-DD[( |T)HH:MM:SS[.f...]][offset]` into
// nanoseconds since the epoch. Without an offset the value is UTC; an offset is an
// error unless withTZ.
func filterParseTimestamp(s string, maxDigits int, withTZ bool) (*big.Int, string) {
	if len(s) < 10 {
		return nil, "expected YYYY-MM-DD HH:MM:SS[.ffffff]"
	}
	days, ok := filterParseDate(s[:10])
	if !ok {
		return nil, "expected YYYY-MM-DD HH:MM:SS[.ffffff]"
	}
	rest := s[10:]
	var dayNs, offNs int64
	if rest != "" {
		if rest[0] != ' ' && rest[0] != 'T' {
			return nil, "expected YYYY-MM-DD HH:MM:SS[.ffffff]"
		}
		rest = rest[1:]
		clock := rest
		offset := ""
		if i := strings.IndexAny(rest, "Z+-"); i >= 0 {
			clock, offset = rest[:i], rest[i:]
		}
		clock = strings.TrimRight(clock, " ")
		ns, ok := filterParseTime(clock, maxDigits)
		if !ok {
			return nil, fmt.Sprintf("expected YYYY-MM-DD HH:MM:SS with at most %d fractional digits", maxDigits)
		}
		dayNs = ns
		if offset != "" {
			if !withTZ {
				return nil, "a timestamp without time zone takes no offset"
			}
			off, ok := filterParseOffset(offset)
			if !ok {
				return nil, "bad UTC offset (use Z, +HH:MM or -HH:MM)"
			}
			offNs = off
		}
	}
	v := big.NewInt(int64(days))
	v.Mul(v, big.NewInt(86400*int64(time.Second)))
	v.Add(v, big.NewInt(dayNs-offNs))
	if offNs != 0 && !timestampInRange(v) {
		// An offset can move a time at the edge of the range out of it in UTC, where
		// it could not be written as a literal again.
		return nil, "the time in UTC must be between 0000-01-01 00:00:00 and 9999-12-31 23:59:59.999999999"
	}
	return v, ""
}

// timestampInRange reports whether ns (nanoseconds since the epoch) falls in the
// years 0000 to 9999, the range a timestamp literal can write.
func timestampInRange(ns *big.Int) bool {
	lo, _ := filterParseDate("0000-01-01")
	hi, _ := filterParseDate("9999-12-31")
	day := big.NewInt(86400 * int64(time.Second))
	min := new(big.Int).Mul(big.NewInt(int64(lo)), day)
	max := new(big.Int).Mul(big.NewInt(int64(hi)+1), day)
	return ns.Cmp(min) >= 0 && ns.Cmp(max) < 0
}

// filterParseOffset parses Z, +HH, +HHMM or +HH:MM into nanoseconds east of UTC.
func filterParseOffset(s string) (int64, bool) {
	if s == "Z" {
		return 0, true
	}
	sign := int64(1)
	switch s[0] {
	case '-':
		sign = -1
	case '+':
	default:
		return 0, false
	}
	s = strings.Replace(s[1:], ":", "", 1)
	if len(s) != 2 && len(s) != 4 {
		return 0, false
	}
	h, ok := filterDigits(s[:2])
	m := 0
	if len(s) == 4 {
		var okm bool
		m, okm = filterDigits(s[2:])
		ok = ok && okm
	}
	if !ok || h > 18 || m > 59 {
		return 0, false
	}
	return sign * int64(h*3600+m*60) * int64(time.Second), true
}

// filterDigits parses a non-empty run of ASCII digits.
func filterDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// filterTypeName spells an Iceberg type for messages, e.g. decimal(10,2).
func filterTypeName(t ibg.Type) string {
	switch t := t.(type) {
	case ibg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale())
	case *ibg.StructType:
		return "struct"
	case *ibg.ListType:
		return "list"
	case *ibg.MapType:
		return "map"
	case nil:
		return "unknown"
	}
	return t.String()
}

// filterTruncate shortens long literals in messages.
func filterTruncate(s string) string {
	const limit = 40
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "..."
	}
	return s
}

// filterQuoteString renders s as a SQL string literal.
func filterQuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// filterQuoteForMsg renders a name or character for messages.
func filterQuoteForMsg(s string) string { return strconv.Quote(filterTruncate(s)) }
