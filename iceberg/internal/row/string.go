package row

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	ibg "github.com/apache/iceberg-go"
)

// String formats the row for tests and debugging, e.g. {id: 1, name: "a", tags: [x, y]}.
// Strings are quoted, binary is hex, timestamps are RFC 3339, null is null.
func (r Row) String() string {
	var b strings.Builder
	writeRow(&b, r)
	return b.String()
}

func writeRow(b *strings.Builder, r Row) {
	b.WriteByte('{')
	names := r.Names()
	for i, v := range r.vals() {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(names) {
			b.WriteString(names[i])
		}
		b.WriteString(": ")
		writeValue(b, v)
	}
	b.WriteByte('}')
}

func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(strconv.Quote(x))
	case []byte:
		b.WriteString("0x")
		b.WriteString(hex.EncodeToString(x))
	case ibg.Date:
		b.WriteString(x.ToTime().Format("2006-01-02"))
	case ibg.Time:
		b.WriteString(x.ToTime().Format("15:04:05.000000"))
	case ibg.Timestamp:
		b.WriteString(x.ToTime().Format("2006-01-02T15:04:05.000000Z07:00"))
	case ibg.TimestampNano:
		b.WriteString(x.ToTime().Format("2006-01-02T15:04:05.000000000Z07:00"))
	case Row:
		writeRow(b, x)
	case Variant:
		b.WriteString("variant(")
		b.WriteString(x.JSON())
		b.WriteByte(')')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case []MapEntry:
		b.WriteString("map[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e.Key)
			b.WriteString(": ")
			writeValue(b, e.Value)
		}
		b.WriteByte(']')
	default:
		fmt.Fprint(b, x)
	}
}
