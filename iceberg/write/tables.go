package write

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

// The write's destination tables: their creation from the first row or batch, the
// check of a missing table's layout at construction, and schema evolution
// (evolve_schema), on top of package schema.

// CheckLayout checks the partition_fields and sort_fields of spec against sc, the
// schema of the rows a missing table would be created from, without the catalog:
// what schema.EnsureTable would refuse, found when the write is constructed.
func CheckLayout(spec Spec, sc *ibg.Schema) error {
	var errs config.Errors
	if parts, err := config.ParsePartitionFields(spec.PartitionFields); err != nil {
		errs.Add(err)
	} else if _, err := schema.BuildPartitionSpec(sc, parts); err != nil {
		errs.Add(err)
	}
	if sorts, err := config.ParseSortFields(spec.SortFields); err != nil {
		errs.Add(err)
	} else if _, err := schema.BuildSortOrder(sc, sorts); err != nil {
		errs.Add(err)
	}
	return errs.Err()
}

// createTable creates the missing destination table dest (ident) with schema sc, as
// a write does from its first row or batch, and returns it loaded through the
// worker's table cache. A table the configuration cannot create (partition_fields or
// sort_fields that do not fit sc) is an error, as a failure of the catalog is: it
// fails the bundle, and so the job, instead of dead-lettering every row.
func createTable(ctx context.Context, spec *Spec, rt *runtime, dest string, ident table.Identifier, sc *ibg.Schema) (*table.Table, error) {
	cat, err := spec.catalog(ctx, rt)
	if err != nil {
		return nil, config.WrapOp("write", dest, err)
	}
	_, created, err := schema.EnsureTable(ctx, cat, ident, sc, rt.create)
	if err != nil {
		return nil, config.WrapOp("write", dest, err)
	}
	if created {
		log.Infof(ctx, "iceberg: write %s: created table", dest)
	}
	catalogs.Invalidate(spec.CatalogName, rt.catProps, dest)
	tbl, err := catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, dest, rt.refresh)
	return tbl, config.WrapOp("write", dest, err)
}

// evolveFor evolves table dest, which a writer holds as cached, so that it takes r,
// which did not fit cached with rowErr: it plans against cached first, so that a row
// whose fault evolution cannot mend costs no catalog call and keeps its own error.
// tbl is the table with its new schema; when it is nil, reason is why r goes to the
// dead letter output (rowErr, or why evolution refused r), unless err, a failure of
// the catalog, is set.
func evolveFor(ctx context.Context, spec *Spec, rt *runtime, dest string, cached *table.Table, r row.Row, rowErr error) (tbl *table.Table, reason, err error) {
	changes, perr := schema.PlanEvolution(cached.Schema(), r, spec.EqualityColumns)
	if perr != nil {
		return nil, config.WrapOp("write", dest, perr), nil
	}
	if len(changes) == 0 {
		return nil, rowErr, nil
	}
	cat, err := spec.catalog(ctx, rt)
	if err != nil {
		return nil, nil, config.WrapOp("write", dest, err)
	}
	tbl, reject, err := schema.EvolveTable(ctx, cat, cached.Identifier(), r, spec.EqualityColumns)
	if err != nil || reject != nil {
		return nil, reject, err
	}
	catalogs.Invalidate(spec.CatalogName, rt.catProps, dest)
	if tbl.Schema().ID == cached.Schema().ID {
		return nil, rowErr, nil
	}
	return tbl, nil, nil
}
