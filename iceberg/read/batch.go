package read

import (
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
)

// RecordBatch and Batch are Beam schema logical types whose encoders write the batch's
// Arrow IPC stream straight into the writer Beam gives them. A custom coder
// ([]byte in and out) would build the whole stream in memory first, and the SDK
// encodes elements to measure their size (the first elements of every bundle, then
// about one in ten): for the benchmark's 1M-row ReadBatches those throwaway encodings
// took a fifth of the run. Into Beam's size counter the stream is only counted.
func init() {
	rb := reflect.TypeFor[RecordBatch]()
	beam.RegisterType(rb)
	schema.RegisterLogicalType(schema.ToLogicalType("icebeam.RecordBatch", rb, reflect.TypeFor[recordBatchStorage]()))
	coder.RegisterSchemaProviders(rb, recordBatchEncoder, recordBatchDecoder)

	bt := reflect.TypeFor[Batch]()
	beam.RegisterType(bt)
	schema.RegisterLogicalType(schema.ToLogicalType("icebeam.ReadBatch", bt, reflect.TypeFor[batchStorage]()))
	coder.RegisterSchemaProviders(bt, readBatchEncoder, readBatchDecoder)
}

// RecordBatch is an element of ReadBatches' output (and of WriteBatches' input): one
// Arrow record batch of the rows read, with the columns read (keep / drop applied) in
// the Arrow schema iceberg-go gives the table's columns. Package iceberg calls it
// iceberg.RecordBatch.
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

// recordBatchStorage is RecordBatch's schema representation: the Arrow IPC stream of
// the batch (empty for a nil batch).
type recordBatchStorage struct {
	IPC []byte
}

func recordBatchEncoder(reflect.Type) (func(any, io.Writer) error, error) {
	return func(v any, w io.Writer) error {
		if err := coder.WriteSimpleRowHeader(1, w); err != nil {
			return err
		}
		return writeIPC(v.(RecordBatch).RecordBatch, w)
	}, nil
}

func recordBatchDecoder(reflect.Type) (func(io.Reader) (any, error), error) {
	return func(r io.Reader) (any, error) {
		if err := coder.ReadSimpleRowHeader(1, r); err != nil {
			return nil, err
		}
		rec, err := readIPC(r)
		if err != nil {
			return nil, err
		}
		return RecordBatch{rec}, nil
	}, nil
}

// Batch is one Arrow record batch on its way from the read DoFn to the conversion to
// rows or user structs, with the Iceberg schema of the table version read.
//
// The batch travels by reference: the read DoFn's consumers fuse with it (a
// splittable DoFn's processing step roots a stage, and its outputs' consumers join
// that stage), so the rows are never serialized between reading and conversion. The
// coder (Arrow IPC) runs only where a runner needs bytes: the SDK's element size
// samples and any stage boundary. Rec's memory comes from Go's allocator; a Batch
// holds its own reference, which is never released: the garbage collector frees the
// batch once nothing refers to it.
//
// Where a Batch is encoded, its schema is written in Iceberg's JSON form as one field
// of the element's binary encoding; batchSchemas keeps the schema's last encoding and
// decoding, so a stage's batches share one *ibg.Schema.
type Batch struct {
	Schema *ibg.Schema
	Rec    arrow.RecordBatch
}

// newBatch returns a Batch holding its own reference to rec.
func newBatch(sc *ibg.Schema, rec arrow.RecordBatch) Batch {
	rec.Retain()
	return Batch{Schema: sc, Rec: rec}
}

// batchStorage is Batch's schema representation: the Iceberg schema's JSON and the
// batch's Arrow IPC stream.
type batchStorage struct {
	Schema string
	IPC    []byte
}

// schemaCache remembers the schema encoded last and the schema decoded last, so the
// batches of one table version encode and decode their schema once. Encoders and
// decoders run on several goroutines: mu guards it.
type schemaCache struct {
	mu    sync.Mutex
	encSc *ibg.Schema
	encJS string
	decJS string
	decSc *ibg.Schema
}

var batchSchemas schemaCache

// encode returns sc's JSON form ("" for nil).
func (c *schemaCache) encode(sc *ibg.Schema) (string, error) {
	if sc == nil {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.encSc != sc {
		b, err := sc.MarshalJSON()
		if err != nil {
			return "", fmt.Errorf("iceberg: read: encode schema: %w", err)
		}
		c.encSc, c.encJS = sc, string(b)
	}
	return c.encJS, nil
}

// decode parses a schema encode returned (nil for "").
func (c *schemaCache) decode(js string) (*ibg.Schema, error) {
	if js == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decSc == nil || c.decJS != js {
		sc := new(ibg.Schema)
		if err := sc.UnmarshalJSON([]byte(js)); err != nil {
			return nil, fmt.Errorf("iceberg: read: decode schema: %w", err)
		}
		c.decJS, c.decSc = js, sc
	}
	return c.decSc, nil
}

func readBatchEncoder(reflect.Type) (func(any, io.Writer) error, error) {
	return func(v any, w io.Writer) error {
		b := v.(Batch)
		js, err := batchSchemas.encode(b.Schema)
		if err != nil {
			return err
		}
		if err := coder.WriteSimpleRowHeader(2, w); err != nil {
			return err
		}
		if err := coder.EncodeStringUTF8(js, w); err != nil {
			return err
		}
		return writeIPC(b.Rec, w)
	}, nil
}

func readBatchDecoder(reflect.Type) (func(io.Reader) (any, error), error) {
	return func(r io.Reader) (any, error) {
		if err := coder.ReadSimpleRowHeader(2, r); err != nil {
			return nil, err
		}
		js, err := coder.DecodeStringUTF8(r)
		if err != nil {
			return nil, err
		}
		sc, err := batchSchemas.decode(js)
		if err != nil {
			return nil, err
		}
		rec, err := readIPC(r)
		if err != nil {
			return nil, err
		}
		return Batch{Schema: sc, Rec: rec}, nil
	}, nil
}

// writeIPC writes rec as a bytes field: the length of its Arrow IPC stream, then the
// stream, written from the batch's buffers (a nil batch is an empty field).
func writeIPC(rec arrow.RecordBatch, w io.Writer) error {
	if rec == nil {
		return coder.EncodeVarInt(0, w)
	}
	n, err := arrowipc.Size(rec)
	if err != nil {
		return fmt.Errorf("iceberg: %w", err)
	}
	if err := coder.EncodeVarInt(int64(n), w); err != nil {
		return err
	}
	if err := arrowipc.Write(w, rec); err != nil {
		return fmt.Errorf("iceberg: %w", err)
	}
	return nil
}

// readIPC reads a batch writeIPC wrote.
func readIPC(r io.Reader) (arrow.RecordBatch, error) {
	data, err := coder.DecodeBytes(r)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	rec, err := arrowipc.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("iceberg: %w", err)
	}
	return rec, nil
}
