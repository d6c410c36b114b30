package interop

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
)

// Null is the canonical text of a null value.
const Null = `\N`

// Expected describes the tables one writer made: what every reader must see.
// It is the JSON file that the Python checkers read (expected/<writer>.json).
type Expected struct {
	// Writer names the program that wrote the tables ("spark", "icebergtest", "icebeam").
	Writer    string     `json:"writer"`
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one table and the answers every reader must give for it.
type Scenario struct {
	Name          string `json:"name"`
	Table         string `json:"table"` // namespace.table in catalog "local"
	FormatVersion int    `json:"format_version"`
	// Columns in table order with their Iceberg types (long, int, string,
	// decimal(10,2), double, date, timestamptz, boolean).
	Columns []Column `json:"columns"`
	// Count and Checksum cover every column of every live row.
	Count    int64  `json:"count"`
	Checksum string `json:"checksum"`
	// Queries are filtered, projected reads.
	Queries []Query `json:"queries"`
	// Lookups are point reads by id; Row is nil when the id must be absent.
	Lookups []Lookup `json:"lookups"`
	// Lineage, when set, reads id and the row lineage columns (_row_id,
	// _last_updated_sequence_number) of every live row; readers that support
	// row lineage (Spark, icebeam, iceberg-go) check it.
	Lineage *Query `json:"lineage,omitempty"`
	// DeleteFormats lists the file formats (PUFFIN, PARQUET) and contents
	// ("position", "equality") of the live delete files, as
	// "FORMAT/content" strings that Spark's .delete_files must show.
	DeleteFormats []string `json:"delete_formats"`
	// Catalog overrides the shared SQLite catalog (for REST/PostgreSQL).
	Notes string `json:"notes,omitempty"`
}

// Column is a column name and its Iceberg type string.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Query is a filtered, projected read with its answer.
type Query struct {
	Name     string   `json:"name"`
	Filter   string   `json:"filter"`
	Keep     []string `json:"keep"`
	Count    int64    `json:"count"`
	Checksum string   `json:"checksum"`
}

// Lookup is a point read: the canonical row of id, or nil when absent.
type Lookup struct {
	ID  int64   `json:"id"`
	Row *string `json:"row"`
}

// Result is one check of one reader on one scenario.
type Result struct {
	Engine   string `json:"engine"`
	Writer   string `json:"writer"`
	Scenario string `json:"scenario"`
	Check    string `json:"check"`
	Expected string `json:"expected"`
	Seen     string `json:"seen"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
}

// WriteJSON writes v as indented JSON to path, creating its folder.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads JSON from path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Checksum accumulates the order-independent checksum of canonical rows:
// the sum, modulo 2^64, of the first 8 bytes (big endian) of each row's
// SHA-256. checks.py computes the same.
type Checksum struct {
	N   int64
	sum uint64
}

// Add adds one canonical row.
func (c *Checksum) Add(row string) {
	h := sha256.Sum256([]byte(row))
	c.sum += binary.BigEndian.Uint64(h[:8])
	c.N++
}

// String returns the checksum as a decimal string.
func (c *Checksum) String() string { return strconv.FormatUint(c.sum, 10) }

// RowHash returns one row's contribution to a Checksum.
func RowHash(row string) uint64 {
	h := sha256.Sum256([]byte(row))
	return binary.BigEndian.Uint64(h[:8])
}

// CanonicalRow joins canonical values with "|".
func CanonicalRow(vals []string) string { return strings.Join(vals, "|") }

// Canonical formats one value of an Iceberg-typed column the way
// checks.py does: integers in decimal, strings escaped, decimals with
// their scale, floats and doubles with 4 decimals, dates as YYYY-MM-DD,
// timestamps as microseconds since the epoch (nanoseconds for timestamp_ns),
// times as microseconds since midnight, booleans as true/false, uuids in their
// 36-character form, binary and fixed in lowercase hex, lists as [a,b], maps as
// {k:v,...} sorted by key text, structs as (a,b), variants as their JSON text with
// keys sorted, null as \N.
func Canonical(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return Null, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case string:
		return escape(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', 4, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', 4, 64), nil
	case ibg.Decimal:
		return formatDecimal(x.Val.BigInt(), x.Scale), nil
	case ibg.Date:
		return time.Unix(int64(x)*86400, 0).UTC().Format("2006-01-02"), nil
	case ibg.Time:
		return strconv.FormatInt(int64(x), 10), nil
	case ibg.Timestamp:
		return strconv.FormatInt(int64(x), 10), nil
	case ibg.TimestampNano:
		return strconv.FormatInt(int64(x), 10), nil
	case time.Time:
		return strconv.FormatInt(x.UnixMicro(), 10), nil
	case uuid.UUID:
		return x.String(), nil
	case []byte:
		return hex.EncodeToString(x), nil
	case []any:
		return canonicalSeq("[", "]", x)
	case []iceberg.MapEntry:
		out := make([]string, len(x))
		for i, e := range x {
			k, err := Canonical(e.Key)
			if err != nil {
				return "", err
			}
			v, err := Canonical(e.Value)
			if err != nil {
				return "", err
			}
			out[i] = k + ":" + v
		}
		slices.Sort(out)
		return "{" + strings.Join(out, ",") + "}", nil
	case interface{ JSON() string }: // a variant (iceberg.Variant): its JSON text, keys sorted
		return escape(x.JSON()), nil
	case interface{ Values() []any }: // a struct value (iceberg.Row)
		return canonicalSeq("(", ")", x.Values())
	default:
		return "", fmt.Errorf("interop: no canonical form for %T", v)
	}
}

// canonicalSeq formats vals comma-separated between open and close.
func canonicalSeq(open, close string, vals []any) (string, error) {
	out := make([]string, len(vals))
	for i, v := range vals {
		s, err := Canonical(v)
		if err != nil {
			return "", err
		}
		out[i] = s
	}
	return open + strings.Join(out, ",") + close, nil
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`).Replace(s)
}

// formatDecimal formats unscaled/10^scale with exactly scale digits.
func formatDecimal(unscaled *big.Int, scale int) string {
	neg := unscaled.Sign() < 0
	digits := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		for len(digits) <= scale {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		digits = "-" + digits
	}
	return digits
}
