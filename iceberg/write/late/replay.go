package late

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// maxReplayWindows bounds the windows a ReplayIndex keeps; a restart replays windows
// roughly in order, so the oldest is dropped first.
const maxReplayWindows = 16

// ReplayIndex tells the rows a restarted append replays from rows its earlier run
// never committed. For a window an earlier run of the sink committed (Replayed), it
// reads the rows of that window's snapshots of earlier runs (on-time and late panes)
// and counts them by content; each row of the window that matches a count not yet
// used is a replay and is skipped, any other row is new and is written (in a late
// pane of the window). Matches are undone when the bundle that made them fails
// (Begin), so that its retry matches again. Two identical rows are told apart only by
// their number: a window whose earlier run committed a row once and whose replay
// holds it twice writes it once more. When snapshot expiry has removed part of the
// window's history, every row of the window counts as replayed (with a warning), as
// the committer also skips such a window.
type ReplayIndex struct {
	SinkID, RunID string

	windows map[replayKey]*replayWindow
	order   []replayKey
	undo    []replayUndo
	buf     []byte
}

type replayKey struct {
	table string
	end   int64
}

type replayWindow struct {
	unknown bool // history expired: every row counts as replayed
	schema  *ibg.Schema
	counts  map[uint64]int32
}

type replayUndo struct {
	w *replayWindow
	h uint64
}

// NewReplayIndex returns the index of spec's sink and run.
func NewReplayIndex(sinkID, runID string) *ReplayIndex {
	return &ReplayIndex{SinkID: sinkID, RunID: runID}
}

// Begin starts a bundle: matches of a bundle that did not end with Done are undone.
func (x *ReplayIndex) Begin() {
	for _, u := range x.undo {
		u.w.counts[u.h]++
	}
	x.undo = x.undo[:0]
}

// Done ends a bundle whose output was emitted: its matches stay.
func (x *ReplayIndex) Done() { x.undo = x.undo[:0] }

// Seen reports whether r, a row of the window ending windowEndMs for tbl (already
// projected to the table's columns), is one an earlier run committed to that window
// and no earlier row of this run has matched.
func (x *ReplayIndex) Seen(ctx context.Context, cat catalog.Catalog, ident table.Identifier, windowEndMs int64, r row.Row) (bool, error) {
	name := strings.Join(ident, ".")
	k := replayKey{table: name, end: windowEndMs}
	w := x.windows[k]
	if w == nil {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return false, config.WrapOp("write", name, err)
		}
		if w, err = x.load(ctx, tbl, windowEndMs); err != nil {
			return false, config.OpErrorf("write", name, "rows committed to the window ending %d by earlier runs of sink %s: %w", windowEndMs, x.SinkID, err)
		}
		if x.windows == nil {
			x.windows = map[replayKey]*replayWindow{}
		}
		if len(x.order) >= maxReplayWindows {
			delete(x.windows, x.order[0])
			x.order = x.order[1:]
		}
		x.windows[k] = w
		x.order = append(x.order, k)
	}
	if w.unknown {
		return true, nil
	}
	h, err := x.hash(w.schema, r)
	if err != nil {
		return false, err
	}
	if w.counts[h] <= 0 {
		return false, nil
	}
	w.counts[h]--
	x.undo = append(x.undo, replayUndo{w: w, h: h})
	return true, nil
}

// hash returns the hash of r's values in sc's column order, encoded as Row bodies are.
func (x *ReplayIndex) hash(sc *ibg.Schema, r row.Row) (uint64, error) {
	vals, err := row.RowValues(r, sc)
	if err != nil {
		return 0, err
	}
	if x.buf, err = row.AppendBody(x.buf[:0], row.Of(row.SchemaOf(sc), vals)); err != nil {
		return 0, err
	}
	return maphash.Bytes(rowSeed, x.buf), nil
}

// load reads the rows earlier runs committed to the window ending windowEndMs.
func (x *ReplayIndex) load(ctx context.Context, tbl *table.Table, windowEndMs int64) (*replayWindow, error) {
	snaps, complete := commit.WindowSnapshots(tbl.Metadata(), x.SinkID, x.RunID, windowEndMs)
	w := &replayWindow{schema: tbl.Schema(), counts: map[uint64]int32{}}
	if !complete {
		log.Warnf(ctx, "iceberg: write %s: snapshots of sink %s that may hold the window ending %d have expired; its rows cannot be told from replays and are skipped (set token_heartbeat_seconds and expire less history)",
			strings.Join(tbl.Identifier(), "."), x.SinkID, windowEndMs)
		w.unknown = true
		return w, nil
	}
	if len(snaps) == 0 {
		return w, nil
	}
	fs, err := catalogs.FS(ctx, tbl)
	if err != nil {
		return nil, err
	}
	scan := tbl.Scan()
	sc := tbl.Schema()
	for _, s := range snaps {
		manifests, err := s.Manifests(fs)
		if err != nil {
			return nil, err
		}
		for _, m := range manifests {
			if m.ManifestContent() != ibg.ManifestContentData || m.SnapshotID() != s.SnapshotID {
				continue
			}
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, err
				}
				if e.Status() != ibg.EntryStatusADDED || e.SnapshotID() != s.SnapshotID {
					continue
				}
				df := e.DataFile()
				if err := x.count(ctx, scan, sc, df, w); err != nil {
					return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
				}
			}
		}
	}
	return w, nil
}

// count adds the rows of data file df (deletes not applied: the file's rows are what
// the run committed) to w.
func (x *ReplayIndex) count(ctx context.Context, scan *table.Scan, sc *ibg.Schema, df ibg.DataFile, w *replayWindow) error {
	_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Start: 0, Length: df.FileSizeBytes()}})
	if err != nil {
		return err
	}
	var rd *row.ArrowReader
	var rows []row.Row
	for rec, err := range records {
		if err != nil {
			return err
		}
		err = func(rec arrow.RecordBatch) error {
			defer rec.Release()
			if rd == nil || !rd.ArrowSchema().Equal(rec.Schema()) {
				if rd, err = row.NewArrowReader(rec.Schema(), sc); err != nil {
					return err
				}
			}
			if rows, err = rd.AppendRows(rec, rows[:0]); err != nil {
				return err
			}
			for _, r := range rows {
				h, err := x.hash(sc, r)
				if err != nil {
					return err
				}
				w.counts[h]++
			}
			return nil
		}(rec)
		if err != nil {
			return err
		}
	}
	return nil
}
