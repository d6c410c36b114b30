package read

import (
	"fmt"
	"slices"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// changeConv turns change batches into rows: the columns read, then _change_type,
// _commit_snapshot_id and _commit_snapshot_sequence_number.
type changeConv struct {
	conv *row.ArrowReader
	key  *ibg.Schema // the schema conv was built for
	out  *row.Schema
	rows []row.Row
}

// convert returns the change rows of b (valid until the next call).
func (c *changeConv) convert(b ChangeBatch) ([]row.Row, error) {
	rec := b.Batch.Rec
	if c.conv == nil || c.key != b.Batch.Schema || !c.conv.ArrowSchema().Equal(rec.Schema()) {
		conv, err := row.NewArrowReader(rec.Schema(), b.Batch.Schema)
		if err != nil {
			return nil, err
		}
		in := conv.Schema()
		names := append(slices.Clone(in.Names()), ChangeTypeColumn, CommitSnapshotIDColumn, CommitSequenceNumberColumn)
		types := append(slices.Clone(in.Types()), changeColumnTypes()...)
		c.conv, c.key, c.out = conv, b.Batch.Schema, row.NewSchema(names, types)
	}
	var err error
	c.rows, err = c.conv.AppendRows(rec, c.rows[:0])
	if err != nil {
		return nil, err
	}
	for i, r := range c.rows {
		vals := make([]any, 0, r.Len()+3)
		vals = append(append(vals, r.Values()...), b.ChangeType, b.SnapshotID, b.Sequence)
		c.rows[i] = row.Of(c.out, vals)
	}
	return c.rows, nil
}

// toChangeRowsFn emits the change rows of a table without identifier fields.
type toChangeRowsFn struct {
	changeConv
}

// ProcessElement emits the rows of one change batch.
func (fn *toChangeRowsFn) ProcessElement(b ChangeBatch, emit func(row.Row)) error {
	rows, err := fn.convert(b)
	if err != nil {
		return err
	}
	for _, r := range rows {
		emit(r)
	}
	return nil
}

// keyChangeRowsFn emits the change rows of a table with identifier fields keyed by
// (commit snapshot, key), for the net changes per key and snapshot.
type keyChangeRowsFn struct {
	// KeyColumns are the table's identifier field names.
	KeyColumns []string

	changeConv
	keySchema *row.Schema
	keyIdx    []int
	keyFor    *row.Schema
}

// ProcessElement emits the rows of one change batch with their keys.
func (fn *keyChangeRowsFn) ProcessElement(b ChangeBatch, emit func(row.Row, row.Row)) error {
	rows, err := fn.convert(b)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	if s := rows[0].Schema(); fn.keyFor != s {
		names := append([]string{CommitSnapshotIDColumn}, fn.KeyColumns...)
		types := []ibg.Type{ibg.PrimitiveTypes.Int64}
		fn.keyIdx = fn.keyIdx[:0]
		for _, k := range fn.KeyColumns {
			i := s.Index(k)
			if i < 0 {
				return fmt.Errorf("iceberg: read changes: key column %q was not read", k)
			}
			fn.keyIdx = append(fn.keyIdx, i)
			types = append(types, s.Types()[i])
		}
		fn.keySchema, fn.keyFor = row.NewSchema(names, types), s
	}
	for _, r := range rows {
		kv := make([]any, 0, len(fn.keyIdx)+1)
		kv = append(kv, b.SnapshotID)
		for _, i := range fn.keyIdx {
			kv = append(kv, r.Value(i))
		}
		emit(row.Of(fn.keySchema, kv), r)
	}
	return nil
}

// netChangesFn reduces the changes of one key in one snapshot to their net effect: a
// DELETE and an INSERT of an identical row cancel out (a row carried over by a
// rewrite), and the remaining DELETE and INSERT pairs become UPDATE_BEFORE and
// UPDATE_AFTER. It emits the emitted columns (Columns; empty: all) and the change
// columns.
type netChangesFn struct {
	// Columns are the emitted table columns (empty: every column read).
	Columns []string

	in   *row.Schema
	data *row.Schema
	out  *row.Schema
	proj []int
}

func (fn *netChangesFn) prepare(s *row.Schema) {
	if fn.in == s {
		return
	}
	n := s.Len() - 3
	fn.in = s
	fn.data = row.NewSchema(s.Names()[:n], s.Types()[:n])
	fn.proj = fn.proj[:0]
	if len(fn.Columns) == 0 {
		for i := range n {
			fn.proj = append(fn.proj, i)
		}
	} else {
		for _, c := range fn.Columns {
			fn.proj = append(fn.proj, s.Index(c))
		}
	}
	fn.proj = append(fn.proj, n, n+1, n+2)
	names := make([]string, len(fn.proj))
	types := make([]ibg.Type, len(fn.proj))
	for i, j := range fn.proj {
		names[i], types[i] = s.Names()[j], s.Types()[j]
	}
	fn.out = row.NewSchema(names, types)
}

// ProcessElement emits the net changes of one (snapshot, key) group.
func (fn *netChangesFn) ProcessElement(_ row.Row, rows func(*row.Row) bool, emit func(row.Row)) error {
	var dels, ins []row.Row
	var r row.Row
	for rows(&r) {
		fn.prepare(r.Schema())
		switch t, _ := r.Value(r.Len() - 3).(string); t {
		case changeDelete:
			dels = append(dels, r)
		case changeInsert:
			ins = append(ins, r)
		default:
			return fmt.Errorf("iceberg: read changes: unexpected change type %v", r.Value(r.Len()-3))
		}
	}
	n := fn.data.Len()
	dataOf := func(r row.Row) row.Row { return row.Of(fn.data, r.Values()[:n]) }
	// Carried-over rows: an identical DELETE and INSERT cancel out.
	for i := 0; i < len(ins); i++ {
		j := slices.IndexFunc(dels, func(d row.Row) bool { return row.Equal(dataOf(d), dataOf(ins[i])) })
		if j < 0 {
			continue
		}
		dels = slices.Delete(dels, j, j+1)
		ins = slices.Delete(ins, i, i+1)
		i--
	}
	pairs := min(len(dels), len(ins))
	out := func(r row.Row, change string) {
		vals := make([]any, len(fn.proj))
		for i, j := range fn.proj {
			vals[i] = r.Value(j)
		}
		vals[len(vals)-3] = change
		emit(row.Of(fn.out, vals))
	}
	for i, d := range dels {
		out(d, cmpChange(i < pairs, changeUpdateBefore, changeDelete))
	}
	for i, in := range ins {
		out(in, cmpChange(i < pairs, changeUpdateAfter, changeInsert))
	}
	return nil
}

func cmpChange(update bool, ifUpdate, otherwise string) string {
	if update {
		return ifUpdate
	}
	return otherwise
}
