package write

import (
	"strconv"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Test sinks: prism runs the SDK harness in this process, so a DoFn can append its
// elements to a slice registered under a key.
var (
	sinkMu sync.Mutex
	sinks  = map[string]any{}
	sinkN  int
)

func registerSink[T any](out *[]T) string {
	sinkMu.Lock()
	defer sinkMu.Unlock()
	sinkN++
	key := strconv.Itoa(sinkN)
	sinks[key] = out
	return key
}

type collectFn[T any] struct {
	Key string
}

func (f *collectFn[T]) ProcessElement(v T) {
	sinkMu.Lock()
	defer sinkMu.Unlock()
	out := sinks[f.Key].(*[]T)
	*out = append(*out, v)
}

func init() {
	register.DoFn1x0[commit.SnapshotInfo](&collectFn[commit.SnapshotInfo]{})
	register.DoFn1x0[DeadLetter](&collectFn[DeadLetter]{})
}
