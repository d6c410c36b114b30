package iceberg_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func init() {
	register.DoFn2x1[iceberg.RecordBatch, func(row.Row), error](&batchRowsFn{})
}

// batchRowsFn turns RecordBatch elements back into rows, as Read emits them, so that
// ReadBatches' output can be compared with Read's.
type batchRowsFn struct {
	// Schema is the table's Iceberg schema (JSON).
	Schema string

	sc *ibg.Schema
}

func (fn *batchRowsFn) Setup() error {
	fn.sc = new(ibg.Schema)
	return json.Unmarshal([]byte(fn.Schema), fn.sc)
}

func (fn *batchRowsFn) ProcessElement(b iceberg.RecordBatch, emit func(row.Row)) error {
	if b.NumRows() == 0 {
		return errors.New("ReadBatches emitted an empty batch")
	}
	conv, err := row.NewArrowReader(b.Schema(), fn.sc)
	if err != nil {
		return err
	}
	rows, err := conv.AppendRows(b.RecordBatch, nil)
	if err != nil {
		return err
	}
	for _, r := range rows {
		emit(r)
	}
	return nil
}

func newBatchRowsFn(t *testing.T, sc *ibg.Schema) *batchRowsFn {
	t.Helper()
	js, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	return &batchRowsFn{Schema: string(js)}
}

func TestRecordBatchCoderRoundTrip(t *testing.T) {
	rt := reflect.TypeFor[iceberg.RecordBatch]()
	enc, dec := beam.NewElementEncoder(rt), beam.NewElementDecoder(rt)
	// SampleSchema has a nested struct, a list, a map, decimal(10,2), date, time,
	// timestamp and timestamptz, uuid, fixed and binary columns, with nulls.
	sample := icebergtest.SampleRecords(t, 50, 7)
	defer sample.Release()
	empty := icebergtest.Records(t, icebergtest.SampleSchema(), nil)
	defer empty.Release()
	noCols := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 3)
	defer noCols.Release()
	for _, c := range []struct {
		name string
		rec  arrow.RecordBatch
	}{{"sample", sample}, {"empty", empty}, {"no columns", noCols}, {"nil", nil}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := enc.Encode(iceberg.RecordBatch{RecordBatch: c.rec}, &buf); err != nil {
				t.Fatal(err)
			}
			v, err := dec.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes left after decoding", buf.Len())
			}
			got := v.(iceberg.RecordBatch)
			if c.rec == nil {
				if got.RecordBatch != nil {
					t.Fatalf("nil batch decoded as %v", got.RecordBatch)
				}
				return
			}
			defer got.Release()
			if !got.Schema().Equal(c.rec.Schema()) {
				t.Fatalf("schema %v, want %v", got.Schema(), c.rec.Schema())
			}
			if !array.RecordEqual(got.RecordBatch, c.rec) {
				t.Fatalf("batch %v, want %v", got.RecordBatch, c.rec)
			}
		})
	}
}

// TestReadBatchesMatchesRead reads the same tables with ReadBatches and with Read: the
// batches, as rows, are Read's rows (as multisets), with deletes of each kind, a
// filter, keep and drop, time travel and a bounded continuous read.
func TestReadBatchesMatchesRead(t *testing.T) {
	fixtures := []readFixture{
		newReadFixture(t, 3, true, "dv"),
		newReadFixture(t, 2, false, "pos"),
		newReadFixture(t, 3, false, "eq"),
	}
	type cfgCase struct {
		name    string
		opts    []iceberg.ReadOption
		shuffle bool // reshuffle the batches: they cross stages through their coder
	}
	cases := []cfgCase{
		{name: "all"},
		{name: "filter", opts: []iceberg.ReadOption{iceberg.WithFilter("id < 300 AND (int_col > 0 OR string_col LIKE 's-1%')")}},
		{name: "keep and filter on another column", opts: []iceberg.ReadOption{iceberg.WithKeep("id", "string_col"), iceberg.WithFilter("long_col > 0")}},
		{name: "drop", opts: []iceberg.ReadOption{iceberg.WithDrop("struct_col", "list_col", "binary_col")}, shuffle: true},
	}
	for _, f := range fixtures {
		fcases := cases
		if f.name == fixtures[0].name {
			snaps := f.tbl.Metadata().Snapshots()
			fcases = append(fcases,
				cfgCase{name: "snapshot before the deletes", opts: []iceberg.ReadOption{iceberg.WithSnapshotID(snaps[2].SnapshotID)}},
				cfgCase{name: "bounded continuous", opts: []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithPollInterval(time.Second),
					iceberg.WithReadToSnapshot(f.tbl.CurrentSnapshot().SnapshotID)}},
			)
		}
		for _, c := range fcases {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				p, s := beam.NewPipelineWithRoot()
				batches, err := iceberg.TryReadBatches(s, f.config(), c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if c.shuffle {
					batches = beam.Reshuffle(s, batches)
				}
				got := beam.ParDo(s, newBatchRowsFn(t, f.tbl.Schema()), batches)
				want := iceberg.Read(s, f.config(), c.opts...)
				passert.Equals(s, got, want)
				passert.NonEmpty(s, got)
				ptest.RunAndValidate(t, p)
			})
		}
	}
}

func TestReadBatchesErrors(t *testing.T) {
	f := newReadFixture(t, 3, false, "")
	cases := []struct {
		name string
		opts []iceberg.ReadOption
		want []string
	}{
		{"output type", []iceberg.ReadOption{iceberg.WithOutputType(reflect.TypeOf(sampleRecord{}))}, []string{`"output type"`}},
		{"unknown keep column", []iceberg.ReadOption{iceberg.WithKeep("idd")}, []string{`"keep"`, `"idd"`}},
		{"malformed filter", []iceberg.ReadOption{iceberg.WithFilter("id = = 3")}, []string{`"filter"`, "position"}},
		{"output type and keep with drop", []iceberg.ReadOption{iceberg.WithOutputType(reflect.TypeOf(sampleRecord{})),
			iceberg.WithKeep("id"), iceberg.WithDrop("int_col")}, []string{`"output type"`, "keep", "drop"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryReadBatches(s, f.config(), c.opts...)
			if err == nil {
				t.Fatal("TryReadBatches: no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !errors.Is(err, iceberg.ErrInvalidConfig) {
				t.Errorf("error %q is not ErrInvalidConfig", err)
			}
		})
	}
}
