package cdc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// NoSeq stands for "no sequence number committed" in Committed.
const NoSeq = int64(math.MinInt64)

// ShardConfig configures a ShardWindow.
type ShardConfig struct {
	// Table is the table as loaded for the window. Parser parses change rows of its
	// current schema: packets of an older schema of Table are re-encoded in
	// Parser's.
	Table  *table.Table
	Parser *Parser
	// Upsert deletes the committed row of every key written (see Effect).
	Upsert bool
	// DeleteFormat is delete_format ("": by format version, see ResolveFormat).
	DeleteFormat config.DeleteFormat
	// Resolver resolves the keys to delete with deletion vectors; its KeyColumns are
	// the equality columns.
	Resolver Resolver
	// SorterMemory bounds the bytes of changes held in memory (sorter_memory_mb);
	// past it they spill to local disk (see Sorter).
	SorterMemory int64
	// Committed is what the sink had committed when the window's changes arrived
	// after the sink committed the window (a late pane, a restart's replay); nil
	// when the window is not committed.
	Committed *Committed
	// SinkID names the sink in the reasons of late changes.
	SinkID string
}

// Committed is what a sink has committed, for the changes of a window it has
// committed already: those newer than every change it committed are applied after
// them (late changes that keep their order); of the others, those an earlier run
// committed are skipped (a restart's replay), and the rest cannot be applied
// correctly (they could undo a newer change) and go to the dead letter output.
type Committed struct {
	// MaxSeq is the highest sequence number the sink has committed (NoSeq when
	// none).
	MaxSeq int64
	// PriorMax is the highest sequence number an earlier run of the sink committed
	// (NoSeq when none, or when the window is the running one's: its changes are
	// late, not replayed).
	PriorMax int64
}

// ShardOutput receives what a ShardWindow's changes amount to. Slices passed are
// only valid during the call. Every function is required.
type ShardOutput struct {
	// Write takes a new row, packed (row.AppendBody) in the Parser's schema.
	Write func(body []byte) error
	// Update takes, with row lineage (see ShardWindow.Lineage), a new row that
	// replaces a committed row, packed in the Parser's schema, with the _row_id
	// that row had (hasID false when it had none: not found, or written before
	// format version 3). Updates come after every Write, once the keys are
	// resolved.
	Update func(body []byte, rowID int64, hasID bool) error
	// Dead takes a change that cannot be applied, with the reason.
	Dead func(r row.Row, reason string)
}

// ShardResult is the net effect of one shard's window besides its new rows.
type ShardResult struct {
	// MinSeq and MaxSeq are the lowest and highest sequence numbers of the changes
	// applied (MinSeq is math.MaxInt64 and MaxSeq 0 when there are none; held-back
	// ambiguous changes count in MaxSeq).
	MinSeq, MaxSeq int64
	// DeleteKeys are the keys whose committed row must go, one value per equality
	// column.
	DeleteKeys [][]any
	// Resolution is DeleteKeys resolved to row positions, with deletion vectors
	// (nil with equality deletes, or without keys).
	Resolution *Resolution
	// Stats counts what the window did, for the write's metrics.
	Stats ShardStats
}

// ShardStats counts what one shard's window did.
type ShardStats struct {
	// Replayed counts changes an earlier run committed, skipped; LateDead late
	// changes sent to the dead letter output; LatePassed late changes applied.
	Replayed, LateDead, LatePassed int64
	// Ambiguous counts changes held back as ambiguous (see Ambiguous).
	Ambiguous int64
	// Spills and SpilledBytes are the Sorter's.
	Spills       int
	SpilledBytes int64
	// KeyFilesRead, KeyBytesRead, KeySpillRead and KeyIndexTime are the
	// Resolution's FilesRead, KeyBytes, SpillBytes and IndexTime.
	KeyFilesRead               int
	KeyBytesRead, KeySpillRead int64
	KeyIndexTime               time.Duration
}

// ShardWindow is the merge-on-read algorithm of one shard's window, as plain Go:
// it takes the shard's packets of parsed changes, skips replayed changes and
// dead-letters late ones that cannot be applied (see Committed), sorts the rest by
// (key, sequence number, kind) within ShardConfig.SorterMemory, collapses each key
// to its net effect (CollapseChecked: ambiguous keys go to the dead letter
// output), hands the new rows to its output and, with deletion vectors, resolves
// the keys to delete to row positions. With row lineage the rows that replace a
// committed row wait until their keys are resolved and keep that row's _row_id.
type ShardWindow struct {
	cfg          ShardConfig
	sc           *ibg.Schema
	format       config.DeleteFormat
	formatErr    error
	lineage      bool
	maxCommitted int64
	priorMax     int64
	sorter       *Sorter // the changes added, nil before the first Add and once closed
	res          ShardResult
	schemas      map[int]*row.Schema // older schemas of packets, by id
	conv         []byte
	joined       joined // what the key join sent (join packets)
}

