package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/read"
)

// Read reads an Iceberg table: the rows of its current snapshot (or of the snapshot,
// time or branch the config names) that match cfg.Filter, with cfg.Keep / cfg.Drop
// applied, deletion vectors, position deletes and equality deletes applied. It emits
// Row values, or values of the struct type given with WithOutputType.
//
// Read loads the table at construction to validate the config against its schema; it
// panics on any problem. Use TryRead to get the error instead.
func Read(s beam.Scope, cfg ReadConfig, opts ...ReadOption) beam.PCollection {
	out, err := TryRead(s, cfg, opts...)
	if err != nil {
		panic(err)
	}
	return out
}

// TryRead is Read returning an error instead of panicking. Every problem found at
// construction is reported at once: unknown or contradictory keys, unknown columns in
// keep, drop or filter, a malformed filter (with its position), a wrong literal type,
// a missing table or an unreachable catalog.
func TryRead(s beam.Scope, cfg ReadConfig, opts ...ReadOption) (beam.PCollection, error) {
	cfg = cfg.With(opts...)
	if err := cfg.Validate(); err != nil {
		return beam.PCollection{}, err
	}
	ctx := context.Background()
	tbl, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("iceberg: read %s: %w", cfg.Table, err)
	}
	asOf, err := cfg.AsOfMillis()
	if err != nil {
		return beam.PCollection{}, err
	}
	spec, err := read.Resolve(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, tbl, read.Options{
		Filter:     cfg.Filter,
		Keep:       cfg.Keep,
		Drop:       cfg.Drop,
		SnapshotID: cfg.SnapshotIDValue(),
		AsOfMs:     asOf,
		Branch:     cfg.Branch,
	})
	if err != nil {
		return beam.PCollection{}, err
	}
	if cfg.OutputType != nil {
		if err := read.CheckOutputType(cfg.OutputType, tbl.Schema(), spec.Columns); err != nil {
			return beam.PCollection{}, err
		}
	}
	return read.Scan(s, spec, cfg.OutputType), nil
}
