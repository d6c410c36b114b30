package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func init() {
	register.DoFn2x0[int, func(iceberg.RecordBatch)](&makeBatchFn{})
	register.DoFn2x0[iceberg.DeadLetter, func(string)](&deadReasonFn{})
}

// makeBatchFn emits one record batch of 10 rows (ids seed*10 ..) of the shape Kind
// names: "ok" (id long not null, name string), "extra" (ok plus a column the table
// lacks), "type" (id as string), "nullid" (ok with a null id), "large" (ok with name
// a large string, as Arrow readers may give it).
type makeBatchFn struct {
	Kind string
}

func (f *makeBatchFn) ProcessElement(seed int, emit func(iceberg.RecordBatch)) {
	idType := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if f.Kind == "type" {
		idType = arrow.BinaryTypes.String
	}
	nameType := arrow.DataType(arrow.BinaryTypes.String)
	if f.Kind == "large" {
		nameType = arrow.BinaryTypes.LargeString
	}
	fields := []arrow.Field{{Name: "id", Type: idType, Nullable: f.Kind == "nullid"}, {Name: "name", Type: nameType, Nullable: true}}
	if f.Kind == "extra" {
		fields = append(fields, arrow.Field{Name: "zzz", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := seed * 10; i < seed*10+10; i++ {
		switch id := b.Field(0).(type) {
		case *array.Int64Builder:
			if f.Kind == "nullid" && i%10 == 3 {
				id.AppendNull()
			} else {
				id.Append(int64(i))
			}
		case *array.StringBuilder:
			id.Append(fmt.Sprint(i))
		}
		switch name := b.Field(1).(type) {
		case *array.StringBuilder:
			name.Append(fmt.Sprint("n", i))
		case *array.LargeStringBuilder:
			name.Append(fmt.Sprint("n", i))
		}
		if f.Kind == "extra" {
			b.Field(2).(*array.Int32Builder).Append(int32(i))
		}
	}
	emit(iceberg.RecordBatch{RecordBatch: b.NewRecordBatch()})
}

// deadReasonFn emits a dead letter's reason.
type deadReasonFn struct{}

func (deadReasonFn) ProcessElement(d iceberg.DeadLetter, emit func(string)) { emit(d.Reason) }

// copyConfig is the write of table ident in fixture f's catalog.
func copyConfig(f readFixture, ident, sinkID string) iceberg.WriteConfig {
	return iceberg.WriteConfig{Table: ident, CatalogName: f.cat.Name, CatalogProperties: f.cat.Props, SinkID: sinkID}
}

// TestWriteBatchesRoundTrip copies tables with ReadBatches -> WriteBatches: reading
// the copy gives the source's rows (as multisets), for a copy WriteBatches creates and
// for an existing partitioned one; a rerun with the same sink_id commits nothing.
func TestWriteBatchesRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		src    readFixture
		create bool // create the copy first, with the source's schema and partition spec
	}{
		{"created from the batches", newReadFixture(t, 3, false, "dv"), false},
		{"partitioned table", newReadFixture(t, 3, true, "dv"), true},
		{"v2 source with position deletes", newReadFixture(t, 2, false, "pos"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if c.create {
				icebergtest.CreateTable(t, c.src.cat.Catalog, "db.copy", c.src.tbl.Schema(),
					icebergtest.WithPartitionSpec(c.src.tbl.Spec()))
			}
			want := countRows(t, c.src.tbl)
			for run := range 2 {
				p, s := beam.NewPipelineWithRoot()
				batches := iceberg.ReadBatches(s, c.src.config())
				res, err := iceberg.TryWriteBatches(s, copyConfig(c.src, "db.copy", "copy-sink"), batches)
				if err != nil {
					t.Fatal(err)
				}
				passert.Count(s, res.DeadLetter, "dead letters", 0)
				runN++
				key := fmt.Sprintf("%s#%d", t.Name(), runN)
				beam.ParDo0(s, &recordSnapshotsFn{Key: key}, res.Snapshots)
				if err := ptest.Run(p); err != nil {
					t.Fatal(err)
				}
				snapMu.Lock()
				snaps := snapOut[key]
				snapMu.Unlock()
				if len(snaps) != 1 {
					t.Fatalf("run %d: snapshots %+v, want one", run, snaps)
				}
				if skipped := snaps[0].Skipped; skipped != (run == 1) {
					t.Fatalf("run %d: snapshot %+v, want skipped=%v", run, snaps[0], run == 1)
				}
				if run == 0 && snaps[0].RowsAdded != want {
					t.Fatalf("snapshot added %d rows, want %d", snaps[0].RowsAdded, want)
				}
			}
			cp, err := c.src.cat.Catalog.LoadTable(ctx, table.Identifier{"db", "copy"})
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, cp)
			if got := countRows(t, cp); got != want {
				t.Fatalf("copy has %d rows, want %d", got, want)
			}
			if c.create && !cp.Spec().Equals(c.src.tbl.Spec()) {
				t.Fatalf("copy spec %v, want %v", cp.Spec(), c.src.tbl.Spec())
			}
			p, s := beam.NewPipelineWithRoot()
			copyRead := c.src.config()
			copyRead.Table = "db.copy"
			passert.Equals(s, iceberg.Read(s, copyRead), iceberg.Read(s, c.src.config()))
			ptest.RunAndValidate(t, p)
		})
	}
}

