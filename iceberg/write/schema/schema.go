package schema

import (
	"errors"
	"fmt"

	ibg "github.com/apache/iceberg-go"
)

// ErrSchemaMismatch is wrapped when rows cannot be written to a table: a column the
// table lacks, a type that is neither the column's nor losslessly promotable to it, or
// a required column the rows do not have. The message names the column (a dotted path
// for nested fields). Nothing is ever cast silently.
var ErrSchemaMismatch = errors.New("schema mismatch")

// CheckSchema reports whether rows of schema rows (inferred from a Go struct type)
// can be written to a table of schema tbl. Columns match by name. Allowed
// differences are Iceberg's lossless promotions (int to long, float to double,
// decimal(P,S) to decimal(P2,S) with P2 >= P), optional table columns the rows lack
// (written as null), optional row columns for required table columns (a null in such
// a column is caught per row), timestamp for timestamptz or the reverse (also in
// nanoseconds): a Go time value does not say which it is, so the column keeps its
// declared type and the value is written as microseconds (nanoseconds) since the
// epoch, UTC; and micro for nanosecond columns (lossless; a time.Time field keeps its
// nanoseconds there, see row.NanoTimes). Nanoseconds for a micro column stay a
// mismatch (a time.Time for one is checked per value: sub-microsecond digits are
// refused, never truncated).
func CheckSchema(tbl, rows *ibg.Schema) error {
	return checkFields("", tbl.Fields(), rows.Fields())
}

func checkFields(prefix string, tbl, rows []ibg.NestedField) error {
	byName := make(map[string]ibg.NestedField, len(tbl))
	for _, f := range tbl {
		byName[f.Name] = f
	}
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		path := prefix + r.Name
		t, ok := byName[r.Name]
		if !ok {
			return fmt.Errorf("%w: column %q is not in the table", ErrSchemaMismatch, path)
		}
		seen[r.Name] = true
		if err := checkType(path, t.Type, r.Type); err != nil {
			return err
		}
	}
	for _, t := range tbl {
		if t.Required && !seen[t.Name] {
			return fmt.Errorf("%w: required column %q is missing from the rows", ErrSchemaMismatch, prefix+t.Name)
		}
	}
	return nil
}

func checkType(path string, tbl, rows ibg.Type) error {
	mismatch := func() error {
		return fmt.Errorf("%w: column %q is %s in the table, %s in the rows", ErrSchemaMismatch, path, tbl, rows)
	}
	switch t := tbl.(type) {
	case *ibg.StructType:
		r, ok := rows.(*ibg.StructType)
		if !ok {
			return mismatch()
		}
		return checkFields(path+".", t.FieldList, r.FieldList)
	case *ibg.ListType:
		r, ok := rows.(*ibg.ListType)
		if !ok {
			return mismatch()
		}
		// Optional elements for required ones are allowed: a null element is caught
		// per row, like a null in a required column.
		return checkType(path+".element", t.Element, r.Element)
	case *ibg.MapType:
		r, ok := rows.(*ibg.MapType)
		if !ok {
			return mismatch()
		}
		if err := checkType(path+".key", t.KeyType, r.KeyType); err != nil {
			return err
		}
		return checkType(path+".value", t.ValueType, r.ValueType)
	}
	if tbl.Equals(rows) {
		return nil
	}
	switch t := tbl.(type) {
	case ibg.TimestampType, ibg.TimestampTzType:
		switch rows.(type) {
		case ibg.TimestampType, ibg.TimestampTzType:
			return nil
		}
	case ibg.TimestampNsType, ibg.TimestampTzNsType:
		switch rows.(type) {
		case ibg.TimestampNsType, ibg.TimestampTzNsType, ibg.TimestampType, ibg.TimestampTzType:
			return nil
		}
	case ibg.Int64Type:
		if _, ok := rows.(ibg.Int32Type); ok {
			return nil
		}
	case ibg.Float64Type:
		if _, ok := rows.(ibg.Float32Type); ok {
			return nil
		}
	case ibg.DecimalType:
		if r, ok := rows.(ibg.DecimalType); ok && r.Scale() == t.Scale() && r.Precision() <= t.Precision() {
			return nil
		}
	}
	return mismatch()
}
