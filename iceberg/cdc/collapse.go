package cdc

import (
	"bytes"
	"fmt"
	"iter"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// NetEffect is what one key's changes of one window amount to.
type NetEffect struct {
	// DeletePrior is true when the key's committed row (if the table has one) must go:
	// with upsert, or when an UPDATE_BEFORE or DELETE appears among the changes.
	DeletePrior bool
	// Write is true when a row is written: the last change is an INSERT or an
	// UPDATE_AFTER. The row written is that last change's row.
	Write bool
}

// Effect returns the net effect of one key's changes, given their kinds in apply
// order (see Sorter), with the rules of Beam Java's CDC sink:
//
//   - the committed row is deleted when upsert is on, or when an UPDATE_BEFORE or a
//     DELETE appears (anywhere: a DELETE followed by an INSERT replaces the row);
//   - a row is written when the last change is an INSERT or an UPDATE_AFTER; only
//     the last row is written, earlier after-images of the window are superseded;
//   - an INSERT then a DELETE of a key writes nothing; since a DELETE appears, the
//     key is still deleted from the table: for a new key resolution finds nothing
//     and nothing happens, and if the table did hold a row for the key (the INSERT
//     was then a duplicate without upsert), the DELETE removes it, as a DELETE of
//     that key would in any other window;
//   - an INSERT or UPDATE_AFTER alone without upsert keeps the committed row (the
//     change stream is expected to carry before-images; use upsert otherwise).
//
// A key whose partition columns change (UPDATE_BEFORE in one partition,
// UPDATE_AFTER in another) needs nothing special: deletion is by key, resolved
// against every data file of the table wherever the old row is, and the new row is
// written to the partition of its own values.
func Effect(kinds []Kind, upsert bool) NetEffect {
	if len(kinds) == 0 {
		return NetEffect{}
	}
	e := NetEffect{DeletePrior: upsert}
	for _, k := range kinds {
		if k == UpdateBefore || k == Delete {
			e.DeletePrior = true
		}
	}
	last := kinds[len(kinds)-1]
	e.Write = last == Insert || last == UpdateAfter
	return e
}

// Net is the net effect of one key's changes with the row to write.
type Net struct {
	NetEffect
	// Key is the encoded key.
	Key []byte
	// Row is the packed row of the last change (for Write), and otherwise of the
	// first change, which still carries the key values.
	Row []byte
	// MaxSeq is the highest sequence number among the key's changes.
	MaxSeq int64
	// Changes is the number of changes collapsed.
	Changes int
}

// Collapse groups sorted records (from Sorter.Sorted) by key and calls emit with
// each key's net effect. Net's slices are only valid during the call. Records out of
// order are an error.
func Collapse(recs iter.Seq2[*Record, error], upsert bool, emit func(*Net) error) error {
	var (
		cur   Net
		kinds []Kind
		first []byte
		last  []byte
		have  bool
		prev  Record
	)
	flush := func() error {
		if !have {
			return nil
		}
		cur.NetEffect = Effect(kinds, upsert)
		if cur.Write {
			cur.Row = last
		} else {
			cur.Row = first
		}
		return emit(&cur)
	}
	for r, err := range recs {
		if err != nil {
			return err
		}
		if have && bytes.Equal(r.Key, cur.Key) {
			if Compare(&prev, r) > 0 {
				return fmt.Errorf("iceberg: cdc collapse: records out of order (seq %d %s after seq %d %s)",
					r.Seq, r.Kind, prev.Seq, prev.Kind)
			}
			kinds = append(kinds, r.Kind)
			last = append(last[:0], r.Row...)
			cur.MaxSeq = max(cur.MaxSeq, r.Seq)
			cur.Changes++
			prev.Seq, prev.Kind = r.Seq, r.Kind
			continue
		}
		if have && bytes.Compare(r.Key, cur.Key) < 0 {
			return fmt.Errorf("iceberg: cdc collapse: records out of order (key %x after %x)", r.Key, cur.Key)
		}
		if err := flush(); err != nil {
			return err
		}
		have = true
		cur = Net{Key: append(cur.Key[:0], r.Key...), MaxSeq: r.Seq, Changes: 1}
		kinds = append(kinds[:0], r.Kind)
		first = append(first[:0], r.Row...)
		last = append(last[:0], r.Row...)
		prev = Record{Key: cur.Key, Seq: r.Seq, Kind: r.Kind}
	}
	return flush()
}

// Result is the net effect of one shard's (or table's) window.
type Result struct {
	// DeleteKeys are the keys whose committed row must go, one value per equality
	// column.
	DeleteKeys [][]any
	// Rows are the rows to write, without control columns, in the Parser's schema.
	Rows []row.Row
	// MaxSeq is the highest sequence number seen (0 when empty).
	MaxSeq int64
	// Changes is the number of changes collapsed.
	Changes int
}

// CollapseAll collapses sorted records into a Result, decoding packed rows with p's
// schema. It holds the whole result in memory; a DoFn that streams rows into a
// BatchBuilder uses Collapse instead.
func CollapseAll(p *Parser, recs iter.Seq2[*Record, error], upsert bool) (Result, error) {
	var res Result
	sc := p.Schema()
	err := Collapse(recs, upsert, func(n *Net) error {
		r, _, err := row.DecodeBody(sc, n.Row)
		if err != nil {
			return fmt.Errorf("iceberg: cdc collapse: %w", err)
		}
		if n.DeletePrior {
			res.DeleteKeys = append(res.DeleteKeys, p.KeyOf(r))
		}
		if n.Write {
			res.Rows = append(res.Rows, r)
		}
		res.MaxSeq = max(res.MaxSeq, n.MaxSeq)
		res.Changes += n.Changes
		return nil
	})
	return res, err
}

// SortAndCollapse parses rows, sorts them in a Sorter bounded by memoryLimit bytes
// and collapses them: the whole per-shard step for callers that hold the rows. Rows
// that fail to parse are returned in rejected with their errors and left out.
func SortAndCollapse(p *Parser, rows []row.Row, upsert bool, memoryLimit int64) (res Result, rejected []Rejected, err error) {
	s := NewSorter(memoryLimit, "")
	defer s.Close()
	var kb, body []byte
	for _, r := range rows {
		c, perr := p.Parse(r)
		if perr == nil {
			kb, perr = p.AppendKey(kb[:0], c.Key)
		}
		if perr == nil {
			body, perr = row.AppendBody(body[:0], c.Row)
		}
		if perr != nil {
			rejected = append(rejected, Rejected{Row: r, Err: perr})
			continue
		}
		if err := s.Add(kb, c.Seq, c.Kind, body); err != nil {
			return Result{}, rejected, err
		}
	}
	res, err = CollapseAll(p, s.Sorted(), upsert)
	return res, rejected, err
}

// Rejected is a change row that cannot be applied, with the reason.
type Rejected struct {
	Row row.Row
	Err error
}
