package schema

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

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
// names the partition_fields entry, the column and the columns there are.
func BuildPartitionSpec(sc *ibg.Schema, fields []config.PartitionField) (ibg.PartitionSpec, error) {
	if len(fields) == 0 {
		return *ibg.UnpartitionedSpec, nil
	}
	opts := make([]ibg.PartitionOption, 0, len(fields))
	for _, f := range fields {
		src, tr, suffix, err := layoutSource(sc, config.KeyPartitionFields, f.String(), f.Source, f.Transform, f.Param)
		if err != nil {
			return ibg.PartitionSpec{}, err
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
// Errors are BuildPartitionSpec's, naming sort_fields.
func BuildSortOrder(sc *ibg.Schema, fields []config.SortField) (table.SortOrder, error) {
	if len(fields) == 0 {
		return table.UnsortedSortOrder, nil
	}
	out := make([]table.SortField, 0, len(fields))
	for _, f := range fields {
		src, tr, _, err := layoutSource(sc, config.KeySortFields, f.String(), f.Source, f.Transform, f.Param)
		if err != nil {
			return table.SortOrder{}, err
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

// layoutSource returns the column of sc that term (an entry of key, partition_fields
// or sort_fields) names as source, with its transform and partition name suffix: a
// missing column is an error naming the closest column and the columns of sc, a
// transform the column's type cannot take one naming the type.
func layoutSource(sc *ibg.Schema, key, term, source, transform string, param int) (ibg.NestedField, ibg.Transform, string, error) {
	src, ok := sc.FindFieldByName(source)
	if !ok {
		var names []string
		for _, f := range sc.Fields() {
			names = append(names, f.Name)
		}
		index, _ := ibg.IndexByName(sc)
		all := slices.Sorted(maps.Keys(index))
		hint := ""
		if near := config.Closest(source, all); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		return ibg.NestedField{}, nil, "", config.Errorf(key, "%s: no column %q in the rows%s; columns: %s",
			term, source, hint, strings.Join(names, ", "))
	}
	tr, suffix, err := transformOf(transform, param)
	if err != nil {
		return ibg.NestedField{}, nil, "", config.Errorf(key, "%s: %w", term, err)
	}
	if !tr.CanTransform(src.Type) {
		return ibg.NestedField{}, nil, "", config.Errorf(key, "%s: transform %s cannot apply to column %q of type %s%s",
			term, tr, source, src.Type, transformTypes(tr))
	}
	return src, tr, suffix, nil
}

// transformTypes names the column types transform tr applies to, as a hint.
func transformTypes(tr ibg.Transform) string {
	switch tr.(type) {
	case ibg.YearTransform, ibg.MonthTransform, ibg.DayTransform:
		return fmt.Sprintf(" (%s takes date and timestamp columns)", tr)
	case ibg.HourTransform:
		return " (hour takes timestamp columns)"
	case ibg.TruncateTransform:
		return " (truncate takes int, long, decimal, string and binary columns)"
	case ibg.BucketTransform:
		return " (bucket takes int, long, decimal, date, time, timestamp, string, uuid, fixed and binary columns)"
	}
	return ""
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
