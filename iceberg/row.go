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
// []byte; list []any; map []MapEntry; struct Row.
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
type RowSchema = row.Schema

// MapEntry is one key/value pair of an Iceberg map value in a Row.
type MapEntry = row.MapEntry

// NewRow returns a row with the given column names and values; column types are
// inferred from the Go values when the row creates a table (the README's type
// inference table: ibg.Timestamp is timestamp, never timestamptz), and an existing
// table's columns keep their declared types.
func NewRow(names []string, values []any) Row { return row.New(names, values) }

// NewRowSchema returns a schema with column names and Iceberg types (types may be nil).
func NewRowSchema(names []string, types []ibg.Type) *RowSchema { return row.NewSchema(names, types) }

// RowOf returns a row of schema s with values, one per column of s.
func RowOf(s *RowSchema, values []any) Row { return row.Of(s, values) }
