package write

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

// Part is what one writer (append) or one shard (merge-on-read) hands to the commit
// step for one table and window.
type Part struct {
	// Files are the data files it wrote, not committed.
	Files []datafile.Encoded
	// Changes is a merge-on-read shard's result; nil for appends.
	Changes *shardResult
}

// Pane is one table's output of one pane of one window (the parts every writer or
// shard emitted for it), as the ordered commit holds it until the window's turn.
type Pane struct {
	// WindowEndMs is the window's token value (WindowEnd).
	WindowEndMs int64
	// Global is true for the global window: there is one pane, committed at once.
	Global bool
	// LateID names a late pane (see WindowRef.LateID), set by arrivePane for a pane of a
	// window whose turn has passed; empty for an on-time pane.
	LateID string
	// Parts are the outputs of the writers or shards.
	Parts []Part
}

// ContentID identifies p's content: a hash of its parts (which name files written
// once), the same on every retry of the bundle that commits p.
func (p Pane) ContentID() string {
	parts := make([][]byte, 0, len(p.Parts))
	for _, part := range p.Parts {
		b, err := json.Marshal(part) // deterministic: struct fields in order, no maps
		if err != nil {
			panic(fmt.Sprintf("iceberg: pane part does not encode: %v", err))
		}
		parts = append(parts, b)
	}
	slices.SortFunc(parts, bytes.Compare)
	h := sha256.New()
	for _, b := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ContentIDFor is ContentID for a pane of a write windowed by
// triggering_frequency_seconds (gated: its rows of windows an earlier run committed
// were matched against that run's), and empty otherwise: the windows of a batch
// rerun with the same sink id are skipped whole (see WindowRef.ContentID).
func (p Pane) ContentIDFor(gated bool) string {
	if p.Global || !gated {
		return ""
	}
	return p.ContentID()
}

// Ref returns the WindowRef that commits p for run runID of sinkID.
func (p Pane) Ref(sinkID, runID string) commit.WindowRef {
	return commit.WindowRef{SinkID: sinkID, RunID: runID, WindowEndMs: p.WindowEndMs, LateID: p.LateID, ContentID: p.ContentIDFor(true)}
}

// orderPanes groups keyed (a PCollection of KV<table, Part> in the writers' windows)
// by table, one element per table and pane, and returns them as KV<table, Pane> in
// the global window, ready for a commit DoFn that uses holdPane and duePanes
// to commit each table's windows in order, whatever order the runner delivers them in:
// windows that fire together, or whose panes reach different workers, must still
// commit oldest first because a sink's token only moves forward.
func orderPanes(s beam.Scope, keyed beam.PCollection) beam.PCollection {
	grouped := beam.GroupByKey(s.Scope("GroupByTable"), keyed)
	panes := beam.ParDo(s.Scope("Panes"), &paneFn{}, grouped)
	return beam.WindowInto(s.Scope("Global"), window.NewGlobalWindows(), panes)
}

// paneFn packs one GroupByKey output (a table's parts of one pane) into a Pane.
type paneFn struct{}

// The pane's timing is not used: a runner labels the first pane of a key as on time
// even when the watermark had passed the window (prism does); arrivePane tells late panes
// by the commit step's own progress instead.
func (paneFn) ProcessElement(w beam.Window, table string, parts func(*Part) bool, emit func(string, Pane)) {
	pane := Pane{WindowEndMs: commit.WindowEnd(w)}
	if _, ok := w.(window.GlobalWindow); ok {
		pane.Global = true
	}
	var p Part
	for parts(&p) {
		pane.Parts = append(pane.Parts, p)
		p = Part{}
	}
	emit(table, pane)
}

// holdPane keeps pane p in bag until the watermark passes the end of its window, when
// timer fires with the window's end as tag.
func holdPane(sp state.Provider, tp timers.Provider, bag state.Bag[Pane], timer timers.EventTime, p Pane) error {
	if err := bag.Add(sp, p); err != nil {
		return err
	}
	timer.Set(tp, time.UnixMilli(p.WindowEndMs), timers.WithTag(strconv.FormatInt(p.WindowEndMs, 10)))
	return nil
}

// duePanes takes from bag the panes whose window ended at or before throughMs (a timer's
// firing time) and returns them grouped by window, oldest window first; the others
// stay in bag.
func duePanes(sp state.Provider, bag state.Bag[Pane], throughMs int64) ([][]Pane, error) {
	all, _, err := bag.Read(sp)
	if err != nil {
		return nil, err
	}
	var due, keep []Pane
	for _, p := range all {
		if p.WindowEndMs <= throughMs {
			due = append(due, p)
		} else {
			keep = append(keep, p)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	if err := bag.Clear(sp); err != nil {
		return nil, err
	}
	for _, p := range keep {
		if err := bag.Add(sp, p); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(due, func(a, b Pane) int { return cmp.Compare(a.WindowEndMs, b.WindowEndMs) })
	var out [][]Pane
	for i, p := range due {
		if i == 0 || p.WindowEndMs != due[i-1].WindowEndMs {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	return out, nil
}

// arrivePane handles a pane reaching an ordered commit DoFn (see orderPanes). The global
// window's pane is committed at once with commitPane. A pane of a window whose turn has
// not come (its end is past handled, the newest window this step has committed) is
// held until then, and committed with the window's other panes as its one on-time
// commit. A pane of a window whose turn has passed is a late pane: it is committed at
// once with its LateID, which never moves the sink's token (every window up to
// handled has had its turn), so it cannot hide a window still held.
func arrivePane(sp state.Provider, tp timers.Provider, bag state.Bag[Pane], handled state.Value[int64], timer timers.EventTime, p Pane, commitPane func(Pane) error) error {
	if p.Global {
		return commitPane(p)
	}
	through, _, err := handled.Read(sp)
	if err != nil {
		return err
	}
	if p.WindowEndMs > through {
		return holdPane(sp, tp, bag, timer, p)
	}
	p.LateID = commit.LateID(p.WindowEndMs, p.ContentID())
	return commitPane(p)
}

// firePanes handles the timer of an ordered commit DoFn firing at ts (the end of the
// window it was set for): the windows due are committed with commitPane, oldest first,
// each as one pane (mergeParts); handled keeps the newest window end this step has
// committed. When the timer's window is past it, committed(ts ms) must confirm that
// this run committed rows of the window; otherwise the window's panes were lost from
// the step's state and firePanes fails rather than let them go unnoticed. (Under the Beam
// model a timer's window is past handled only when its panes are due: holdPane writes a
// pane and sets its timer in one bundle, and the bundles of one key run one at a
// time. Prism 2.77 breaks that when it splits a bundle of the step: see
// runStream in the streaming tests.)
func firePanes(sp state.Provider, bag state.Bag[Pane], handled state.Value[int64], ts beam.EventTime, commitPane func(Pane) error, committed func(windowEndMs int64) (bool, error)) error {
	due, err := duePanes(sp, bag, ts.Milliseconds())
	if err != nil {
		return err
	}
	through, _, err := handled.Read(sp)
	if err != nil {
		return err
	}
	for _, panes := range due {
		if err := commitPane(mergeParts(panes)); err != nil {
			return err
		}
		through = max(through, panes[0].WindowEndMs)
	}
	if len(due) > 0 {
		if err := handled.Write(sp, through); err != nil {
			return err
		}
	}
	if ts.Milliseconds() <= through {
		return nil // committed now or by an earlier timer (possibly with nothing to commit)
	}
	ok, err := committed(ts.Milliseconds())
	if err != nil || ok {
		return err
	}
	return fmt.Errorf("%w: the rows of the window ending %s were held for their commit but are gone from the commit step's state, and the table has no commit of that window; failing instead of skipping it (a runner lost the state of a stateful DoFn: prism 2.77 does when it splits a bundle of one)",
		errStateLost, time.UnixMilli(ts.Milliseconds()+1).UTC().Format(time.RFC3339Nano))
}

// errStateLost is the error of a commit step whose held rows vanished (see firePanes).
var errStateLost = errors.New("commit state lost")

// mergeParts returns the parts of panes (one window's on-time panes) as one Pane.
func mergeParts(panes []Pane) Pane {
	out := panes[0]
	out.Parts = nil
	for _, p := range panes {
		out.Parts = append(out.Parts, p.Parts...)
	}
	return out
}

func init() {
	beam.RegisterType(reflect.TypeFor[Part]())
	beam.RegisterType(reflect.TypeFor[Pane]())
	beam.RegisterType(reflect.TypeFor[paneFn]())
	register.Emitter2[string, Part]()
	register.Emitter2[string, Pane]()
	register.Iter1[Part]()
}

// checkWindows returns an error unless col is in the global window or in fixed
// windows: the writers emit each window's files at the end of a bundle, which Beam
// puts in the global window, and rewindow puts them back by their timestamp, which
// identifies a fixed window but not a sliding window or a session.
func checkWindows(table string, col beam.PCollection) error {
	switch k := col.WindowingStrategy().Fn.Kind; k {
	case window.GlobalWindows, window.FixedWindows:
		return nil
	default:
		return config.OpErrorf("write", table, "%w: rows must be in the global window or in fixed windows, not %s (set %s, or window the rows with window.NewFixedWindows)",
			config.ErrInvalidConfig, col.WindowingStrategy(), config.KeyTriggeringFrequencySeconds)
	}
}

// rewindow returns col, emitted at the end of bundles (so in the global window) with
// each element timestamped within its window, in the windows of like (the writers'
// input) with like's trigger, lateness and accumulation.
func rewindow(s beam.Scope, like, col beam.PCollection) beam.PCollection {
	ws := like.WindowingStrategy()
	if ws.Fn.Kind == window.GlobalWindows {
		return col
	}
	opts := []beam.WindowIntoOption{beam.AllowedLateness(time.Duration(ws.AllowedLateness) * time.Millisecond)}
	if ws.Trigger != nil {
		opts = append(opts, beam.Trigger(ws.Trigger))
	}
	if ws.AccumulationMode == window.Accumulating {
		opts = append(opts, beam.PanesAccumulate())
	} else {
		opts = append(opts, beam.PanesDiscard())
	}
	return beam.WindowInto(s.Scope("rewindow"), ws.Fn, col, opts...)
}
