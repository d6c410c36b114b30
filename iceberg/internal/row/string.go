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
	names, vals := r.Names(), r.vals()
	writeJoined(b, "{", ", ", "}", len(vals), func(i int) {
		if i < len(names) {
			b.WriteString(names[i])
		}
		b.WriteString(": ")
		writeValue(b, vals[i])
	})
}

// writeJoined writes open, then each(0) to each(n-1) separated by sep, then close.
func writeJoined(b *strings.Builder, open, sep, close string, n int, each func(i int)) {
	b.WriteString(open)
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		each(i)
	}
	b.WriteString(close)
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
		writeJoined(b, "[", ", ", "]", len(x), func(i int) { writeValue(b, x[i]) })
	case []MapEntry:
		writeJoined(b, "map[", ", ", "]", len(x), func(i int) {
			writeValue(b, x[i].Key)
			b.WriteString(": ")
			writeValue(b, x[i].Value)
		})
	default:
		fmt.Fprint(b, x)
	}
}
