package write

import (
	"context"
	"errors"
	"fmt"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

// PrepareTable checks the destination of a merge-on-read write's spec when the write is constructed, and
// completes spec:
//
//   - an existing table gives the equality columns when spec has none (its identifier
//     fields; neither is an error naming equality_columns), is checked against the
//     delete format (DV needs format version 3; equality deletes need the partition
//     source columns among the keys) and against the sharding;
//   - a missing table needs equality columns, which become its identifier fields
//     (required columns). With rowSchema (the schema of a struct element type, control
//     columns included) it is created now; for Row elements (rowSchema nil) it is
//     created from the first row at run time.
//
// With offline (the write was built WithoutCatalogAtConstruction), PrepareTable
// checks only what rowSchema tells and does not reach the catalog: equality columns
// are then required, and the checks against the table (the delete format, the
// sharding, the images' fit) run in the parse step, on the first row, where a
// problem fails the job; a missing table is created there from the first row.
//
// With rowSchema, the control columns must be there (change_type_column a string,
// sequence_number_column a long; dotted paths name struct fields), only and
// before_field must be records, and the row images (see cdc.Envelope.ImageSchemas,
// after keep or drop) must fit the table.
func PrepareTable(ctx context.Context, spec *Spec, rowSchema *ibg.Schema, offline bool) error {
	rt, err := spec.runtime()
	if err != nil {
		return err
	}
	fail := func(err error) error { return config.WrapOp("write", spec.Table, err) }
	ident, err := catalogs.ParseIdent(spec.Table)
	if err != nil {
		return fail(err)
	}
	// images are the schemas of the rows the write makes of the struct's changes:
	// the row image (only, or the row without its top-level control columns, after
	// keep or drop), and before_field's.
	var images []*ibg.Schema
	var prefixes []string // of images in the rows (see cdc.Envelope.ImagePrefixes)
	var data *ibg.Schema
	if rowSchema != nil {
		env, err := spec.envelope(rt)
		if err != nil {
			return err
		}
		prefixes = env.ImagePrefixes()
		if images, err = env.ImageSchemas(rowSchema); err != nil {
			return fail(err)
		}
		if rt.imageProjection() != nil {
			if images[0], err = rt.proj.Schema(images[0]); err != nil {
				return fail(fmt.Errorf("%w: %w", config.ErrInvalidConfig, err))
			}
		}
		data = images[0]
		// The layout of the table the write would create, checked without the catalog.
		if err := CheckLayout(*spec, data); err != nil {
			return fail(err)
		}
	}
	if offline {
		if len(spec.EqualityColumns) == 0 {
			return fail(config.Errorf(config.KeyEqualityColumns,
				"required when the write does not reach the catalog at construction (WithoutCatalogAtConstruction): set the table's key columns"))
		}
		return nil
	}
	tbl, err := catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, spec.Table, 0)
	switch {
	case errors.Is(err, config.ErrTableNotFound):
		if len(spec.EqualityColumns) == 0 {
			return fail(config.Errorf(config.KeyEqualityColumns,
				"table %s does not exist: creating it needs equality_columns (they become its identifier fields)", spec.Table))
		}
		if data == nil {
			return nil // created from the first row
		}
		sc, err := cdc.CreateSchema(data, spec.EqualityColumns)
		if err != nil {
			return fail(err)
		}
		cat, err := catalogs.Get(ctx, spec.CatalogName, rt.catProps)
		if err != nil {
			return fail(err)
		}
		if tbl, _, err = schema.EnsureTable(ctx, cat, ident, sc, rt.create); err != nil {
			return fail(err)
		}
		catalogs.Invalidate(spec.CatalogName, rt.catProps, spec.Table)
	case err != nil:
		return fail(err)
	}
	if len(spec.EqualityColumns) == 0 {
		sc := tbl.Schema()
		for _, id := range sc.IdentifierFieldIDs {
			name, ok := sc.FindColumnName(id)
			if !ok {
				return fail(fmt.Errorf("identifier field %d is not in the schema", id))
			}
			spec.EqualityColumns = append(spec.EqualityColumns, name)
		}
		if len(spec.EqualityColumns) == 0 {
			return fail(config.Errorf(config.KeyEqualityColumns,
				"not set, and table %s has no identifier fields to default to", spec.Table))
		}
		rt.changes.EqualityColumns = spec.EqualityColumns
	}
	if _, err := spec.parser(rt, tbl.Schema()); err != nil {
		return fail(err)
	}
	if _, err := cdc.ResolveFormat(tbl, config.DeleteFormat(spec.DeleteFormat), spec.EqualityColumns); err != nil {
		return fail(err)
	}
	if _, err := cdc.NewSharder(tbl, spec.EqualityColumns, spec.NumShards, spec.ShardsPerPartition); err != nil {
		return fail(err)
	}
	check := schema.CheckSchema
	if spec.EvolveSchema {
		check = func(tbl, rows *ibg.Schema) error { return schema.CheckEvolvable(tbl, rows, spec.EqualityColumns) }
	}
	spec.NanoTimes = nil
	for i, img := range images {
		if err := check(tbl.Schema(), img); err != nil {
			return fail(fmt.Errorf("%w: %w", config.ErrInvalidConfig, err))
		}
		spec.NanoTimes = append(spec.NanoTimes, row.NanoTimes(prefixes[i], img, tbl.Schema())...)
	}
	return nil
}
