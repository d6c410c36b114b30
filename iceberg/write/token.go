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
