package read

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
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
	data, err := arrowipc.Encode(rec)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Schema: schemaJSON, Data: data}, nil
}

// DecodeRecord returns the record batch of b; the caller owns it (Release it).
func DecodeRecord(b Batch) (arrow.RecordBatch, error) {
	rec, err := arrowipc.Decode(b.Data)
	if err != nil {
		return nil, fmt.Errorf("iceberg: read: %w", err)
	}
	return rec, nil
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
	rec, err := DecodeRecord(b)
	if err != nil {
		return nil, nil, err
	}
	return rec, d.schema, nil
}
