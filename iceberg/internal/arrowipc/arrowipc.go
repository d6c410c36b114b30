// Package arrowipc encodes one Arrow record batch as an Arrow IPC stream (its schema
// message, then the batch) and decodes it again: the form in which batches cross
// Beam stages, for the read's internal batches and for ReadBatches' elements. It
// imports neither Beam nor iceberg-go.
package arrowipc

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Encode returns rec in Arrow IPC stream format. It does not release rec.
func Encode(rec arrow.RecordBatch) ([]byte, error) {
	return Append(nil, rec)
}

// Append appends rec in Arrow IPC stream format to dst and returns the extended
// slice. It does not release rec.
func Append(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode record batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode record batch: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode returns the first record batch of an Arrow IPC stream, allocated with Go's
// allocator; the caller owns it (one reference: Release it when done).
func Decode(b []byte) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("decode record batch: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("decode record batch: %w", err)
		}
		return nil, fmt.Errorf("decode record batch: empty stream")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}
