package write

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// ibgTs is a timestamp value in microseconds.
// fastCommitter retries quickly.
var fastCommitter = commit.Committer{MaxAttempts: 5, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

func ibgTs(us int64) ibg.Timestamp { return ibg.Timestamp(us) }

// collect gathers the elements of col into *out after the pipeline runs (prism runs in
// this process, so the slice is filled by the DoFn).
func collect[T any](s beam.Scope, col beam.PCollection, out *[]T) {
	key := registerSink(out)
	beam.ParDo0(s, &collectFn[T]{Key: key}, col)
}
