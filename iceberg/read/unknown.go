package read

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
)

// unknownColumns returns the columns a filtered scan of cols (nil: every column) must
// leave out, and the columns it selects instead: iceberg-go v0.7.0's scan with a row
// filter fails ("nil pointer dereference" in its schema visitor) when it reads a
// top-level column of type unknown from a data file that holds a column for it (as
// iceberg-go's own writer and pyarrow write; icebeam's writers do not, as the spec
// says, see datafile.FileTable). Such a column is null in every row, so the read
// selects the others and adds it back as a null column (withNullColumns). Without a
// filter, or without unknown columns, it returns nil and cols.
func unknownColumns(sc *ibg.Schema, filter string, cols []string) (unknown, selected []string) {
	if filter == "" {
		return nil, cols
	}
	for _, f := range sc.Fields() {
		if _, ok := f.Type.(ibg.UnknownType); ok && (cols == nil || slices.Contains(cols, f.Name)) {
			unknown = append(unknown, f.Name)
		}
	}
	if unknown == nil {
		return nil, cols
	}
	if cols == nil {
		for _, f := range sc.Fields() {
			cols = append(cols, f.Name)
		}
	}
	for _, c := range cols {
		if !slices.Contains(unknown, c) {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 { // nothing else to read: let the scan select them
		return nil, cols
	}
	return unknown, selected
}

// withNullColumns returns rec with the unknown columns added back as null columns,
// in the table's column order (columns not in the table, such as row lineage, stay
// after them as the scan put them). A new batch is the caller's to release; rec stays
// the caller's either way.
func withNullColumns(sc *ibg.Schema, unknown []string, rec arrow.RecordBatch) arrow.RecordBatch {
	if len(unknown) == 0 {
		return rec
	}
	n := int(rec.NumRows())
	rs := rec.Schema()
	var fields []arrow.Field
	var cols []arrow.Array
	for _, f := range sc.Fields() {
		if slices.Contains(unknown, f.Name) {
			fields = append(fields, arrow.Field{Name: f.Name, Type: arrow.Null, Nullable: true})
			cols = append(cols, array.MakeArrayOfNull(memory.DefaultAllocator, arrow.Null, n))
			continue
		}
		if idx := rs.FieldIndices(f.Name); len(idx) == 1 {
			fields = append(fields, rs.Field(idx[0]))
			c := rec.Column(idx[0])
			c.Retain()
			cols = append(cols, c)
		}
	}
	for i, f := range rs.Fields() {
		if _, ok := sc.FindFieldByName(f.Name); !ok {
			fields = append(fields, f)
			c := rec.Column(i)
			c.Retain()
			cols = append(cols, c)
		}
	}
	md := rs.Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return out
}
