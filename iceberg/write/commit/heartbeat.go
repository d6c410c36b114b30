package commit

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// RefreshToken keeps sinkID's exactly-once token alive on the main branch of ident:
// when the newest snapshot carrying it is older than maxAge (by its timestamp), it
// commits an empty append snapshot carrying the same token values (committed-through
// and any other beam.cdc. key of the sink), so that expiring old snapshots cannot
// remove the sink's only token while the sink is idle. It returns the snapshot made,
// or 0 when the sink has no token or it is recent enough. The commit goes through
// the Committer's loop: conflicts are retried, and a lost response is recognised by
// the heartbeat snapshot now holding the token.
func RefreshToken(ctx context.Context, cat catalog.Catalog, ident table.Identifier, sinkID string, maxAge time.Duration) (int64, error) {
	name := strings.Join(ident, ".")
	h := &heartbeat{sinkID: sinkID, maxAge: maxAge}
	out, err := Committer{}.CommitTable(ctx, cat, ident, h)
	if err != nil {
		return 0, config.WrapOp("heartbeat", name, err)
	}
	if out.Table != nil {
		h.id = out.Table.Metadata().CurrentSnapshot().SnapshotID
	}
	if h.id != 0 {
		log.Infof(ctx, "iceberg: heartbeat %s: sink %s token (through %d) refreshed in snapshot %d", name, sinkID, h.refreshed.CommittedThroughMs, h.id)
	}
	return h.id, nil
}

// heartbeat is the Change of RefreshToken: an empty append snapshot carrying the
// sink's newest token values again, when that token is older than maxAge.
type heartbeat struct {
	sinkID    string
	maxAge    time.Duration
	refreshed Token // the token the last attempt refreshed
	id        int64 // the heartbeat snapshot found landed
}

func (h *heartbeat) Op() string { return "heartbeat" }

// Stage appends an empty snapshot with the sink's token keys, or does nothing when
// the sink has no token or it is younger than maxAge.
func (h *heartbeat) Stage(ctx context.Context, a *Attempt) (bool, error) {
	tok, found, err := FindToken(a.Table.Metadata(), table.MainBranch, h.sinkID)
	if err != nil || !found {
		return true, err
	}
	snap := a.Table.Metadata().SnapshotByID(tok.SnapshotID)
	if snap == nil || time.Since(time.UnixMilli(snap.TimestampMs)) < h.maxAge {
		return true, nil
	}
	h.refreshed = tok
	props := ibg.Properties{}
	for k, v := range tok.Summary.Properties {
		if strings.HasPrefix(k, SummaryReservedPrefix) && (k == SummarySinkID || strings.HasSuffix(k, "."+h.sinkID)) &&
			k != LatePaneKey(h.sinkID) {
			props[k] = v
		}
	}
	props[SummaryHeartbeat] = "true"
	sc, err := table.SchemaToArrowSchema(a.Table.Schema(), nil, false, false)
	if err != nil {
		return false, err
	}
	rdr, err := array.NewRecordReader(sc, nil)
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	return false, a.Txn.Append(ctx, rdr, props)
}

// Landed is true when the sink's newest token is now a heartbeat snapshot other than
// the token the attempt refreshed.
func (h *heartbeat) Landed(_ context.Context, a *Attempt) (bool, error) {
	tok, found, err := FindToken(a.Table.Metadata(), table.MainBranch, h.sinkID)
	if err != nil || !found || tok.SnapshotID == h.refreshed.SnapshotID || tok.Summary == nil ||
		tok.Summary.Properties[SummaryHeartbeat] != "true" {
		return false, err
	}
	h.id = tok.SnapshotID
	return true, nil
}

// Abandon does nothing: a heartbeat writes no file.
func (h *heartbeat) Abandon(context.Context, *Attempt) {}

// SummaryHeartbeat marks the empty snapshots RefreshToken makes.
const SummaryHeartbeat = "beam.cdc.heartbeat"
