package write

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// morWriteFn writes the new rows of one table's shards of one pane to data files
// and emits the shards' results and a Part with those files, from one call, so that
// the commit step receives them in one pane.
type morWriteFn struct {
	Spec Spec

	rt *runtime
}

func (f *morWriteFn) Setup(ctx context.Context) error {
	var err error
	f.rt, err = f.Spec.runtime()
	return err
}

func (f *morWriteFn) ProcessElement(ctx context.Context, dest string, outs func(*shardOut) bool, emit func(string, Part), dead func(DeadLetter)) error {
	var results []Part
	files, err := writePackets(ctx, f.Spec, f.rt, dest, func(yield func([]byte) bool) {
		var o shardOut
		for outs(&o) {
			if o.Rows == nil {
				results = append(results, o.Result)
			} else if !yield(o.Rows) {
				return
			}
			o = shardOut{}
		}
	}, dead)
	if err != nil {
		return err
	}
	for _, r := range results {
		emit(dest, r)
	}
	if len(files) > 0 {
		emit(dest, Part{Files: files})
	}
	return nil
}

func init() {
	beam.RegisterType(reflect.TypeFor[morWriteFn]())
	register.Iter1[shardOut]()
}
