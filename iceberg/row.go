package iceberg

import (
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder" // Row's Beam coder
)

// Row is a dynamic row: column names and values typed after Iceberg's types. It is
// what Read emits by default and what Write accepts besides struct types. Rows of one
// batch share a RowSchema. Its Beam coder is registered by this package.
//
// Value Go types by Iceberg type (nil is null): boolean bool; int int32; long int64;
// float float32; double float64; decimal ibg.Decimal; date ibg.Date; time ibg.Time
// (microseconds); timestamp and timestamptz ibg.Timestamp (microseconds, UTC for tz);
// timestamp_ns ibg.TimestampNano; string string; uuid uuid.UUID; fixed and binary
// []byte; list []any; map []MapEntry; struct Row; variant Variant; unknown always nil.
//
// Its methods (Row is an alias of the internal type the read and write stages use,
// so that no stage converts rows between a public and an internal type):
//
//	Schema() *RowSchema            // the shared column names and types
//	Len() int                      // the number of columns
//	Names() []string               // the column names
//	Values() []any                 // the values, in column order (do not modify)
//	Value(i int) any               // the value of column i
//	Get(name string) (any, bool)   // the value of a column by name
//	String() string                // {name=value, ...}, strings quoted
type Row = row.Row

// RowSchema names the columns of rows and, when known, their Iceberg types. Its
// methods:
//
//	Names() []string       // the column names
//	Types() []ibg.Type     // the Iceberg types, nil where unknown
//	Len() int              // the number of columns
//	Index(name string) int // the position of a column, -1 when absent
//	Required(i int) bool   // whether column i is declared required (never null)
//
// A write that creates its table makes a column required when the rows' RowSchema
// declares it so: schemas of RowSchemaOf from required fields, and of structs
// converted to rows (non-pointer fields). NewRowSchema, NewRow and the rows Read
// emits declare every column nullable.
type RowSchema = row.Schema

// MapEntry is one key/value pair of an Iceberg map value in a Row.
type MapEntry = row.MapEntry

// Variant is the value of an Iceberg variant column (format version 3): one
// semi-structured value (null, boolean, number, string, binary, date, time, timestamp,
// UUID, array or object) in the Parquet variant binary encoding. A struct field of type
// Variant maps to an optional variant column (the zero Variant is null). Build one
// with NewVariant, ParseVariantJSON or VariantFromBytes; a write also converts the Go
// values NewVariant takes when the column is a variant. Its methods (Variant is an
// alias of the type the read and write stages use):
//
//	Value() any                          // as Go values: nil, bool, int64, float32, float64, string, []byte,
//	                                     // uuid.UUID, ibg.Decimal, ibg.Date, ibg.Time, ibg.Timestamp,
//	                                     // ibg.TimestampNano, time.Time (with time zone), []any, map[string]any
//	JSON() string                        // as JSON, keys sorted (also String() and MarshalJSON())
//	Equal(w Variant) bool                // same value (integers of any width by value)
//	IsZero() bool                        // the zero Variant: no value
//	Metadata() []byte                    // the encoded metadata (do not modify)
//	Bytes() []byte                       // the encoded value (do not modify)
//	VariantValue() variant.Value         // arrow-go's parquet/variant value
type Variant = row.Variant

// NewVariant encodes a Go value as a Variant: nil (a variant null, not a null column
// value), bool, integers, float32, float64, json.Number, string, []byte, uuid.UUID,
// ibg.Decimal, ibg.Date, ibg.Time, ibg.Timestamp and ibg.TimestampNano (without time
// zone), time.Time (with time zone, UTC), Variant, slices (arrays), maps with string
// keys, []MapEntry with string keys and Row (objects), at any depth.
func NewVariant(v any) (Variant, error) { return row.NewVariant(v) }

// ParseVariantJSON returns the Variant of JSON text (numbers become integers, decimals
// or doubles as written; a duplicate key is an error).
func ParseVariantJSON(s string) (Variant, error) { return row.ParseVariantJSON(s) }

// VariantFromBytes returns the Variant of encoded metadata and value bytes (the Parquet
// variant encoding), checking them.
func VariantFromBytes(metadata, value []byte) (Variant, error) {
	return row.VariantFromBytes(metadata, value)
}

// NewRow returns a row with the given column names and values; column types are
// inferred from the Go values when the row creates a table (the README's type
// inference table: ibg.Timestamp is timestamp, never timestamptz), and an existing
// table's columns keep their declared types.
func NewRow(names []string, values []any) Row { return row.New(names, values) }

// NewRowSchema returns a schema with column names and Iceberg types (types may be
// nil); every column is nullable (a table created from its rows makes them optional).
func NewRowSchema(names []string, types []ibg.Type) *RowSchema { return row.NewSchema(names, types) }

// RowSchemaOf returns the schema of rows with sc's top-level columns: their names,
// Iceberg types and required flags (a table created from its rows makes the same
// columns required).
func RowSchemaOf(sc *ibg.Schema) *RowSchema { return row.SchemaOf(sc) }

// RowOf returns a row of schema s with values, one per column of s.
func RowOf(s *RowSchema, values []any) Row { return row.Of(s, values) }
