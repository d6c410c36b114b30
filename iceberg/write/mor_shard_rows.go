package write

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
)

// shardRowsToWriters is how many bytes of new rows one shard hands, per window, to
// its table's writer (morWriteFn), which writes the rows of a window from all shards
// into as few files as their size needs. Past it the shard writes the rest itself:
// its files are big enough to stand alone.
var shardRowsToWriters int64 = 32 << 20

// shardRows takes a shard's new rows of one window (packed bodies in the parser's
// schema, which is the table schema's top-level columns): packets go to the table's
// writer through emit, up to shardRowsToWriters bytes, and the rest to the shard's
// own data files. With row lineage, updated rows carry the _row_id of the row they
// replace (addUpdate): they travel in lineage packets, whose rows are in the
// schema of the table's columns and _row_id (see datafile.LineageSchema).
type shardRows struct {
	ctx     context.Context
	spec    Spec
	rt      *runtime
	tbl     *table.Table
	rs      *row.Schema
	lineage bool // rows may carry _row_id: the shard's own files store it
	emit    func([]byte)
	sent    int64
	packet  []byte            // rows in rs
	lpacket []byte            // rows in datafile.LineageSchema
	lrs     *row.Schema       // datafile.LineageSchema's
	bb      *row.BatchBuilder // direct writes, once past shardRowsToWriters
	fw      *datafile.Writer
}

// rowLineage reports whether merge-on-read updates of tbl keep the _row_id of the
// row they replace (see cdc.RowLineage).
func rowLineage(tbl *table.Table, spec Spec) bool {
	return cdc.RowLineage(tbl, config.DeleteFormat(spec.DeleteFormat), spec.EqualityColumns)
}

// packetHeader starts a packet of new rows: the table schema id, and whether the
// rows carry _row_id.
func packetHeader(schemaID int, lineage bool) []byte {
	h := uint64(schemaID) << 1
	if lineage {
		h |= 1
	}
	return binary.AppendUvarint(nil, h)
}

// readPacketHeader returns what packetHeader wrote and its length.
func readPacketHeader(p []byte) (schemaID int, lineage bool, n int) {
	h, n := binary.Uvarint(p)
	return int(h >> 1), h&1 == 1, n
}

// add takes one packed row.
func (s *shardRows) add(body []byte) error {
	if s.bb != nil {
		r, _, err := row.DecodeBody(s.rs, body)
		if err != nil {
			return err
		}
		return s.write(r)
	}
	if s.packet == nil {
		s.packet = packetHeader(s.tbl.Schema().ID, false)
	}
	s.packet = append(s.packet, body...)
	return s.sendFull(&s.packet)
}

// sendFull sends *p once full, and switches to direct writes once enough rows went
// to the writer.
func (s *shardRows) sendFull(p *[]byte) error {
	if len(*p) >= packetBytes {
		s.send(p)
	}
	if s.sent < shardRowsToWriters {
		return nil
	}
	// Enough for the writer: the shard writes the rest of its rows itself.
	s.send(&s.packet)
	s.send(&s.lpacket)
	sc := s.tbl.Schema()
	if s.lineage {
		sc = datafile.LineageSchema(sc)
	}
	var err error
	s.bb, err = row.NewBatchBuilder(sc, memory.DefaultAllocator)
	return err
}

func (s *shardRows) send(p *[]byte) {
	if *p == nil {
		return
	}
	s.emit(*p)
	s.sent += int64(len(*p))
	*p = nil
}

// addUpdate takes a new row that replaces a committed row (packed in rs), with
// the _row_id of that row when hasID: see cdc.ShardOutput.Update.
func (s *shardRows) addUpdate(body []byte, rowID int64, hasID bool) error {
	if !s.lineage {
		return errors.New("row lineage: an update without lineage")
	}
	if s.lrs == nil {
		s.lrs = row.SchemaOf(datafile.LineageSchema(s.tbl.Schema()))
	}
	var id any
	if hasID {
		id = rowID
	}
	if s.bb != nil {
		r, _, err := row.DecodeBody(s.rs, body)
		if err != nil {
			return err
		}
		return s.write(row.Of(s.lrs, append(slices.Clip(r.Values()), id)))
	}
	if s.lpacket == nil {
		s.lpacket = packetHeader(s.tbl.Schema().ID, true)
	}
	// The packed row with its _row_id appended, as datafile.LineageSchema's last column.
	var err error
	if s.lpacket, err = row.AppendBodyWith(s.lpacket, body, s.lrs, id); err != nil {
		return err
	}
	return s.sendFull(&s.lpacket)
}

// write adds r to the shard's own data files.
func (s *shardRows) write(r row.Row) error {
	if err := s.bb.AppendRow(r); err != nil {
		return fmt.Errorf("row %s: %w", r, err)
	}
	if s.bb.Len() >= batchRows {
		return s.flush()
	}
	return nil
}

func (s *shardRows) flush() error {
	if s.bb == nil || s.bb.Len() == 0 {
		return nil
	}
	if s.fw == nil {
		var err error
		if s.fw, err = datafile.NewWriter(s.ctx, s.tbl, s.bb.ArrowSchema(), s.spec.fileOptions(s.rt)); err != nil {
			return err
		}
	}
	return s.fw.Write(s.bb.NewBatch())
}

// close sends the remaining packets and returns the shard's own data files.
func (s *shardRows) close() ([]ibg.DataFile, error) {
	s.send(&s.packet)
	s.send(&s.lpacket)
	if err := s.flush(); err != nil {
		return nil, err
	}
	if s.bb != nil {
		s.bb.Release()
		s.bb = nil
	}
	if s.fw == nil {
		return nil, nil
	}
	fw := s.fw
	s.fw = nil
	return fw.Close()
}

// release stops the shard's writer (after an error) and frees its batch.
func (s *shardRows) release() {
	if s.fw != nil {
		s.fw.Close()
		s.fw = nil
	}
	if s.bb != nil {
		s.bb.Release()
		s.bb = nil
	}
}
