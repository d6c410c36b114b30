package cdc

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"strings"

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

// Ambiguous is a key whose net effect depends on an order the changes do not give: at
// the key's last sequence number of the window there are two or more after-images
// (INSERT or UPDATE_AFTER) with different rows, so which row is the key's final state
// is unknown. A sequence number stands for one change of a key: a before-image or a
// delete, and one after-image (an exact duplicate of it, such as an at-least-once
// redelivery, is harmless). Different after-images at an earlier sequence number are
// not ambiguous: a later change decides the key's state whatever their order.
type Ambiguous struct {
	// Key is the encoded key.
	Key []byte
	// Seq is the key's last sequence number in the window.
	Seq int64
	// Changes are every change of the key with sequence number Seq (before-images and
	// deletes too), in sort order; Row is the packed row. None of them is applied.
	Changes []Record
}

// ErrAmbiguousOrder is wrapped by the errors of Ambiguous.Rejected.
var ErrAmbiguousOrder = errors.New("ambiguous change order")

// Rejected decodes a's changes with p's schema and returns each with an error wrapping
// ErrAmbiguousOrder that names the key, the sequence number and what was applied, for
// the dead letter output.
func (a *Ambiguous) Rejected(p *Parser) ([]Rejected, error) {
	out := make([]Rejected, 0, len(a.Changes))
	afters := 0
	for _, c := range a.Changes {
		if c.Kind == Insert || c.Kind == UpdateAfter {
			afters++
		}
	}
	var key string
	for i, c := range a.Changes {
		r, _, err := row.DecodeBody(p.Schema(), c.Row)
		if err != nil {
			return nil, fmt.Errorf("iceberg: cdc %s: %w", p.table, err)
		}
		if i == 0 {
			var b strings.Builder
			for j, v := range p.KeyOf(r) {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s=%v", p.KeyColumns()[j], v)
			}
			key = b.String()
		}
		out = append(out, Rejected{Row: r, Err: fmt.Errorf(
			"iceberg: cdc %s: %s of key (%s) at sequence number %d: %w: the key has %d different after-images "+
				"with sequence number %d, so its final row is unknown; none of its %d changes with that sequence "+
				"number is applied (the key keeps its state before them): send the right change again with a higher sequence number",
			p.table, c.Kind, key, a.Seq, ErrAmbiguousOrder, afters, a.Seq, len(a.Changes))})
	}
	return out, nil
}

// CollapseChecked groups sorted records (from Sorter.Sorted) by key and calls emit
// with each key's net effect; Net's slices are only valid during the call. Records
// out of order are an error. Changes of one key with equal sequence numbers apply in
// kind order (see Kind). A key whose last sequence number carries two different
// after-images is held back (see Ambiguous): its changes before that sequence number
// are collapsed and emitted as usual (a state the key really had), and the changes
// at that sequence number go to ambiguous instead of being applied. Ambiguous's
// slices are only valid during the call.
func CollapseChecked(recs iter.Seq2[*Record, error], upsert bool, emit func(*Net) error, ambiguous func(*Ambiguous) error) error {
	var (
		cur   Net
		kinds []Kind
		first []byte // the key's first row: it carries the key values
		last  []byte
		have  bool
		prev  Record
		// The changes with the key's last sequence number so far: where they start in
		// kinds, the last row and sequence number before them, and the changes
		// themselves, their rows packed in groupBuf.
		groupAt   int
		before    []byte
		beforeSeq int64
		group     []groupRec
		groupBuf  []byte
	)
	addGroup := func(r *Record) {
		group = append(group, groupRec{kind: r.Kind, off: len(groupBuf), end: len(groupBuf) + len(r.Row)})
		groupBuf = append(groupBuf, r.Row...)
	}
	flush := func() error {
		if !have {
			return nil
		}
		if conflicting(group, groupBuf) {
			if groupAt > 0 {
				cur.NetEffect = Effect(kinds[:groupAt], upsert)
				cur.Row = first
				if cur.Write {
					cur.Row = before
				}
				cur.MaxSeq, cur.Changes = beforeSeq, groupAt
				if err := emit(&cur); err != nil {
					return err
				}
			}
			a := &Ambiguous{Key: cur.Key, Seq: prev.Seq, Changes: make([]Record, len(group))}
			for i, g := range group {
				a.Changes[i] = Record{Key: cur.Key, Seq: prev.Seq, Kind: g.kind, Row: groupBuf[g.off:g.end:g.end]}
			}
			return ambiguous(a)
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
			if r.Seq != prev.Seq {
				groupAt, beforeSeq = len(kinds), prev.Seq
				before = append(before[:0], last...)
				group, groupBuf = group[:0], groupBuf[:0]
			}
			addGroup(r)
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
		groupAt, group, groupBuf = 0, group[:0], groupBuf[:0]
		addGroup(r)
	}
	return flush()
}

// groupRec is one change of the key's last sequence number: its kind and where its
// row is in the group's buffer.
type groupRec struct {
	kind     Kind
	off, end int
}

// conflicting reports whether the changes of one key and sequence number hold two
// after-images (INSERT or UPDATE_AFTER) with different rows.
func conflicting(group []groupRec, buf []byte) bool {
	var after []byte
	seen := false
	for _, g := range group {
		if g.kind != Insert && g.kind != UpdateAfter {
			continue
		}
		row := buf[g.off:g.end]
		if seen && !bytes.Equal(after, row) {
			return true
		}
		after, seen = row, true
	}
	return false
}

// Rejected is a change row that cannot be applied, with the reason.
type Rejected struct {
	Row row.Row
	Err error
}
