package row

import (
	"slices"

	ibg "github.com/apache/iceberg-go"
)

// A time.Time struct field infers a timestamptz column (microseconds), but a time.Time
// carries nanoseconds: written to an existing timestamp_ns or timestamptz_ns column it
// must keep them. NanoTimes finds such fields by comparing a struct's inferred schema
// with the table's; WithNanoTimes gives the struct's conversion schema those columns
// at nanosecond precision, so that StructValues converts them without loss.

// NanoTimes returns the dotted paths (prefix, then field names, "element" for a list
// element, "value" for a map value) of rows' timestamptz columns, the columns a
// time.Time field infers, whose column of the same path in tbl is timestamp_ns or
// timestamptz_ns.
func NanoTimes(prefix string, rows, tbl *ibg.Schema) []string {
	return nanoFields(prefix, rows.Fields(), tbl.Fields(), nil)
}

func nanoFields(prefix string, rows, tbl []ibg.NestedField, out []string) []string {
	for _, r := range rows {
		j := slices.IndexFunc(tbl, func(f ibg.NestedField) bool { return f.Name == r.Name })
		if j >= 0 {
			out = nanoType(prefix+r.Name, r.Type, tbl[j].Type, out)
		}
	}
	return out
}

func nanoType(path string, rows, tbl ibg.Type, out []string) []string {
	switch r := rows.(type) {
	case ibg.TimestampTzType:
		switch tbl.(type) {
		case ibg.TimestampNsType, ibg.TimestampTzNsType:
			return append(out, path)
		}
	case *ibg.StructType:
		if t, ok := tbl.(*ibg.StructType); ok {
			return nanoFields(path+".", r.FieldList, t.FieldList, out)
		}
	case *ibg.ListType:
		if t, ok := tbl.(*ibg.ListType); ok {
			return nanoType(path+".element", r.Element, t.Element, out)
		}
	case *ibg.MapType:
		if t, ok := tbl.(*ibg.MapType); ok {
			return nanoType(path+".value", r.ValueType, t.ValueType, out)
		}
	}
	return out
}

// WithNanoTimes returns sc with the timestamptz columns at paths (see NanoTimes) made
// timestamptz_ns; sc itself when paths is empty.
func WithNanoTimes(sc *ibg.Schema, paths []string) *ibg.Schema {
	if len(paths) == 0 {
		return sc
	}
	fs := withNanoFields("", sc.Fields(), paths)
	return ibg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, fs...)
}

func withNanoFields(prefix string, fs []ibg.NestedField, paths []string) []ibg.NestedField {
	out := make([]ibg.NestedField, len(fs))
	for i, f := range fs {
		f.Type = withNanoType(prefix+f.Name, f.Type, paths)
		out[i] = f
	}
	return out
}

func withNanoType(path string, t ibg.Type, paths []string) ibg.Type {
	switch x := t.(type) {
	case ibg.TimestampTzType:
		if slices.Contains(paths, path) {
			return ibg.PrimitiveTypes.TimestampTzNs
		}
	case *ibg.StructType:
		return &ibg.StructType{FieldList: withNanoFields(path+".", x.FieldList, paths)}
	case *ibg.ListType:
		c := *x
		c.Element = withNanoType(path+".element", x.Element, paths)
		return &c
	case *ibg.MapType:
		c := *x
		c.ValueType = withNanoType(path+".value", x.ValueType, paths)
		return &c
	}
	return t
}
