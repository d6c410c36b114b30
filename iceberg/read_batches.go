package iceberg

import (
	"errors"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
)

// RecordBatch is an element of ReadBatches' output and of WriteBatches' input: one
// Arrow record batch (type read.RecordBatch, which documents ownership and its coder).
type RecordBatch = read.RecordBatch

// ReadBatches is Read emitting Arrow record batches instead of rows: the same config,
// the same validation at construction and the same read (the snapshot, time or branch
// the config names; filter pushed into planning; keep / drop applied; deletion
// vectors, position and equality deletes and the residual filter applied by
// iceberg-go's ReadTasks). Its elements are RecordBatch values, the batches iceberg-go
// yields (never an empty one), with no conversion to rows: the columnar path for
// pipelines that process Arrow data. A batch holds rows of one data file; batches
// come in no particular order.
//
// With streaming, ReadBatches is continuous as Read is (see Read), with the same keys:
// each batch holds rows of one data file of the start or of one append snapshot, and
// is timestamped as those rows are by Read. WithOutputType
// does not apply (ReadBatches always emits RecordBatch) and is a ConfigError.
//
// ReadBatches panics on any problem found at construction; TryReadBatches returns it.
func ReadBatches(s beam.Scope, cfg ReadConfig, opts ...ReadOption) beam.PCollection {
	return must(TryReadBatches(s, cfg, opts...))
}

// TryReadBatches is ReadBatches returning an error instead of panicking. Like TryRead,
// it reports every problem found at construction at once.
func TryReadBatches(s beam.Scope, cfg ReadConfig, opts ...ReadOption) (beam.PCollection, error) {
	cfg = cfg.With(opts...)
	var errs []error
	if cfg.OutputType != nil {
		errs = append(errs, config.Errorf("output type",
			"ReadBatches emits RecordBatch values; WithOutputType (%v) applies to Read only", cfg.OutputType))
	}
	rs, err := resolveRead(cfg)
	if err != nil || len(errs) > 0 {
		return beam.PCollection{}, errors.Join(append(errs, err)...)
	}
	var batches beam.PCollection
	if cfg.Streaming {
		batches = read.ScanStreamBatches(s, rs.appends)
	} else {
		batches = read.ScanBatches(s, rs.spec, cfg.After...)
	}
	return batches, nil
}
