package read

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// snapshotWatermark is the watermark estimator of a continuous read. Its state is the
// watermark in epoch milliseconds: no element the read emits later has an earlier
// event time. Each snapshot's elements are timestamped at the snapshot's commit time
// (its timestamp-ms), or at the watermark when that is later (a writer whose clock
// lags, or a snapshot that became visible late), so no element is ever late; after a
// snapshot the watermark moves just past its event time, which closes the event-time
// windows holding it. While the table is idle the watermark follows the wall clock,
// idleLag behind the poll.
type snapshotWatermark struct {
	ms int64
}

// idleLag is how far behind the start of a poll that finds no new snapshot the
// watermark moves: a snapshot committed (timestamped) before that and only visible
// after the poll is timestamped at the watermark instead of its commit time.
const idleLag = 5 * time.Second

// CurrentWatermark returns the watermark, reported to the runner at checkpoints.
func (w *snapshotWatermark) CurrentWatermark() time.Time {
	return mtime.Time(w.ms).ToTime()
}

// stamp returns the event time of the elements of a snapshot committed at ms.
func (w *snapshotWatermark) stamp(ms int64) mtime.Time {
	return mtime.Time(max(ms, w.ms))
}

// passed moves the watermark past the event time at (all of a snapshot's elements
// are out).
func (w *snapshotWatermark) passed(at mtime.Time) {
	w.ms = max(w.ms, int64(at)+1)
}

// idle moves the watermark to idleLag before the poll that started at t.
func (w *snapshotWatermark) idle(t time.Time) {
	w.ms = max(w.ms, t.Add(-idleLag).UnixMilli())
}
