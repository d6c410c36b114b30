package read

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
)

// Batch is one Arrow record batch on its way from the read DoFn to the conversion to
// rows: the Iceberg schema of the table version read (JSON) and the batch in Arrow IPC
// stream format.
type Batch struct {
	Schema string
	Data   []byte
}

// encodeBatch serializes rec in Arrow IPC stream format.
func encodeBatch(schemaJSON string, rec arrow.RecordBatch) (Batch, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return Batch{}, fmt.Errorf("encode record batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return Batch{}, fmt.Errorf("encode record batch: %w", err)
	}
	return Batch{Schema: schemaJSON, Data: buf.Bytes()}, nil
}

// batchDecoder decodes batches, caching the last Iceberg schema it parsed.
type batchDecoder struct {
	key    string
	schema *ibg.Schema
}

// decode returns the record batch of b (release it) and its Iceberg schema.
func (d *batchDecoder) decode(b Batch) (arrow.RecordBatch, *ibg.Schema, error) {
	if d.schema == nil || d.key != b.Schema {
		var sc ibg.Schema
		if err := sc.UnmarshalJSON([]byte(b.Schema)); err != nil {
			return nil, nil, fmt.Errorf("iceberg: read: decode schema: %w", err)
		}
		d.key, d.schema = b.Schema, &sc
	}
	r, err := ipc.NewReader(bytes.NewReader(b.Data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg: read: decode record batch: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, nil, fmt.Errorf("iceberg: read: decode record batch: %w", err)
		}
		return nil, nil, fmt.Errorf("iceberg: read: decode record batch: empty stream")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, d.schema, nil
}