// NewShardWindow returns the ShardWindow of cfg.
func NewShardWindow(cfg ShardConfig) *ShardWindow {
	w := &ShardWindow{cfg: cfg, sc: cfg.Table.Schema(), maxCommitted: NoSeq, priorMax: NoSeq, schemas: map[int]*row.Schema{}}
	if c := cfg.Committed; c != nil {
		w.maxCommitted, w.priorMax = c.MaxSeq, c.PriorMax
	}
	// An unusable delete format is an error only for a window that deletes.
	w.format, w.formatErr = ResolveFormat(cfg.Table, cfg.DeleteFormat, cfg.Resolver.KeyColumns)
	w.lineage = RowLineage(cfg.Table, cfg.DeleteFormat, cfg.Resolver.KeyColumns)
	return w
}

// Lineage reports whether the window's updates keep the _row_id of the row they
// replace (see RowLineage): they come through ShardOutput.Update.
func (w *ShardWindow) Lineage() bool { return w.lineage }

// Add sorts the changes of packet p (see NewPacket), but replayed and late ones
// (see Committed), which go to out.Dead; packets of the key join (IsJoinPacket)
// resolve the window's keys instead of Resolver (see JoinMarker). After the last
// packet, Finish applies them; Close frees a window that will not be finished.
func (w *ShardWindow) Add(p []byte, out ShardOutput) error {
	w.begin()
	if IsJoinPacket(p) {
		return w.joined.add(p)
	}
	return w.addPacket(p, &w.res, out)
}

// begin starts the window's sort, on its first Add (or a Finish without one).
func (w *ShardWindow) begin() {
	if w.sorter == nil {
		w.res = ShardResult{MinSeq: math.MaxInt64}
		w.sorter = NewSorter(w.cfg.SorterMemory, "")
	}
}

// Close frees the sorted changes of a window that was not finished.
func (w *ShardWindow) Close() {
	if w.sorter != nil {
		w.sorter.Close()
		w.sorter = nil
	}
}

// Finish applies the changes added (see Add) and returns the window's result: it
// collapses each key to its net effect, hands the new rows to out and, with
// deletion vectors, resolves the keys to delete to row positions. Its Stats are
// counted also when it fails. Finish may run on another goroutine than Add.
func (w *ShardWindow) Finish(ctx context.Context, out ShardOutput) (ShardResult, error) {
	w.begin()
	defer w.Close()
	res := w.res
	var updates *heldUpdates
	if w.lineage {
		updates = &heldUpdates{rows: NewSorter(w.cfg.SorterMemory, "")}
		defer updates.rows.Close()
	}
	keys, err := w.collapse(updates, &res, out)
	res.Stats.Spills, res.Stats.SpilledBytes = w.sorter.Spills(), w.sorter.SpilledBytes()
	if err != nil || len(keys) == 0 {
		return res, err
	}
	res.DeleteKeys = keys
	if w.formatErr != nil {
		return res, w.formatErr
	}
	if w.format != config.DeleteFormatDV {
		return res, nil // equality deletes: the keys are the deletes
	}
	var r *Resolution
	if w.joined.marked {
		r, err = w.joined.resolution(w.cfg.Table, w.cfg.Resolver.KeyColumns, keys)
	} else {
		r, err = w.cfg.Resolver.Resolve(ctx, w.cfg.Table, keys)
	}
	if err != nil {
		return res, err
	}
	res.Resolution = r
	res.Stats.KeyFilesRead, res.Stats.KeyBytesRead, res.Stats.KeySpillRead = r.FilesRead, r.KeyBytes, r.SpillBytes
	res.Stats.KeyIndexTime = r.IndexTime
	if updates != nil && len(updates.keys) > 0 {
		return res, w.update(ctx, r, len(keys), updates, out)
	}
	return res, nil
}

// addPacket adds the changes of packet p to the sorter, but replayed and late
// ones (see Committed). Rows parsed with an older table schema (the table evolved
// during the run) are re-encoded in the current one.
func (w *ShardWindow) addPacket(p []byte, res *ShardResult, out ShardOutput) error {
	id, err := PacketSchema(p)
	if err != nil {
		return err
	}
	from, err := w.packetSchema(id)
	if err != nil {
		return err
	}
	_, err = ReadPacket(p, func(key []byte, seq int64, kind Kind, body []byte) error {
		switch {
		case seq <= w.priorMax:
			res.Stats.Replayed++
			return nil
		case seq <= w.maxCommitted:
			res.Stats.LateDead++
			return w.deadLate(out, from, body, seq)
		case w.maxCommitted != NoSeq:
			res.Stats.LatePassed++ // a late change applied
		}
		res.MinSeq = min(res.MinSeq, seq)
		if from != nil {
			var err error
			if body, err = w.reencode(from, body); err != nil {
				return err
			}
		}
		return w.sorter.Add(key, seq, kind, body)
	})
	return err
}

// ErrUnknownSchema is the error of a packet parsed with a table schema the
// ShardWindow's table does not have: a worker parsed it with a newer schema than
// the shard's table (loaded before the table evolved). Its changes cannot be
// re-encoded in an older schema (new columns would be lost): the caller reloads
// the table and runs the window again.
var ErrUnknownSchema = errors.New("the changes were parsed with a newer table schema than the shard's")

