package commit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/iceberg-go/catalog"
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
	// SummaryContentPrefix prefixes the key holding, for one sink id, the content id
	// of the pane the snapshot committed (see WindowRef.ContentID), when it has one.
	SummaryContentPrefix = "beam.cdc.content."
)

// RunKey returns "beam.cdc.run.<sinkID>".
func RunKey(sinkID string) string { return SummaryRunPrefix + sinkID }

// PriorThroughKey returns "beam.cdc.prior-through-ms.<sinkID>".
func PriorThroughKey(sinkID string) string { return SummaryPriorThroughPrefix + sinkID }

// WindowKey returns "beam.cdc.window-ms.<sinkID>".
func WindowKey(sinkID string) string { return SummaryWindowPrefix + sinkID }

// ContentKey returns "beam.cdc.content.<sinkID>".
func ContentKey(sinkID string) string { return SummaryContentPrefix + sinkID }

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

// TokenSnapshotKey returns the table property key "beam.cdc.token-snapshot.<sinkID>",
// whose value "<token snapshot id>@<head snapshot id>" snapshot expiry records for
// every sink whose token it keeps (see Committer.ExpireSnapshots): the snapshot
// holding the sink's newest token, and main's head when expiry ran, of which the token
// snapshot was then an ancestor.
func TokenSnapshotKey(sinkID string) string { return PropertyTokenSnapshotPrefix + sinkID }

// PropertyTokenSnapshotPrefix prefixes the table property keys of TokenSnapshotKey.
const PropertyTokenSnapshotPrefix = "beam.cdc.token-snapshot."

// tokenSnapshot parses the TokenSnapshotKey property of sinkID in meta.
func tokenSnapshot(meta table.Metadata, sinkID string) (tokenID, headID int64, ok bool) {
	v, ok := meta.Properties()[TokenSnapshotKey(sinkID)]
	if !ok {
		return 0, 0, false
	}
	t, h, ok := strings.Cut(v, "@")
	if !ok {
		return 0, 0, false
	}
	tokenID, err1 := strconv.ParseInt(t, 10, 64)
	headID, err2 := strconv.ParseInt(h, 10, 64)
	return tokenID, headID, err1 == nil && err2 == nil
}

// walkSink calls fn on the ancestry of branch's head in meta, newest first, until fn
// returns false. Snapshot expiry keeps a sink's token snapshot but not every snapshot
// after it, so the ancestry may stop at a removed parent (a gap). On main the walk
// then goes on at the token snapshot expiry recorded for sinkID (TokenSnapshotKey),
// if the walk has passed the head recorded with it: the token snapshot was an
// ancestor of that head, so it is one of this head too. After a rollback below that
// head the walk does not cross the gap. complete is false when the walk ended at a gap
// it could not cross (snapshots that could hold the sink's commits are gone).
func walkSink(meta table.Metadata, branch, sinkID string, fn func(s *table.Snapshot) bool) (complete bool) {
	if branch == "" {
		branch = table.MainBranch
	}
	s := meta.SnapshotByName(branch)
	tokenID, headID, jump := tokenSnapshot(meta, sinkID)
	jump = jump && branch == table.MainBranch
	passed := false
	for s != nil {
		if !fn(s) {
			return true
		}
		passed = passed || s.SnapshotID == headID
		if s.SnapshotID == tokenID {
			jump = false
		}
		if s.ParentSnapshotID == nil {
			return true
		}
		parent := meta.SnapshotByID(*s.ParentSnapshotID)
		if parent == nil && jump && passed {
			parent, jump = meta.SnapshotByID(tokenID), false
		}
		s = parent
	}
	return false
}

// FindToken walks the ancestry of branch in meta, newest snapshot first (across the
// gap snapshot expiry leaves, see walkSink), and returns the newest token of sinkID.
// found is false when no ancestor carries one (also when the branch has no snapshot).
// A token whose value is not an integer is an error: the table's history was written
// by something else under the sink's key.
func FindToken(meta table.Metadata, branch, sinkID string) (tok Token, found bool, err error) {
	key := CommittedThroughKey(sinkID)
	walkSink(meta, branch, sinkID, func(s *table.Snapshot) bool {
		ms, ok, perr := tokenOf(s, key)
		if ok {
			tok, found = snapshotToken(s, ms), true
		}
		err = perr
		return !ok && err == nil
	})
	if err != nil {
		return Token{}, false, err
	}
	return tok, found, nil
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
	// pane LateID(WindowEndMs, ContentID) instead of being skipped. So is an on-time
	// commit of a window the sink's token has passed when no commit of this run
	// recorded the window with this content: it is not a retry but a pane that reached
	// the commit step after a later window's commit (see CheckWindow).
	ContentID string
}

// LateID returns the id of the late pane of the window ending windowEndMs whose
// content id is contentID.
func LateID(windowEndMs int64, contentID string) string {
	return strconv.FormatInt(windowEndMs, 10) + "/" + contentID
}

