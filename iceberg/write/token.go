package write

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// Summary keys of the exactly-once token every snapshot of the sink carries.
const (
	// SummarySinkID is the snapshot summary key holding the sink id that made the snapshot.
	SummarySinkID = "beam.cdc.sink-id"
	// SummaryCommittedThroughPrefix prefixes the key holding, for one sink id, the end
	// (epoch milliseconds) of the newest window the sink has committed.
	SummaryCommittedThroughPrefix = "beam.cdc.committed-through-ms."
	// SummaryReservedPrefix is the prefix of every summary key the sink owns; users'
	// snapshot properties must not use it.
	SummaryReservedPrefix = "beam.cdc."
)

// CommittedThroughKey returns the snapshot summary key of sinkID's token,
// "beam.cdc.committed-through-ms.<sinkID>".
func CommittedThroughKey(sinkID string) string { return SummaryCommittedThroughPrefix + sinkID }

// Summary keys that tell the sink's runs apart (a run is one pipeline construction;
// a restart with the same sink id is a new run).
const (
	// SummaryRunPrefix prefixes the key holding, for one sink id, the run that made the
	// snapshot.
	SummaryRunPrefix = "beam.cdc.run."
	// SummaryPriorThroughPrefix prefixes the key holding, for one sink id, how far the
	// sink's earlier runs had committed when the snapshot's run started (their newest
	// committed-through).
	SummaryPriorThroughPrefix = "beam.cdc.prior-through-ms."
	// SummaryWindowPrefix prefixes the key holding, for one sink id, the end of the
	// window whose rows the snapshot committed (its on-time pane or a late pane).
	SummaryWindowPrefix = "beam.cdc.window-ms."
)

// RunKey returns "beam.cdc.run.<sinkID>".
func RunKey(sinkID string) string { return SummaryRunPrefix + sinkID }

// PriorThroughKey returns "beam.cdc.prior-through-ms.<sinkID>".
func PriorThroughKey(sinkID string) string { return SummaryPriorThroughPrefix + sinkID }

// WindowKey returns "beam.cdc.window-ms.<sinkID>".
func WindowKey(sinkID string) string { return SummaryWindowPrefix + sinkID }

// Token is the newest exactly-once token of one sink found on a branch.
type Token struct {
	// SnapshotID is the snapshot whose summary holds the token.
	SnapshotID int64
	// SequenceNumber is that snapshot's data sequence number.
	SequenceNumber int64
	// CommittedThroughMs is the end of the newest window the sink committed.
	CommittedThroughMs int64
	// Summary is that snapshot's operation and summary properties.
	Summary *table.Summary
	// FromProperty is true when no snapshot carried the token any more (snapshot
	// expiry removed it) and it was found in the table property the sink also keeps
	// (see CommittedThroughKey); SnapshotID and Summary are then zero.
	FromProperty bool
}

// PriorThrough returns how far runs of sinkID other than runID had committed: the
// token's own committed-through when another run made it, or the value that run
// recorded when runID made it. Windows ending at or before it were committed by
// an earlier run: rows of those windows that reach runID are replays (or rows that
// run never saw), never late rows of runID's own commits. A token with no run
// (made before runs were recorded, or read from the table property) counts as
// another run's.
func (t Token) PriorThrough(sinkID, runID string) int64 {
	if t.Summary == nil || t.Summary.Properties[RunKey(sinkID)] != runID || runID == "" {
		return t.CommittedThroughMs
	}
	ms, _ := strconv.ParseInt(t.Summary.Properties[PriorThroughKey(sinkID)], 10, 64)
	return ms
}

// FindToken walks the ancestry of branch in meta, newest snapshot first, and returns
// the newest token of sinkID. found is false when no ancestor carries one (also when
// the branch has no snapshot). A token whose value is not an integer is an error: the
// table's history was written by something else under the sink's key.
func FindToken(meta table.Metadata, branch, sinkID string) (tok Token, found bool, err error) {
	if branch == "" {
		branch = table.MainBranch
	}
	head := meta.SnapshotByName(branch)
	if head == nil {
		return Token{}, false, nil
	}
	key := CommittedThroughKey(sinkID)
	for _, s := range table.AncestorsOf(head.SnapshotID, meta.SnapshotByID) {
		if s.Summary == nil {
			continue
		}
		v, ok := s.Summary.Properties[key]
		if !ok {
			continue
		}
		ms, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return Token{}, false, fmt.Errorf("snapshot %d: token %s=%q is not an integer: %w",
				s.SnapshotID, key, v, perr)
		}
		sum := *s.Summary
		return Token{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber,
			CommittedThroughMs: ms, Summary: &sum}, true, nil
	}
	return Token{}, false, nil
}

// SummaryLatePanePrefix prefixes the key holding, for one sink id, the id of the late
// pane a snapshot committed (see WindowRef.LateID).
const SummaryLatePanePrefix = "beam.cdc.late-pane."

// LatePaneKey returns "beam.cdc.late-pane.<sinkID>".
func LatePaneKey(sinkID string) string { return SummaryLatePanePrefix + sinkID }

