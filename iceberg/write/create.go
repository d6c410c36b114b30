package write

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// DefaultFormatVersion is the format version of tables the write creates unless
// table_properties say otherwise.
const DefaultFormatVersion = "3"

// CreateOptions describe tables the write creates.
type CreateOptions struct {
	// PartitionFields is the partition spec (parsed partition_fields).
	PartitionFields []config.PartitionField
	// SortFields is the sort order (parsed sort_fields).
	SortFields []config.SortField
	// Properties are the table properties (table_properties); format-version defaults
	// to DefaultFormatVersion.
	Properties map[string]string
}

// EnsureTable loads ident from cat, or creates it with schema sc and opts when it does
// not exist (creating its namespace too). created reports whether this call created it.
// A concurrent creation by another worker is not an error: the table is loaded.
func EnsureTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, sc *ibg.Schema, opts CreateOptions) (tbl *table.Table, created bool, err error) {
	name := strings.Join(ident, ".")
	tbl, err = cat.LoadTable(ctx, ident)
	if err == nil {
		return tbl, false, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, false, fmt.Errorf("iceberg: load %s: %w", name, err)
	}
	spec, err := BuildPartitionSpec(sc, opts.PartitionFields)
	if err != nil {
		return nil, false, fmt.Errorf("iceberg: create %s: %w", name, err)
	}
	order, err := BuildSortOrder(sc, opts.SortFields)
	if err != nil {
		return nil, false, fmt.Errorf("iceberg: create %s: %w", name, err)
	}
	props := ibg.Properties{table.PropertyFormatVersion: DefaultFormatVersion}
	maps.Copy(props, opts.Properties)

	if ns := catalog.NamespaceFromIdent(ident); len(ns) > 0 {
		exists, err := cat.CheckNamespaceExists(ctx, ns)
		if err != nil {
			return nil, false, fmt.Errorf("iceberg: create %s: namespace: %w", name, err)
		}
		if !exists {
			if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
				return nil, false, fmt.Errorf("iceberg: create %s: namespace: %w", name, err)
			}
		}
	}
	tbl, err = cat.CreateTable(ctx, ident, sc, catalog.WithPartitionSpec(&spec),
		catalog.WithSortOrder(order), catalog.WithProperties(props))
	if err != nil {
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			if tbl, err = cat.LoadTable(ctx, ident); err == nil {
				return tbl, false, nil
			}
		}
		return nil, false, fmt.Errorf("iceberg: create %s: %w", name, err)
	}
	return tbl, true, nil
}

// BuildPartitionSpec builds the partition spec of fields against sc. Partition field
// names follow Iceberg Java: the source name for identity, then <source>_bucket,
// _trunc, _year, _month, _day, _hour and _null. An unknown column, or a transform the
// column's type does not support, is an error wrapping config.ErrInvalidConfig that
// names the partition_fields entry.
func BuildPartitionSpec(sc *ibg.Schema, fields []config.PartitionField) (ibg.PartitionSpec, error) {
	if len(fields) == 0 {
		return *ibg.UnpartitionedSpec, nil
	}
	opts := make([]ibg.PartitionOption, 0, len(fields))
	for _, f := range fields {
		src, ok := sc.FindFieldByName(f.Source)
		if !ok {
			return ibg.PartitionSpec{}, config.Errorf(config.KeyPartitionFields, "%s: no column %q", f, f.Source)
		}
		tr, suffix, err := transformOf(f.Transform, f.Param)
		if err != nil {
			return ibg.PartitionSpec{}, config.Errorf(config.KeyPartitionFields, "%s: %w", f, err)
		}
		if !tr.CanTransform(src.Type) {
			return ibg.PartitionSpec{}, config.Errorf(config.KeyPartitionFields, "%s: transform %s cannot apply to column %q of type %s",
				f, tr, f.Source, src.Type)
		}
		opts = append(opts, ibg.AddPartitionFieldBySourceID(src.ID, f.Source+suffix, tr, sc, nil))
	}
	spec, err := ibg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return ibg.PartitionSpec{}, &config.ConfigError{Key: config.KeyPartitionFields, Err: err}
	}
	return spec, nil
}

