package read

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/arrowipc"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestBatchCoders round-trips Batch and ChangeBatch (a struct holding a Batch field)
// through the Beam coders the SDK infers for them, as at a stage boundary, and checks
// that a Batch's encoding is its Arrow IPC stream written to the given writer: the
// SDK's size samples encode into a counter, which must not need the stream built.
func TestBatchCoders(t *testing.T) {
	rec := icebergtest.SampleRecords(t, 40, 5)
	defer rec.Release()
	sc := ibg.NewSchema(3, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true})
	b := Batch{Schema: sc, Rec: rec}

	check := func(t *testing.T, v any, same func(got any)) {
		t.Helper()
		rt := reflect.TypeOf(v)
		var buf bytes.Buffer
		if err := beam.NewElementEncoder(rt).Encode(v, &buf); err != nil {
			t.Fatal(err)
		}
		got, err := beam.NewElementDecoder(rt).Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if buf.Len() != 0 {
			t.Fatalf("%d bytes left after decoding", buf.Len())
		}
		same(got)
	}
	check(t, b, func(got any) {
		g := got.(Batch)
		if !g.Schema.Equals(sc) || g.Schema.ID != sc.ID || !array.RecordEqual(g.Rec, rec) {
			t.Fatalf("decoded %v %v, want %v %v", g.Schema, g.Rec, sc, rec)
		}
	})
	cb := ChangeBatch{Batch: b, ChangeType: "DELETE", SnapshotID: -7, Sequence: 12}
	check(t, cb, func(got any) {
		g := got.(ChangeBatch)
		if g.ChangeType != cb.ChangeType || g.SnapshotID != cb.SnapshotID || g.Sequence != cb.Sequence ||
			!g.Batch.Schema.Equals(sc) || !array.RecordEqual(g.Batch.Rec, rec) {
			t.Fatalf("decoded %+v, want %+v", g, cb)
		}
	})
	check(t, RecordBatch{rec}, func(got any) {
		if g := got.(RecordBatch); !array.RecordEqual(g.RecordBatch, rec) {
			t.Fatalf("decoded %v, want %v", g.RecordBatch, rec)
		}
	})

	// The encoding streams the IPC bytes into the writer: the largest write is one
	// of the batch's buffers, not the whole stream.
	size, err := arrowipc.Size(rec)
	if err != nil {
		t.Fatal(err)
	}
	var w maxWriter
	if err := beam.NewElementEncoder(reflect.TypeFor[Batch]()).Encode(b, &w); err != nil {
		t.Fatal(err)
	}
	if w.total < size || w.max >= size {
		t.Fatalf("encoding wrote %d bytes, at most %d at once; the IPC stream is %d bytes", w.total, w.max, size)
	}
}

// maxWriter counts the bytes written to it and the largest single write.
type maxWriter struct{ total, max int }

func (w *maxWriter) Write(p []byte) (int, error) {
	w.total += len(p)
	w.max = max(w.max, len(p))
	return len(p), nil
}
