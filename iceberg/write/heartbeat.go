package write

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// Heartbeat adds to s a periodic impulse from start to end every interval whose ticks
// refresh the sink's token on table (commit.RefreshToken with maxAge interval): the
// token_heartbeat_seconds of streaming writes. Use end = mtime.MaxTimestamp.ToTime()
// for a heartbeat that lasts as long as the pipeline.
func Heartbeat(s beam.Scope, spec Spec, start, end time.Time, interval time.Duration) {
	s = s.Scope("iceberg.TokenHeartbeat")
	ticks := periodic.Impulse(s, start, end, interval, false)
	beam.ParDo0(s, &heartbeatFn{Spec: spec, IntervalMs: interval.Milliseconds()}, ticks)
}

type heartbeatFn struct {
	Spec       Spec
	IntervalMs int64

	rt *runtime
}

func (f *heartbeatFn) Setup() error {
	rt, err := f.Spec.runtime()
	f.rt = rt
	return err
}

func (f *heartbeatFn) ProcessElement(ctx context.Context, _ []byte) error {
	cat, err := f.Spec.catalog(ctx, f.rt)
	if err != nil {
		return err
	}
	ident, err := parseIdent(f.Spec.Table)
	if err != nil {
		return err
	}
	// A tick refreshes a token older than half the interval: the token refreshed at
	// the previous tick is a little younger than the interval (its commit came after
	// that tick), and must not wait for a second tick.
	_, err = commit.RefreshToken(ctx, cat, ident, f.Spec.SinkID, time.Duration(f.IntervalMs)*time.Millisecond/2)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil // nothing committed yet
	}
	if err == nil {
		catalogs.Invalidate(f.Spec.CatalogName, f.rt.catProps, f.Spec.Table)
	}
	return err
}

func init() {
	beam.RegisterType(reflect.TypeFor[heartbeatFn]())
}
