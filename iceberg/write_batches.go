package iceberg

import (
	"context"
	"errors"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write"
)

// WriteBatches appends Arrow record batches (a PCollection of RecordBatch, such as
// ReadBatches emits) to the table cfg.Table: the columnar counterpart of Write in
// append mode. Each bundle hands its batches to Parquet writers as they are, with no
// conversion to rows; the table's partition spec splits them into partitions. The
// files are committed as Write's are: one commit per window (in batch, one commit),
// made exactly once per sink_id, with the same WriteResult.
//
// Columns match the table's by name (field ids a batch carries are ignored);
// lossless promotions (int to long, float to double) are applied and optional
// table columns a batch lacks are written as null. A batch that cannot be written (a
// column the table lacks or of another type, a null in a required column) goes to
// WriteResult.DeadLetter whole, with the reason; a missing table is created from the
// first batch's schema with partition_fields, sort_fields and table_properties.
// Streaming keys (triggering_frequency_seconds, allowed_lateness_seconds,
// token_heartbeat_seconds) work as for Write, except that a batch of a window an
// earlier run of the sink already committed goes to WriteResult.DeadLetter (its rows
// cannot be told apart from those committed).
//
// cfg.Table must be one table, not a template; mode merge-on-read, keep, drop, only,
// distribution_mode hash, auto_sharding, direct_write_byte_limit and evolve_schema do
// not apply to batches and are ConfigErrors wrapping ErrUnsupported.
//
// WriteBatches panics on a construction error; use TryWriteBatches to get it.
func WriteBatches(s beam.Scope, cfg WriteConfig, batches beam.PCollection, opts ...WriteOption) WriteResult {
	return must(TryWriteBatches(s, cfg, batches, opts...))
}

// TryWriteBatches is WriteBatches returning an error instead of panicking. Like
// TryWrite, it reports every problem found at construction at once.
func TryWriteBatches(s beam.Scope, cfg WriteConfig, batches beam.PCollection, opts ...WriteOption) (WriteResult, error) {
	cfg = cfg.With(opts...)
	if err := cfg.Validate(); err != nil {
		return WriteResult{}, err
	}
	var errs config.Errors
	if t := batches.Type().Type(); t != reflect.TypeFor[RecordBatch]() {
		errs.Add(config.OpErrorf("write", cfg.Table, "%w: WriteBatches takes a PCollection of iceberg.RecordBatch, got %s", ErrInvalidConfig, batches.Type()))
	}
	why := "WriteBatches writes Arrow batches as they are"
	if cfg.IsMergeOnRead() {
		errs.Add(unsupported(config.KeyMode, "WriteBatches appends; merge-on-read takes rows (Write)"))
	}
	if tpl, err := write.ParseTemplate(cfg.Table); err == nil && !tpl.IsStatic() {
		errs.Add(unsupported(config.KeyTable, "WriteBatches writes one table, not a template"))
	}
	if len(cfg.Keep) > 0 {
		errs.Add(unsupported(config.KeyKeep, why))
	}
	if len(cfg.Drop) > 0 {
		errs.Add(unsupported(config.KeyDrop, why))
	}
	if cfg.Only != "" {
		errs.Add(unsupported(config.KeyOnly, why))
	}
	if cfg.DistributionMode == config.DistributionHash {
		errs.Add(unsupported(config.KeyDistributionMode, "each bundle writes its own batches"))
	}
	if cfg.AutoSharding {
		errs.Add(unsupported(config.KeyAutoSharding, "each bundle writes its own batches"))
	}
	if cfg.DirectWriteByteLimit != nil {
		errs.Add(unsupported(config.KeyDirectWriteByteLimit, "each bundle writes its own batches"))
	}
	if cfg.EvolveSchema {
		errs.Add(unsupported(config.KeyEvolveSchema, "a batch the table cannot take goes to the dead letter whole"))
	}
	if !cfg.IsMergeOnRead() {
		errs.Add(checkAppendSupport(cfg))
	}
	if err := errs.Err(); err != nil {
		return WriteResult{}, err
	}
	spec, err := newSpec(cfg)
	if err != nil {
		return WriteResult{}, err
	}
	if cfg.NoCatalogAtConstruction {
		if err := catalogs.CheckLinked(cfg.CatalogName, cfg.CatalogProperties); err != nil {
			return WriteResult{}, config.WrapOp("write", cfg.Table, err)
		}
	} else {
		ctx := context.Background()
		if _, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0); err != nil && !errors.Is(err, config.ErrTableNotFound) {
			return WriteResult{}, config.WrapOp("write", cfg.Table, err)
		}
	}
	return streamingWrite(s, cfg, spec.SinkID, batches, func(batches beam.PCollection) (beam.PCollection, beam.PCollection, error) {
		return write.AppendBatches(s, spec, batches)
	})
}