// BuildSortOrder builds the sort order of fields against sc (unsorted when empty).
func BuildSortOrder(sc *ibg.Schema, fields []config.SortField) (table.SortOrder, error) {
	if len(fields) == 0 {
		return table.UnsortedSortOrder, nil
	}
	out := make([]table.SortField, 0, len(fields))
	for _, f := range fields {
		src, ok := sc.FindFieldByName(f.Source)
		if !ok {
			return table.SortOrder{}, config.Errorf(config.KeySortFields, "no column %q", f.Source)
		}
		tr, _, err := transformOf(f.Transform, f.Param)
		if err != nil {
			return table.SortOrder{}, config.Errorf(config.KeySortFields, "%s: %w", f.Source, err)
		}
		if !tr.CanTransform(src.Type) {
			return table.SortOrder{}, config.Errorf(config.KeySortFields, "transform %s cannot apply to column %q of type %s",
				tr, f.Source, src.Type)
		}
		// config.SortField holds the resolved null order (ParseSortField applies the
		// defaults: first for asc, last for desc).
		sf := table.SortField{SourceIDs: []int{src.ID}, Transform: tr, Direction: table.SortASC, NullOrder: table.NullsLast}
		if f.Descending {
			sf.Direction = table.SortDESC
		}
		if f.NullsFirst {
			sf.NullOrder = table.NullsFirst
		}
		out = append(out, sf)
	}
	order, err := table.NewSortOrder(table.InitialSortOrderID, out)
	if err != nil {
		return table.SortOrder{}, &config.ConfigError{Key: config.KeySortFields, Err: err}
	}
	return order, nil
}

// transformOf maps a parsed transform to iceberg-go's and the partition name suffix.
func transformOf(name string, param int) (ibg.Transform, string, error) {
	switch name {
	case config.TransformIdentity, "":
		return ibg.IdentityTransform{}, "", nil
	case config.TransformBucket:
		return ibg.BucketTransform{NumBuckets: param}, "_bucket", nil
	case config.TransformTruncate:
		return ibg.TruncateTransform{Width: param}, "_trunc", nil
	case config.TransformYear:
		return ibg.YearTransform{}, "_year", nil
	case config.TransformMonth:
		return ibg.MonthTransform{}, "_month", nil
	case config.TransformDay:
		return ibg.DayTransform{}, "_day", nil
	case config.TransformHour:
		return ibg.HourTransform{}, "_hour", nil
	case config.TransformVoid:
		return ibg.VoidTransform{}, "_null", nil
	}
	return nil, "", fmt.Errorf("%w: transform %q", config.ErrUnsupported, name)
}

// createTable creates the missing destination table dest (ident) with schema sc, as
// a write does from its first row or batch, and returns it loaded through the
// worker's table cache. A non-nil reject is why what was to create it goes to the
// dead letter output (an invalid create option); err is a failure of the catalog.
func createTable(ctx context.Context, spec *Spec, rt *runtime, dest string, ident table.Identifier, sc *ibg.Schema) (tbl *table.Table, reject, err error) {
	cat, err := spec.catalog(ctx, rt)
	if err != nil {
		return nil, nil, config.WrapOp("write", dest, err)
	}
	_, created, err := EnsureTable(ctx, cat, ident, sc, rt.create)
	if err != nil {
		if errors.Is(err, config.ErrInvalidConfig) {
			return nil, err, nil
		}
		return nil, nil, config.WrapOp("write", dest, err)
	}
	if created {
		log.Infof(ctx, "iceberg: write %s: created table", dest)
	}
	catalogs.Invalidate(spec.CatalogName, rt.catProps, dest)
	tbl, err = catalogs.LoadTable(ctx, spec.CatalogName, rt.catProps, dest, rt.refresh)
	return tbl, nil, config.WrapOp("write", dest, err)
}
