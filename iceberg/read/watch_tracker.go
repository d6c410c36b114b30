package read

import (
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
)

// unboundedEnd is the end of the restriction of a continuous read without an end
// snapshot: it follows main until it is told to stop.
const unboundedEnd = math.MaxInt64

// snapshotTracker tracks the restriction of a continuous read: an offset range over
// snapshot sequence numbers, [position of the next snapshot to read, end). The first
// position is the base's (Stream.BaseSequence); every later snapshot on main is
// claimed at its own sequence number, which grows with each commit to the table.
//
// It splits only at checkpoints (fraction 0, when the read waits for the next poll):
// the residual then starts right after the last claimed snapshot, so the snapshot
// read last is the one whose sequence number is the residual's start minus one. Any
// other split is refused, as a read that follows one table's history is inherently
// sequential. Finish ends an unbounded restriction (to_timestamp reached).
type snapshotTracker struct {
	*offsetrange.Tracker
	finished bool
}

// newSnapshotTracker returns a thread-safe tracker of rest.
func newSnapshotTracker(rest offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(&snapshotTracker{Tracker: offsetrange.NewTracker(rest)})
}

// TryClaim claims the snapshot at sequence number pos (an int64).
func (t *snapshotTracker) TryClaim(pos any) bool {
	if t.finished {
		return false
	}
	return t.Tracker.TryClaim(pos)
}

// TrySplit splits at checkpoints only (fraction 0); it refuses other splits.
func (t *snapshotTracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.finished || fraction > 0 {
		return t.GetRestriction(), nil, nil
	}
	return t.Tracker.TrySplit(0)
}

// IsDone reports whether the restriction is read: every position claimed, or finished.
func (t *snapshotTracker) IsDone() bool {
	return t.finished || t.Tracker.IsDone()
}

// IsBounded reports whether the restriction has an end snapshot.
func (t *snapshotTracker) IsBounded() bool {
	return t.GetRestriction().(offsetrange.Restriction).End != unboundedEnd
}

// finish ends the restriction: nothing after the positions claimed is read.
func (t *snapshotTracker) finish() { t.finished = true }

// finishTracker finishes the snapshotTracker inside rt.
func finishTracker(rt *sdf.LockRTracker) {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	rt.Rt.(*snapshotTracker).finish()
}
