package iceberg

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
)

func init() {
	t := reflect.TypeFor[RecordBatch]()
	beam.RegisterType(t)
	beam.RegisterCoder(t, encodeRecordBatch, decodeRecordBatch)
	register.DoFn2x1[read.Batch, func(RecordBatch), error](&toRecordBatchFn{})
	register.Emitter1[RecordBatch]()
}

// RecordBatch is an element of ReadBatches' output: one Arrow record batch of the
// rows read, with the columns read (keep / drop applied) in the Arrow schema
// iceberg-go gives the table's columns.
//
// Ownership: the batch's memory comes from Go's allocator and is garbage collected
// like any Go value, so neither ReadBatches nor its consumers need to call Release, and
// a DoFn may keep a batch after ProcessElement returns. Never Release a reference you
// did not Retain: when several DoFns consume the same PCollection they see the same
// batch. Retain before handing a batch to code that releases what it is given (such as
// iceberg-go's table.WriteRecords).
//
// Between stages a RecordBatch travels in Arrow IPC stream format (its coder is
// registered in init); the zero RecordBatch (a nil batch) encodes as no bytes.
type RecordBatch struct {
	arrow.RecordBatch
}

// encodeRecordBatch is RecordBatch's Beam encoder: the batch as an Arrow IPC stream.
func encodeRecordBatch(b RecordBatch) ([]byte, error) {
	if b.RecordBatch == nil {
		return []byte{}, nil
	}
	data, err := arrowipc.Encode(b.RecordBatch)
	if err != nil {
		return nil, fmt.Errorf("iceberg: %w", err)
	}
	return data, nil
}

// decodeRecordBatch is RecordBatch's Beam decoder.
func decodeRecordBatch(data []byte) (RecordBatch, error) {
	if len(data) == 0 {
		return RecordBatch{}, nil
	}
	rec, err := arrowipc.Decode(data)
	if err != nil {
		return RecordBatch{}, fmt.Errorf("iceberg: %w", err)
	}
	return RecordBatch{rec}, nil
}

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
		batches = read.ScanBatches(s, rs.spec)
	}
	return beam.ParDo(s.Scope("iceberg.ReadBatches.Decode"), &toRecordBatchFn{}, batches), nil
}

// toRecordBatchFn turns the read DoFn's Batch values into RecordBatch elements. It is
// fused with the read's consumers, so a batch is decoded once after the read DoFn's
// output crosses the runner, and passed on by reference.
type toRecordBatchFn struct{}

// ProcessElement emits the record batch of b.
func (fn *toRecordBatchFn) ProcessElement(b read.Batch, emit func(RecordBatch)) error {
	rec, err := read.DecodeRecord(b)
	if err != nil {
		return err
	}
	emit(RecordBatch{rec})
	return nil
}