// countRows counts the rows of tbl with iceberg-go's scan.
func countRows(t *testing.T, tbl *table.Table) int64 {
	t.Helper()
	_, itr, err := tbl.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n
}

// TestWriteBatchesSchemaMismatch writes batches that fit the table (one with a large
// string column for a string one) and batches that do not: the misfits go to the
// dead letter whole, with the reason naming the column, and the others are committed.
func TestWriteBatchesSchemaMismatch(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "extra", Type: ibg.PrimitiveTypes.Int32})
	icebergtest.CreateTable(t, lc.Catalog, "db.t", sc)
	p, s := beam.NewPipelineWithRoot()
	var parts []beam.PCollection
	for i, kind := range []string{"ok", "extra", "type", "nullid", "large"} {
		parts = append(parts, beam.ParDo(s, &makeBatchFn{Kind: kind}, beam.Create(s, i)))
	}
	cfg := iceberg.WriteConfig{Table: "db.t", CatalogName: lc.Name, CatalogProperties: lc.Props}
	res := iceberg.WriteBatches(s, cfg, beam.Flatten(s, parts...))
	passert.Equals(s, beam.ParDo(s, deadReasonFn{}, res.DeadLetter),
		`schema mismatch: column "zzz" is not in the table`,
		`schema mismatch: column "id" is long in the table, string in the rows`,
		`schema mismatch: column "id" is required and 1 rows of the batch are null`)
	ptest.RunAndValidate(t, p)
	tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, tbl); got != 20 {
		t.Fatalf("table has %d rows, want the 20 of the batches that fit", got)
	}
}