// packetSchema returns the row schema of the table schema id when it is not the
// current one, nil when it is.
func (w *ShardWindow) packetSchema(id int) (*row.Schema, error) {
	if id == w.sc.ID {
		return nil, nil
	}
	if from := w.schemas[id]; from != nil {
		return from, nil
	}
	old, ok := w.cfg.Table.Schemas()[id]
	if !ok {
		return nil, fmt.Errorf("table has no schema %d: %w", id, ErrUnknownSchema)
	}
	from := row.SchemaOf(old)
	w.schemas[id] = from
	return from, nil
}

// reencode returns body, a packed row of schema from, packed in the Parser's
// schema (the returned slice is reused by the next call).
func (w *ShardWindow) reencode(from *row.Schema, body []byte) ([]byte, error) {
	r, _, err := row.DecodeBody(from, body)
	if err != nil {
		return nil, err
	}
	vals, err := row.RowValues(r, w.sc)
	if err != nil {
		return nil, err
	}
	w.conv, err = row.AppendBody(w.conv[:0], row.Of(w.cfg.Parser.Schema(), vals))
	return w.conv, err
}

// deadLate dead-letters a late change (body, in schema from, or the Parser's when
// nil) whose sequence number seq is not above the highest committed.
func (w *ShardWindow) deadLate(out ShardOutput, from *row.Schema, body []byte, seq int64) error {
	sc := from
	if sc == nil {
		sc = w.cfg.Parser.Schema()
	}
	r, _, err := row.DecodeBody(sc, body)
	if err != nil {
		return err
	}
	out.Dead(r, fmt.Sprintf(
		"late: the change arrived after its window was committed and its sequence number %d is not above %d, the highest sink %s has committed; applying it now could undo a newer change",
		seq, w.maxCommitted, w.cfg.SinkID))
	return nil
}

// collapse collapses the sorted changes: rows to write go to out, keys whose
// committed row must go are returned. When updates is not nil, the rows that
// replace a committed row are held there instead, to be written with the replaced
// row's _row_id.
func (w *ShardWindow) collapse(updates *heldUpdates, res *ShardResult, out ShardOutput) ([][]any, error) {
	p := w.cfg.Parser
	var keys [][]any
	err := CollapseChecked(w.sorter.Sorted(), w.cfg.Upsert, func(n *Net) error {
		res.MaxSeq = max(res.MaxSeq, n.MaxSeq)
		if n.DeletePrior {
			// The key's values, from its encoding: no need to decode the row. A key
			// encoded with other column types (an equality column promoted outside
			// the write) takes them from the row, re-encoded in the current schema.
			k, err := p.keys.decode(make([]any, 0, len(p.keyIdx)), n.Key)
			if err != nil {
				r, _, rerr := row.DecodeBody(p.Schema(), n.Row)
				if rerr != nil {
					return rerr
				}
				k = p.KeyOf(r)
			}
			keys = append(keys, k)
		}
		if !n.Write {
			return nil
		}
		if n.DeletePrior && updates != nil {
			return updates.add(n.Key, len(keys)-1, n.Row)
		}
		return out.Write(n.Row)
	}, func(a *Ambiguous) error {
		// Held back: two different after-images at the key's last sequence number.
		res.MaxSeq = max(res.MaxSeq, a.Seq)
		rejected, err := a.Rejected(p)
		if err != nil {
			return err
		}
		res.Stats.Ambiguous += int64(len(rejected))
		for _, r := range rejected {
			out.Dead(r.Row, r.Err.Error())
		}
		return nil
	})
	return keys, err
}

// heldUpdates are the new rows that replace a committed row, held by collapse
// until their keys are resolved.
type heldUpdates struct {
	rows *Sorter // under the index of their key in the delete keys (as sequence number)
	keys []int32 // those indexes, ascending
}

// add holds the packed row body of the key at index k of the delete keys.
func (u *heldUpdates) add(key []byte, k int, body []byte) error {
	u.keys = append(u.keys, int32(k))
	return u.rows.Add(key, int64(k), UpdateAfter, body)
}

// update hands the rows held in updates to out.Update, each with the _row_id of
// the row its key resolved to in res; nkeys is the number of keys resolved.
func (w *ShardWindow) update(ctx context.Context, res *Resolution, nkeys int, updates *heldUpdates, out ShardOutput) error {
	if len(res.Keys) != nkeys {
		return fmt.Errorf("row lineage: %d keys resolved, want %d", len(res.Keys), nkeys)
	}
	fs, err := w.cfg.Table.FS(ctx)
	if err != nil {
		return err
	}
	// Only the files holding an updated key are read for _row_id, not those whose
	// keys are all deleted.
	ids, err := res.RowIDs(ctx, fs, func(k int32) bool {
		_, found := slices.BinarySearch(updates.keys, k)
		return found
	})
	if err != nil {
		return err
	}
	for rec, err := range updates.rows.Sorted() {
		if err != nil {
			return err
		}
		id, ok := ids[int32(rec.Seq)]
		if err := out.Update(rec.Row, id, ok); err != nil {
			return err
		}
	}
	return nil
}
