package iceberg_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	register.Function1x1(lineageString)
	register.Function1x1(lineageRecordString)
	register.Function2x0(lineageBatchStrings)
	register.Emitter1[string]()
}

// lineageString formats a row of (id, _row_id, _last_updated_sequence_number).
func lineageString(r row.Row) string {
	return fmt.Sprint(r.Value(0), " ", r.Value(1), " ", r.Value(2))
}

// lineageRecord is the typed output of the lineage read.
type lineageRecord struct {
	ID     int64 `iceberg:"id"`
	RowID  int64 `iceberg:"_row_id"`
	SeqNum int64 `iceberg:"_last_updated_sequence_number"`
}

func lineageRecordString(r lineageRecord) string {
	return fmt.Sprint(r.ID, " ", r.RowID, " ", r.SeqNum)
}

// lineageBatchStrings formats the rows of a ReadBatches batch like lineageString.
func lineageBatchStrings(b iceberg.RecordBatch, emit func(string)) {
	for i := range int(b.NumRows()) {
		var vals []string
		for c := range 3 {
			vals = append(vals, b.Column(c).ValueStr(i))
		}
		emit(strings.Join(vals, " "))
	}
}

// TestReadRowLineage: on a format-version 3 table, keep can name the row lineage
// metadata columns. The fixture appends ids 0..599 in three commits of 200 rows
// (sequence numbers 1, 2, 3), each one data file, so a row's _row_id is its id
// (first_row_id of the k-th append is 200k, plus the row's position) and its
// _last_updated_sequence_number is id/200+1; rows deleted by the fixture's DVs are
// not read. Row, typed and batch outputs agree.
func TestReadRowLineage(t *testing.T) {
	f := newReadFixture(t, 3, false, "dv")
	live := wantRows(t, f, "", "id")
	var want []any
	for _, r := range live {
		id := r.(row.Row).Value(0).(int64)
		want = append(want, fmt.Sprint(id, " ", id, " ", id/200+1))
	}
	if len(want) != 600-6 {
		t.Fatalf("fixture has %d live rows, want 594", len(want))
	}
	cfg := f.config()
	cfg.Keep = []string{"id", "_row_id", "_last_updated_sequence_number"}

	p, s := beam.NewPipelineWithRoot()
	passert.Equals(s.Scope("rows"), beam.ParDo(s, lineageString, iceberg.Read(s, cfg)), want...)
	typed := iceberg.Read(s, cfg, iceberg.WithOutputType(reflect.TypeFor[lineageRecord]()))
	passert.Equals(s.Scope("typed"), beam.ParDo(s, lineageRecordString, typed), want...)
	passert.Equals(s.Scope("batches"), beam.ParDo(s, lineageBatchStrings, iceberg.ReadBatches(s, cfg)), want...)
	ptest.RunAndValidate(t, p)
}

// TestReadRowLineageErrors: the lineage columns are refused on a format-version 2
// table and in drop, with the key and the column named.
func TestReadRowLineageErrors(t *testing.T) {
	v2 := newReadFixture(t, 2, false, "")
	v3 := newReadFixture(t, 3, false, "")
	for _, c := range []struct {
		name string
		f    readFixture
		keep []string
		drop []string
		want []string
	}{
		{"v2 keep", v2, []string{"id", "_row_id"}, nil, []string{`"keep"`, "_row_id", "format-version 3", "version 2"}},
		{"drop", v3, nil, []string{"_last_updated_sequence_number"}, []string{`"drop"`, "_last_updated_sequence_number", "keep"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.f.config()
			cfg.Keep, cfg.Drop = c.keep, c.drop
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, cfg)
			if err == nil {
				t.Fatal("TryRead: no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
