package write

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
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
	var (
		id        int64
		refreshed Token // the token the last attempt refreshed
	)
	landed := func(_ context.Context, a *tableAttempt) (bool, error) {
		tok, found, err := FindToken(a.tbl.Metadata(), table.MainBranch, sinkID)
		if err != nil || !found || tok.SnapshotID == refreshed.SnapshotID || tok.Summary == nil ||
			tok.Summary.Properties[SummaryHeartbeat] != "true" {
			return false, err
		}
		id = tok.SnapshotID
		return true, nil
	}
	stage := func(ctx context.Context, a *tableAttempt) (bool, error) {
		tok, found, err := FindToken(a.tbl.Metadata(), table.MainBranch, sinkID)
		if err != nil || !found {
			return true, err
		}
		snap := a.tbl.Metadata().SnapshotByID(tok.SnapshotID)
		if snap == nil || time.Since(time.UnixMilli(snap.TimestampMs)) < maxAge {
			return true, nil
		}
		refreshed = tok
		props := ibg.Properties{}
		for k, v := range tok.Summary.Properties {
			if strings.HasPrefix(k, SummaryReservedPrefix) && (k == SummarySinkID || strings.HasSuffix(k, "."+sinkID)) &&
				k != LatePaneKey(sinkID) {
				props[k] = v
			}
		}
		props[SummaryHeartbeat] = "true"
		sc, err := table.SchemaToArrowSchema(a.tbl.Schema(), nil, false, false)
		if err != nil {
			return false, err
		}
		rdr, err := array.NewRecordReader(sc, nil)
		if err != nil {
			return false, err
		}
		defer rdr.Release()
		return false, a.txn.Append(ctx, rdr, props)
	}
	out, err := Committer{}.commitTable(ctx, cat, ident, tableChange{op: "heartbeat", landed: landed, stage: stage})
	if err != nil {
		return 0, config.WrapOp("heartbeat", name, err)
	}
	if out.tbl != nil {
		id = out.tbl.Metadata().CurrentSnapshot().SnapshotID
	}
	if id != 0 {
		log.Infof(ctx, "iceberg: heartbeat %s: sink %s token (through %d) refreshed in snapshot %d", name, sinkID, refreshed.CommittedThroughMs, id)
	}
	return id, nil
}

// SummaryHeartbeat marks the empty snapshots RefreshToken makes.
const SummaryHeartbeat = "beam.cdc.heartbeat"

// Heartbeat adds to s a periodic impulse from start to end every interval whose ticks
// refresh the sink's token on table (RefreshToken with maxAge interval): the
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
	_, err = RefreshToken(ctx, cat, ident, f.Spec.SinkID, time.Duration(f.IntervalMs)*time.Millisecond/2)
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
