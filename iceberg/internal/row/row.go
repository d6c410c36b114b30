package row

import (
	"sync"

	ibg "github.com/apache/iceberg-go"
)

// Row is one dynamic row: column names and values typed after Iceberg's types.
//
// Value Go types by Iceberg type (nil is null):
//
//	boolean bool; int int32; long int64; float float32; double float64;
//	decimal(P,S) ibg.Decimal; date ibg.Date; time ibg.Time (micros);
//	timestamp, timestamptz ibg.Timestamp (micros since epoch, UTC for tz);
//	timestamp_ns, timestamptz_ns ibg.TimestampNano; string string; uuid uuid.UUID;
//	fixed[L], binary []byte; list []any; map []MapEntry; struct Row.
//
// Rows of one batch share a *Schema. A row read from Arrow (ArrowReader.AppendViews)
// is a view of one record of the batch: its values are converted from the Arrow
// columns when they are first asked for, so a row that is only counted, filtered on
// one column or passed along costs no boxed values. A view keeps its batch alive.
// The zero Row has no columns.
type Row struct {
	schema *Schema
	values []any // nil for a view: use vals
	view   *view // non-nil: the row is record i of view's batch
	i      int
}

// vals returns the row's values, converting a view's from Arrow on first use.
func (r Row) vals() []any {
	if r.view != nil {
		return r.view.values(r.i)
	}
	return r.values
}

// MapEntry is one key/value pair of an Iceberg map value. Maps are slices of entries so
// that their order, and so their encoding, is deterministic.
type MapEntry struct {
	Key   any
	Value any
}

// Schema names the columns of a Row and, when known, their Iceberg types. It is
// immutable once built and shared by every row of a batch.
type Schema struct {
	names    []string
	types    []ibg.Type // nil entries when a type is unknown (rows built by hand)
	required []bool     // nil: no column is declared required
	index    map[string]int
	once     sync.Once
	cached   []byte // encoded form, built lazily by the coder
	plan     *plan  // per-column codec plan, built with cached
	err      error  // error building cached, if any
}

// NewSchema returns a schema with the given column names and Iceberg types. types may be
// nil (types unknown) or have one entry per name.
func NewSchema(names []string, types []ibg.Type) *Schema {
	s := &Schema{names: names, types: types, index: make(map[string]int, len(names))}
	if s.types == nil {
		s.types = make([]ibg.Type, len(names))
	}
	for i, n := range names {
		if _, dup := s.index[n]; !dup {
			s.index[n] = i
		}
	}
	return s
}

// NewRequiredSchema is NewSchema with the columns whose required entry is true
// declared required (see Required); required may be nil (none) or have one entry per
// name, and a column of unknown type is never required.
func NewRequiredSchema(names []string, types []ibg.Type, required []bool) *Schema {
	s := NewSchema(names, types)
	for i, req := range required {
		if req && s.types[i] != nil {
			if s.required == nil {
				s.required = make([]bool, len(names))
			}
			s.required[i] = true
		}
	}
	return s
}

// SchemaOf returns the Schema of sc's top-level columns: their names, Iceberg types
// and which are required.
func SchemaOf(sc *ibg.Schema) *Schema { return fieldsSchema(sc.Fields()) }

// fieldsSchema returns the Schema of fields fs: their names, types and required flags.
func fieldsSchema(fs []ibg.NestedField) *Schema {
	names := make([]string, len(fs))
	types := make([]ibg.Type, len(fs))
	required := make([]bool, len(fs))
	for i, f := range fs {
		names[i], types[i], required[i] = f.Name, f.Type, f.Required
	}
	return NewRequiredSchema(names, types, required)
}

// Names returns the column names. Do not modify the result.
func (s *Schema) Names() []string { return s.names }

// Types returns the Iceberg types (entries may be nil). Do not modify the result.
func (s *Schema) Types() []ibg.Type { return s.types }

// Len returns the number of columns.
func (s *Schema) Len() int { return len(s.names) }

// Required reports whether column i is declared required (never null): a column of a
// schema built by SchemaOf from a required field, such as a struct's non-pointer
// field. A table created from such rows makes the column required.
func (s *Schema) Required(i int) bool { return s.required != nil && s.required[i] }

// Index returns the position of column name, or -1.
func (s *Schema) Index(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// New returns a row with the given column names and values (len(values) must equal
// len(names)); column types are unknown.
func New(names []string, values []any) Row {
	return Row{schema: NewSchema(names, nil), values: values}
}

// Of returns a row of schema s with values (len(values) must equal s.Len()).
func Of(s *Schema, values []any) Row { return Row{schema: s, values: values} }

// Schema returns the row's schema (nil for the zero Row).
func (r Row) Schema() *Schema { return r.schema }

// Len returns the number of columns.
func (r Row) Len() int {
	if r.view != nil {
		return r.schema.Len()
	}
	return len(r.values)
}

// Names returns the column names. Do not modify the result.
func (r Row) Names() []string {
	if r.schema == nil {
		return nil
	}
	return r.schema.names
}

// Values returns the values in column order. Do not modify the result.
func (r Row) Values() []any { return r.vals() }

// Value returns the value of column i.
func (r Row) Value(i int) any {
	if r.view != nil {
		if vals := r.view.cached(r.i); vals != nil {
			return vals[i]
		}
		return r.view.gets[i](r.i)
	}
	return r.values[i]
}

// Get returns the value of column name and whether the column exists.
func (r Row) Get(name string) (any, bool) {
	if r.schema == nil {
		return nil, false
	}
	i := r.schema.Index(name)
	if i < 0 {
		return nil, false
	}
	return r.Value(i), true
}