// WindowCheck is what CheckWindow finds of one commit of a sink on a branch.
type WindowCheck struct {
	// Done: the branch holds the commit, in the snapshot of Held.
	Done bool
	Held Token
	// Newest is the sink's newest token (Found: whether there is one).
	Newest Token
	Found  bool
	// Props are the token properties the commit must carry (when not Done).
	Props map[string]string
}

// CheckWindow looks on branch of meta for a commit of ref. The sink's windows commit
// in order, so an on-time window is held when the sink's newest token is at or past
// its end and the window was committed by ref's own run (a retry); a window an
// earlier run committed is committed again as the late pane of ref's content, which
// holds only rows that run did not commit. With a ContentID, "committed by ref's own
// run" is checked, not assumed: a snapshot of the run must record the window with
// that content. Otherwise the token passed the window before this content reached
// the committer (the Beam model rules that out for an on-time pane: its window's
// timer fires, and the token moves past it, only once the watermark passed the
// window, by when every on-time pane of it has arrived; a runner that runs two
// bundles of one key at once, as prism 2.77 does after a split, breaks it), and ref
// is committed as the late pane of its content instead of being skipped. A late pane is held when an ancestor
// carries its LateID, searched back to the first of the sink's snapshots that
// predates the window. It returns a WindowCheck: Held is the snapshot holding ref when
// Done; otherwise Props are the token properties the commit of ref must carry: the
// sink id, the committed-through value (never lowered, and never moved by a late pane past the window it had), the
// run, how far earlier runs committed, the window, and the late pane id if any. The
// committers also keep the committed-through value in the table property of the same
// key (on main), so that a window stays held when snapshot expiry has removed every
// snapshot carrying the token (Newest.FromProperty; its rows cannot be told from
// replays then, and the whole window is held).
func CheckWindow(meta table.Metadata, branch string, ref WindowRef) (WindowCheck, error) {
	newest, found, err := FindToken(meta, branch, ref.SinkID)
	if err != nil {
		return WindowCheck{}, err
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
	check := WindowCheck{Newest: newest, Found: found}
	lateID := ref.LateID
	prior := int64(0)
	if found {
		prior = newest.PriorThrough(ref.SinkID, ref.RunID)
		if lateID == "" && newest.CommittedThroughMs >= ref.WindowEndMs {
			if ref.RunID == "" || ref.ContentID == "" || newest.FromProperty {
				check.Done, check.Held = true, newest
				return check, nil
			}
			if ref.WindowEndMs > prior {
				held, ok, err := findOnTime(meta, branch, ref)
				if err != nil || ok {
					check.Done, check.Held = ok, held
					return check, err
				}
			}
			lateID = LateID(ref.WindowEndMs, ref.ContentID)
		}
	}
	if lateID != "" && found && !newest.FromProperty {
		if held, ok, err := findLatePane(meta, branch, ref.SinkID, ref.WindowEndMs, lateID); err != nil || ok {
			check.Done, check.Held = ok, held
			return check, err
		}
	}
	through := ref.WindowEndMs
	if found {
		through = max(through, newest.CommittedThroughMs)
	}
	props := map[string]string{
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
	if ref.ContentID != "" {
		props[ContentKey(ref.SinkID)] = ref.ContentID
	}
	check.Props = props
	return check, nil
}

// findOnTime returns the on-time commit of ref's window by ref's run with ref's
// content (see findRunWindow). A commit made before content ids were recorded
// matches by its window alone.
func findOnTime(meta table.Metadata, branch string, ref WindowRef) (held Token, found bool, err error) {
	lateKey, contentKey := LatePaneKey(ref.SinkID), ContentKey(ref.SinkID)
	return findRunWindow(meta, branch, ref.SinkID, ref.RunID, ref.WindowEndMs, func(p map[string]string) bool {
		c, ok := p[contentKey]
		return p[lateKey] == "" && (!ok || c == ref.ContentID)
	})
}

// findRunWindow walks the ancestry of branch (see walkSink) for a commit by run runID
// of sinkID of rows of the window ending windowEndMs (its on-time commit or a late
// pane, not a heartbeat) whose summary properties match, back to the first snapshot
// of the sink whose token predates the window.
func findRunWindow(meta table.Metadata, branch, sinkID, runID string, windowEndMs int64, match func(props map[string]string) bool) (held Token, found bool, err error) {
	key, winKey, runKey, lateKey := CommittedThroughKey(sinkID), WindowKey(sinkID), RunKey(sinkID), LatePaneKey(sinkID)
	walkSink(meta, branch, sinkID, func(s *table.Snapshot) bool {
		ms, ok, perr := tokenOf(s, key)
		if err = perr; !ok || err != nil {
			return err == nil
		}
		if ms < windowEndMs {
			return false
		}
		p := s.Summary.Properties
		if p[runKey] != runID || p[SummaryHeartbeat] != "" {
			return true
		}
		win, werr := strconv.ParseInt(p[winKey], 10, 64)
		if werr != nil { // made before window keys: an on-time commit ends at its window
			win = ms
			if late := p[lateKey]; late != "" {
				win, _, _ = cutInt(late)
			}
		}
		if win == windowEndMs && match(p) {
			held, found = snapshotToken(s, ms), true
			return false
		}
		return true
	})
	if err != nil {
		return Token{}, false, err
	}
	return held, found, nil
}

// tokenOf returns the token value (key is CommittedThroughKey) s's summary holds; ok
// is false when it holds none. A value that is not an integer is an error.
func tokenOf(s *table.Snapshot, key string) (ms int64, ok bool, err error) {
	if s.Summary == nil {
		return 0, false, nil
	}
	v, ok := s.Summary.Properties[key]
	if !ok {
		return 0, false, nil
	}
	if ms, err = strconv.ParseInt(v, 10, 64); err != nil {
		return 0, false, fmt.Errorf("snapshot %d: token %s=%q is not an integer: %w", s.SnapshotID, key, v, err)
	}
	return ms, true, nil
}

// snapshotToken is the Token of snapshot s, whose token value is ms.
func snapshotToken(s *table.Snapshot, ms int64) Token {
	sum := *s.Summary
	return Token{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, CommittedThroughMs: ms, Summary: &sum}
}

// findLatePane walks the ancestry of branch (see walkSink) for the snapshot of sinkID
// carrying lateID, stopping at the first snapshot of the sink whose token predates
// the window.
func findLatePane(meta table.Metadata, branch, sinkID string, windowEndMs int64, lateID string) (held Token, found bool, err error) {
	key, lateKey := CommittedThroughKey(sinkID), LatePaneKey(sinkID)
	walkSink(meta, branch, sinkID, func(s *table.Snapshot) bool {
		ms, ok, perr := tokenOf(s, key)
		if err = perr; !ok || err != nil {
			return err == nil
		}
		if s.Summary.Properties[lateKey] == lateID {
			held, found = snapshotToken(s, ms), true
			return false
		}
		return ms >= windowEndMs
	})
	if err != nil {
		return Token{}, false, err
	}
	return held, found, nil
}

// Committed reports whether run runID of sinkID has committed rows of the window
// ending windowEndMs to table ident of cat (its on-time commit or a late pane, on
// main); with an empty runID, whether the sink's token on main is at or past the
// window. The token alone does not show that a run committed a window: it passes a
// window whose panes never reached the commit.
func Committed(ctx context.Context, cat catalog.Catalog, ident table.Identifier, sinkID, runID string, windowEndMs int64) (bool, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return false, err
	}
	if runID != "" {
		_, ok, err := findRunWindow(tbl.Metadata(), table.MainBranch, sinkID, runID, windowEndMs, func(map[string]string) bool { return true })
		return ok, err
	}
	w, err := CheckWindow(tbl.Metadata(), table.MainBranch, WindowRef{SinkID: sinkID, WindowEndMs: windowEndMs})
	return w.Done, err
}

// WindowSnapshots returns the snapshots of sinkID on main of meta that committed rows
// of the window ending windowEndMs and were made by runs other than runID, newest
// first. complete is false when snapshot expiry has removed part of the history that
// could hold them: the window's rows cannot be known then.
func WindowSnapshots(meta table.Metadata, sinkID, runID string, windowEndMs int64) (snaps []*table.Snapshot, complete bool) {
	key, winKey, lateKey, runKey := CommittedThroughKey(sinkID), WindowKey(sinkID), LatePaneKey(sinkID), RunKey(sinkID)
	complete = walkSink(meta, table.MainBranch, sinkID, func(s *table.Snapshot) bool {
		through, ok, err := tokenOf(s, key)
		if err != nil || !ok {
			return err == nil // a token that is not an integer ends the walk, as one below the window
		}
		if through < windowEndMs {
			return false
		}
		p := s.Summary.Properties
		win, err := strconv.ParseInt(p[winKey], 10, 64)
		if err != nil { // made before window keys: an on-time commit ends at its window
			win = through
			if late := p[lateKey]; late != "" {
				w, _, _ := cutInt(late)
				win = w
			}
		}
		if win == windowEndMs && p[runKey] != runID && p[SummaryHeartbeat] == "" {
			snaps = append(snaps, s)
		}
		return true
	})
	return snaps, complete
}

// cutInt parses the integer before the first '/' of s.
func cutInt(s string) (int64, string, error) {
	for i := range len(s) {
		if s[i] == '/' {
			n, err := strconv.ParseInt(s[:i], 10, 64)
			return n, s[i+1:], err
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, "", err
}

// WindowEnd is the token value of window w (see CommitRequest.WindowEndMs): its max
// timestamp in milliseconds, the end of the global window for the global window.
func WindowEnd(w beam.Window) int64 {
	if _, ok := w.(window.GlobalWindow); ok {
		return mtime.EndOfGlobalWindowTime.Milliseconds()
	}
	return w.MaxTimestamp().Milliseconds()
}
