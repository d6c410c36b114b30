package write

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

// fakeState is an in-memory state.Provider for the value and bag state the ordered
// commit uses (the runner's own is needed for everything else). It lets a test lose
// the state as a runner bug would, which no real runner does on purpose.
type fakeState struct {
	state.Provider
	values map[string]any
	bags   map[string][]any
}

func newFakeState() *fakeState { return &fakeState{values: map[string]any{}, bags: map[string][]any{}} }

func (f *fakeState) ReadValueState(id string) (any, []state.Transaction, error) {
	return f.values[id], nil, nil
}
func (f *fakeState) WriteValueState(t state.Transaction) error { f.values[t.Key] = t.Val; return nil }
func (f *fakeState) ClearValueState(t state.Transaction) error { delete(f.values, t.Key); return nil }
func (f *fakeState) ReadBagState(id string) ([]any, []state.Transaction, error) {
	return slices.Clone(f.bags[id]), nil, nil
}
func (f *fakeState) WriteBagState(t state.Transaction) error {
	f.bags[t.Key] = append(f.bags[t.Key], t.Val)
	return nil
}
func (f *fakeState) ClearBagState(t state.Transaction) error { delete(f.bags, t.Key); return nil }

type fakeTimers struct{ set []timers.TimerMap }

func (f *fakeTimers) Set(t timers.TimerMap) { f.set = append(f.set, t) }

// TestOrderedCommit: panes held in state commit oldest window first when a timer
// fires, a later timer of an already committed window is a no-op, and a timer whose
// window's panes vanished from the state fails (errStateLost) unless the table
// already holds the window. A pane arriving for a window whose turn has passed is
// committed at once as a late pane named by its content; one arriving before its
// window's turn (whatever the runner called it) is committed with the window.
func TestOrderedCommit(t *testing.T) {
	sp, tp := newFakeState(), &fakeTimers{}
	bag, handled, timer := state.MakeBagState[Pane]("pending"), state.MakeValueState[int64]("handled"), timers.InEventTime("turn")
	var committed []int64
	var panes []Pane
	commit := func(p Pane) error {
		committed = append(committed, p.WindowEndMs)
		panes = append(panes, p)
		return nil
	}
	noCheck := func(int64) (bool, error) { t.Fatal("table checked although the window was handled"); return false, nil }
	arrive := func(end int64, part string) {
		t.Helper()
		p := Pane{WindowEndMs: end, Parts: []Part{{Files: []datafile.Encoded{{Path: part}}}}}
		if err := arrivePane(sp, tp, bag, handled, timer, p, commit); err != nil {
			t.Fatal(err)
		}
	}
	arrive(19999, "b")
	arrive(9999, "a")
	arrive(9999, "a2")
	if len(committed) != 0 || len(tp.set) != 3 {
		t.Fatalf("on-time panes must wait for their timer: committed %v, timers %d", committed, len(tp.set))
	}
	// The later window's timer fires first: both windows commit, oldest first.
	if err := firePanes(sp, bag, handled, mtime.FromMilliseconds(19999), commit, noCheck); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(committed, []int64{9999, 19999}) {
		t.Errorf("committed %v, want [9999 19999]", committed)
	}
	if len(panes[0].Parts) != 2 || panes[0].LateID != "" || panes[1].LateID != "" {
		t.Errorf("on-time commits %+v, want window 9999 with both its panes, no late id", panes)
	}
	if err := firePanes(sp, bag, handled, mtime.FromMilliseconds(9999), commit, noCheck); err != nil || len(committed) != 2 {
		t.Errorf("timer of a committed window: err %v, committed %v", err, committed)
	}

	// Late panes of handled windows commit at once, named by window and content: the
	// same content gets the same id (a retried bundle), other content another.
	arrive(9999, "late-1")
	arrive(9999, "late-1")
	arrive(19999, "late-2")
	if len(panes) != 5 || panes[2].LateID == "" || panes[2].LateID != panes[3].LateID || panes[4].LateID == panes[2].LateID ||
		!strings.HasPrefix(panes[2].LateID, "9999/") || !strings.HasPrefix(panes[4].LateID, "19999/") {
		t.Errorf("late commits %+v, want at once with ids <window>/<content>", panes[2:])
	}
	if len(sp.bags["pending"]) != 0 {
		t.Errorf("late panes were held: %v", sp.bags["pending"])
	}
	committed, panes = committed[:0], panes[:0]

	// A held pane vanishes (as when prism 2.77 splits a stateful bundle).
	arrive(29999, "c")
	delete(sp.bags, "pending")
	inTable := false
	check := func(end int64) (bool, error) { return inTable, nil }
	err := firePanes(sp, bag, handled, mtime.FromMilliseconds(29999), commit, check)
	if !errors.Is(err, errStateLost) {
		t.Errorf("firePanes with the window's panes lost = %v, want errStateLost", err)
	}
	inTable = true // another bundle committed it before its state was overwritten
	if err := firePanes(sp, bag, handled, mtime.FromMilliseconds(29999), commit, check); err != nil {
		t.Errorf("firePanes of a window the table holds = %v", err)
	}
}