func TestTryWriteBatchesErrors(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	base := iceberg.WriteConfig{Table: "db.t", CatalogName: lc.Name, CatalogProperties: lc.Props}
	cases := []struct {
		name    string
		cfg     func(iceberg.WriteConfig) iceberg.WriteConfig
		rows    bool // a PCollection of Row instead of RecordBatch
		want    []string
		wantErr error
	}{
		{"merge-on-read", func(c iceberg.WriteConfig) iceberg.WriteConfig {
			c.Mode, c.EqualityColumns = iceberg.MergeOnRead, []string{"id"}
			return c
		}, false, []string{`"mode"`}, iceberg.ErrUnsupported},
		{"template", func(c iceberg.WriteConfig) iceberg.WriteConfig { c.Table = "db.t_{region}"; return c }, false, []string{`"table"`}, iceberg.ErrUnsupported},
		{"keep and hash", func(c iceberg.WriteConfig) iceberg.WriteConfig {
			c.Keep, c.DistributionMode = []string{"id"}, "hash"
			return c
		}, false, []string{`"keep"`, `"distribution_mode"`}, iceberg.ErrUnsupported},
		{"evolve_schema", func(c iceberg.WriteConfig) iceberg.WriteConfig { c.EvolveSchema = true; return c }, false, []string{`"evolve_schema"`}, iceberg.ErrUnsupported},
		{"rows", func(c iceberg.WriteConfig) iceberg.WriteConfig { return c }, true, []string{"RecordBatch"}, iceberg.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			var col beam.PCollection
			if c.rows {
				col = beam.Create(s, iceberg.Row{})
			} else {
				col = beam.ParDo(s, &makeBatchFn{Kind: "ok"}, beam.Create(s, 0))
			}
			_, err := iceberg.TryWriteBatches(s, c.cfg(base), col)
			if err == nil {
				t.Fatal("TryWriteBatches: no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !errors.Is(err, c.wantErr) {
				t.Errorf("error %q is not %v", err, c.wantErr)
			}
		})
	}
}

func init() {
	register.Function1x1(toStreamBatch)
}

// toStreamBatch makes a one-row batch (id, v) of a TestStream id, as toStreamRow
// makes a row.
func toStreamBatch(id int64) iceberg.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", id))
	return iceberg.RecordBatch{RecordBatch: b.NewRecordBatch()}
}

// TestStreamingWriteBatches: batches in 10 s windows commit once per window in
// window order, a batch late by less than allowed lateness is committed in a late
// pane, and a batch later than that reaches the dead letter output with the reason.
func TestStreamingWriteBatches(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	cfg := iceberg.WriteConfig{Table: "db.stream", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "stream-b"}
	cfg = cfg.With(iceberg.WithTriggeringFrequency(10*time.Second), iceberg.WithAllowedLateness(0))
	ts := teststream.NewConfig()
	for _, e := range []streamEvent{elems(1000, 1, 2), elems(12000, 12, 13), elems(23000, 23), watermark(31000),
		elems(25000, 25), // window [20s,30s) is the newest committed: late, within lateness
		elems(5000, 5),   // window [0s,10s) ended before the committed [20s,30s): too late
		elems(41000, 41)} {
		var err error
		if e.watermark {
			err = ts.AdvanceWatermark(e.at)
		} else {
			vals := make([]any, len(e.ids))
			for i, id := range e.ids {
				vals[i] = id
			}
			err = ts.AddElements(e.at, vals...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWriteBatches(s, cfg, beam.ParDo(s, toStreamBatch, teststream.Create(s, ts)))
	if err != nil {
		t.Fatal(err)
	}
	runN++
	key := fmt.Sprintf("%s#%d", t.Name(), runN)
	beam.ParDo0(s, &recordDeadFn{Key: key}, res.DeadLetter)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "stream"})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	if got, want := tableIDs(t, tbl, "id"), idStrings(1, 2, 12, 13, 23, 25, 41); !slices.Equal(got, want) {
		t.Errorf("table ids = %v, want %v", got, want)
	}
	want := []string{"9999", "19999", "29999", "29999 late 29999/", "49999"}
	got := sinkCommits(t, tbl, "stream-b")
	if len(got) == len(want) && strings.HasPrefix(got[3], want[3]) {
		got[3] = want[3] // the late pane id ends in a hash of its content
	}
	if !slices.Equal(got, want) {
		t.Errorf("commits (committed-through, oldest first) = %v, want %v<content>", got, want)
	}
	snapMu.Lock()
	dead := deadOut[key]
	snapMu.Unlock()
	if len(dead) != 1 || !strings.Contains(dead[0].Row, "1 rows") || !strings.Contains(dead[0].Reason, "allowed_lateness_seconds") {
		t.Errorf("dead letters = %+v, want the batch of row 5 rejected as late", dead)
	}
}