// WindowRef names one commit of a sink: the on-time (or only) commit of the window
// ending at WindowEndMs, or, when LateID is set, one late pane of that window.
type WindowRef struct {
	SinkID string
	// RunID is the run committing (see RunKey); empty for callers that do not tell
	// runs apart (every window at or before the token is then held).
	RunID       string
	WindowEndMs int64
	// LateID identifies a late pane of the window among all late panes the sink commits
	// for it: "<window end>/<content id>" (see LateID). Empty for an on-time commit.
	LateID string
	// ContentID identifies the content of this commit (see Pane.ContentID). An on-time
	// commit of a window that an earlier run already committed carries only rows that
	// run did not commit (the writers drop replayed rows), and is committed as the late
	// pane LateID(WindowEndMs, ContentID) instead of being skipped.
	ContentID string
}

// LateID returns the id of the late pane of the window ending windowEndMs whose
// content id is contentID.
func LateID(windowEndMs int64, contentID string) string {
	return strconv.FormatInt(windowEndMs, 10) + "/" + contentID
}

// CheckWindow looks on branch of meta for a commit of ref. The sink's windows commit
// in order, so an on-time window is held when the sink's newest token is at or past
// its end and the window was committed by ref's own run (a retry); a window an
// earlier run committed is committed again as the late pane of ref's content, which
// holds only rows that run did not commit. A late pane is held when an ancestor
// carries its LateID, searched back to the first of the sink's snapshots that
// predates the window. held is the snapshot holding ref when done; otherwise newest
// is the sink's newest token (found reports whether there is one) and props are the
// token properties the commit of ref must carry: the sink id, the committed-through
// value (never lowered, and never moved by a late pane past the window it had), the
// run, how far earlier runs committed, the window, and the late pane id if any. The
// committers also keep the committed-through value in the table property of the same
// key (on main), so that a window stays held when snapshot expiry has removed every
// snapshot carrying the token (newest.FromProperty; its rows cannot be told from
// replays then, and the whole window is held).
func CheckWindow(meta table.Metadata, branch string, ref WindowRef) (held Token, done bool, newest Token, found bool, props map[string]string, err error) {
	newest, found, err = FindToken(meta, branch, ref.SinkID)
	if err != nil {
		return Token{}, false, Token{}, false, nil, err
	}
	if !found && (branch == "" || branch == table.MainBranch) {
		// Snapshot expiry may have removed every snapshot carrying the token; the table
		// property the sink keeps on main still says how far it committed.
		if v, ok := meta.Properties()[CommittedThroughKey(ref.SinkID)]; ok {
			if ms, perr := strconv.ParseInt(v, 10, 64); perr == nil {
				newest, found = Token{CommittedThroughMs: ms, FromProperty: true}, true
			}
		}
	}
	lateID := ref.LateID
	prior := int64(0)
	if found {
		prior = newest.PriorThrough(ref.SinkID, ref.RunID)
		if lateID == "" && newest.CommittedThroughMs >= ref.WindowEndMs {
			if ref.RunID == "" || ref.ContentID == "" || ref.WindowEndMs > prior || newest.FromProperty {
				return newest, true, newest, true, nil, nil
			}
			lateID = LateID(ref.WindowEndMs, ref.ContentID)
		}
	}
	if lateID != "" && found && !newest.FromProperty {
		if held, ok, err := findLatePane(meta, branch, ref.SinkID, ref.WindowEndMs, lateID); err != nil || ok {
			return held, ok, newest, found, nil, err
		}
	}
	through := ref.WindowEndMs
	if found {
		through = max(through, newest.CommittedThroughMs)
	}
	props = map[string]string{
		SummarySinkID:                   ref.SinkID,
		CommittedThroughKey(ref.SinkID): strconv.FormatInt(through, 10),
		WindowKey(ref.SinkID):           strconv.FormatInt(ref.WindowEndMs, 10),
	}
	if ref.RunID != "" {
		props[RunKey(ref.SinkID)] = ref.RunID
		props[PriorThroughKey(ref.SinkID)] = strconv.FormatInt(prior, 10)
	}
	if lateID != "" {
		props[LatePaneKey(ref.SinkID)] = lateID
	}
	return Token{}, false, newest, found, props, nil
}

// findLatePane walks the ancestry of branch for the snapshot of sinkID carrying
// lateID, stopping at the first snapshot of the sink whose token predates the window.
func findLatePane(meta table.Metadata, branch, sinkID string, windowEndMs int64, lateID string) (Token, bool, error) {
	if branch == "" {
		branch = table.MainBranch
	}
	head := meta.SnapshotByName(branch)
	if head == nil {
		return Token{}, false, nil
	}
	key, lateKey := CommittedThroughKey(sinkID), LatePaneKey(sinkID)
	for _, s := range table.AncestorsOf(head.SnapshotID, meta.SnapshotByID) {
		if s.Summary == nil {
			continue
		}
		v, ok := s.Summary.Properties[key]
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Token{}, false, fmt.Errorf("snapshot %d: token %s=%q is not an integer: %w", s.SnapshotID, key, v, err)
		}
		if s.Summary.Properties[lateKey] == lateID {
			sum := *s.Summary
			return Token{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, CommittedThroughMs: ms, Summary: &sum}, true, nil
		}
		if ms < windowEndMs {
			return Token{}, false, nil
		}
	}
	return Token{}, false, nil
}
