package write

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
)

// ibgTs is a timestamp value in microseconds.
func ibgTs(us int64) ibg.Timestamp { return ibg.Timestamp(us) }

// collect gathers the elements of col into *out after the pipeline runs (prism runs in
// this process, so the slice is filled by the DoFn).
func collect[T any](s beam.Scope, col beam.PCollection, out *[]T) {
	key := registerSink(out)
	beam.ParDo0(s, &collectFn[T]{Key: key}, col)
}
