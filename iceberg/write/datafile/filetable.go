package datafile

import (
	"fmt"
	"maps"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FileTable returns the table to give iceberg-go's file writers (table.WriteRecords,
// table.ExecuteCompactionGroup) to write data files of tbl: tbl itself, or a copy,
// never committed, whose properties are overlaid with props and whose current schema
// is fileSchema's. iceberg-go writes a Parquet column for every field of the table's
// current schema, an unknown one too (as INT32 annotated Null), while the Iceberg spec
// says writers must not write a column for an unknown field: readers read it as nulls,
// and Iceberg 1.12's vectorized Spark reader fails on such a column. Batches that still
// hold columns for unknown fields can be written with the copy: the writer projects
// them onto its schema by field id.
func FileTable(tbl *table.Table, props map[string]string) (*table.Table, error) {
	sc, pruned := fileSchema(tbl.Metadata())
	if !pruned && len(props) == 0 {
		return tbl, nil
	}
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if len(props) > 0 {
		merged := maps.Clone(tbl.Properties())
		if merged == nil {
			merged = ibg.Properties{}
		}
		maps.Copy(merged, props)
		if err := b.SetProperties(merged); err != nil {
			return nil, fmt.Errorf("write_properties: %w", err)
		}
	}
	if pruned {
		if err := b.AddSchema(sc); err != nil {
			return nil, fmt.Errorf("data file schema: %w", err)
		}
		if err := b.SetCurrentSchemaID(-1); err != nil {
			return nil, fmt.Errorf("data file schema: %w", err)
		}
	}
	meta, err := b.Build()
	if err != nil {
		if len(props) > 0 {
			return nil, fmt.Errorf("write_properties: %w", err)
		}
		return nil, fmt.Errorf("data file schema: %w", err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// fileSchema returns the schema of the data files written for meta's current schema:
// that schema without its fields of type unknown, at any depth (struct fields in lists
// and maps too), and true; or the schema itself and false when it has none to leave
// out. A field that the current partition spec or sort order reads stays (iceberg-go
// computes partition values and sort keys from the file's columns), and so does the
// last field of a struct (Parquet has no empty group). The returned schema is new: its
// id is for the caller to set.
func fileSchema(meta table.Metadata) (*ibg.Schema, bool) {
	sc := meta.CurrentSchema()
	keep := map[int]bool{}
	spec := meta.PartitionSpec()
	for _, f := range spec.Fields() {
		for _, id := range f.SourceIDs {
			keep[id] = true
		}
	}
	for _, f := range meta.SortOrder().Fields() {
		for _, id := range f.SourceIDs {
			keep[id] = true
		}
	}
	fields, pruned := withoutUnknown(sc.Fields(), keep)
	if !pruned {
		return sc, false
	}
	return ibg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, fields...), true
}

// withoutUnknown returns fields without those of type unknown that keep does not
// hold, recursively, and whether it left any out. It keeps the last field rather than
// return none.
func withoutUnknown(fields []ibg.NestedField, keep map[int]bool) ([]ibg.NestedField, bool) {
	out := make([]ibg.NestedField, 0, len(fields))
	pruned := false
	for _, f := range fields {
		if _, ok := f.Type.(ibg.UnknownType); ok && !keep[f.ID] {
			pruned = true
			continue
		}
		if t, ok := typeWithoutUnknown(f.Type, keep); ok {
			f.Type, pruned = t, true
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return fields, false
	}
	return out, pruned
}

// typeWithoutUnknown returns t without its nested fields of type unknown (see
// withoutUnknown) and true, or nil and false when t has none.
func typeWithoutUnknown(t ibg.Type, keep map[int]bool) (ibg.Type, bool) {
	switch t := t.(type) {
	case *ibg.StructType:
		if fs, ok := withoutUnknown(t.FieldList, keep); ok {
			return &ibg.StructType{FieldList: fs}, true
		}
	case *ibg.ListType:
		if el, ok := typeWithoutUnknown(t.Element, keep); ok {
			c := *t
			c.Element = el
			return &c, true
		}
	case *ibg.MapType:
		k, kok := typeWithoutUnknown(t.KeyType, keep)
		v, vok := typeWithoutUnknown(t.ValueType, keep)
		if kok || vok {
			c := *t
			if kok {
				c.KeyType = k
			}
			if vok {
				c.ValueType = v
			}
			return &c, true
		}
	}
	return nil, false
}
