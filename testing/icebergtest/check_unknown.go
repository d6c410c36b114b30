package icebergtest

import (
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// checkUnknownColumns fails each Parquet data file of files that holds a column for a
// field of sc of type unknown: the Iceberg spec says writers must not write one (readers
// read such a field as nulls). Only the footers of the files are read, and only when sc
// has such a field.
func (c *checker) checkUnknownColumns(fs iceio.IO, sc *ibg.Schema, files []ibg.DataFile) {
	ids := UnknownFieldIDs(sc)
	if len(ids) == 0 {
		return
	}
	for _, df := range files {
		if df.FileFormat() != ibg.ParquetFile {
			continue
		}
		got, err := ParquetFieldIDs(fs, df.FilePath())
		if err != nil {
			c.fail("data file %s: read its Parquet footer: %v", df.FilePath(), err)

			continue
		}
		for _, id := range ids {
			if slices.Contains(got, id) {
				c.fail("data file %s has a column for field %d, of type unknown (the spec says writers omit it)", df.FilePath(), id)
			}
		}
	}
}

// UnknownFieldIDs returns the ids of the fields of sc of type unknown, nested ones
// included, in schema order.
func UnknownFieldIDs(sc *ibg.Schema) []int {
	var ids []int
	var walk func(fs []ibg.NestedField)
	walk = func(fs []ibg.NestedField) {
		for _, f := range fs {
			if _, ok := f.Type.(ibg.UnknownType); ok {
				ids = append(ids, f.ID)
			}
			if nt, ok := f.Type.(ibg.NestedType); ok {
				walk(nt.Fields())
			}
		}
	}
	walk(sc.Fields())
	return ids
}

// ParquetFieldIDs returns the field ids of every column and group of the Parquet file
// at path in fs (read from its footer), in schema order; nodes without an id are left
// out.
func ParquetFieldIDs(fs iceio.IO, path string) ([]int, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, ok := f.(interface {
		io.ReaderAt
		io.Seeker
	})
	if !ok {
		return nil, fmt.Errorf("file %s: no ReadAt", path)
	}
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	var ids []int
	var walk func(g *schema.GroupNode)
	walk = func(g *schema.GroupNode) {
		for i := range g.NumFields() {
			n := g.Field(i)
			if n.FieldID() >= 0 {
				ids = append(ids, int(n.FieldID()))
			}
			if sub, ok := n.(*schema.GroupNode); ok {
				walk(sub)
			}
		}
	}
	walk(pf.MetaData().Schema.Root())
	return ids, nil
}
