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
	SinkID      string
	WindowEndMs int64
	// LateID identifies a late pane of the window among all late panes the sink commits
	// for it, for example "<window end>/<pane index>" (with the shard when several
	// shards fire their own panes). Empty for an on-time commit.
	LateID string
}

// CheckWindow looks on branch of meta for a commit of ref. The sink's windows commit
// in order, so an on-time window is held when the sink's newest token is at or past
// its end; a late pane is held when an ancestor carries its LateID, searched back to
// the first of the sink's snapshots that predates the window. held is the snapshot
// holding ref when done; otherwise newest is the sink's newest token (found reports
// whether there is one) and props are the token properties the commit of ref must
// carry: the sink id, the committed-through value (never lowered by a late pane) and
// the late pane id. The committers also keep the committed-through value in the table
// property of the same key (on main), so that an on-time window stays held when
// snapshot expiry has removed every snapshot carrying the token (held.FromProperty).
func CheckWindow(meta table.Metadata, branch string, ref WindowRef) (held Token, done bool, newest Token, found bool, props map[string]string, err error) {
	newest, found, err = FindToken(meta, branch, ref.SinkID)
	if err != nil {
		return Token{}, false, Token{}, false, nil, err
	}
	if !found && ref.LateID == "" {
		// Snapshot expiry may have removed every snapshot carrying the token; the table
		// property the sink keeps on main still says how far it committed.
		if v, ok := meta.Properties()[CommittedThroughKey(ref.SinkID)]; ok && (branch == "" || branch == table.MainBranch) {
			if ms, perr := strconv.ParseInt(v, 10, 64); perr == nil && ms >= ref.WindowEndMs {
				tok := Token{CommittedThroughMs: ms, FromProperty: true}
				return tok, true, tok, true, nil, nil
			}
		}
	}
	through := ref.WindowEndMs
	if found {
		if ref.LateID == "" && newest.CommittedThroughMs >= ref.WindowEndMs {
			return newest, true, newest, true, nil, nil
		}
		through = max(through, newest.CommittedThroughMs)
	}
	if ref.LateID != "" && found {
		if held, ok, err := findLatePane(meta, branch, ref); err != nil || ok {
			return held, ok, newest, found, nil, err
		}
	}
	props = map[string]string{
		SummarySinkID:                   ref.SinkID,
		CommittedThroughKey(ref.SinkID): strconv.FormatInt(through, 10),
	}
	if ref.LateID != "" {
		props[LatePaneKey(ref.SinkID)] = ref.LateID
	}
	return Token{}, false, newest, found, props, nil
}

// findLatePane walks the ancestry of branch for the snapshot carrying ref's LateID,
// stopping at the first snapshot of the sink whose token predates ref's window.
func findLatePane(meta table.Metadata, branch string, ref WindowRef) (Token, bool, error) {
	if branch == "" {
		branch = table.MainBranch
	}
	head := meta.SnapshotByName(branch)
	if head == nil {
		return Token{}, false, nil
	}
	key, lateKey := CommittedThroughKey(ref.SinkID), LatePaneKey(ref.SinkID)
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
		if s.Summary.Properties[lateKey] == ref.LateID {
			sum := *s.Summary
			return Token{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, CommittedThroughMs: ms, Summary: &sum}, true, nil
		}
		if ms < ref.WindowEndMs {
			return Token{}, false, nil
		}
	}
	return Token{}, false, nil
}
