package iceberg_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// CityImage is the row image of a Debezium envelope of the cities table.
type CityImage struct {
	ID    int64  `iceberg:"id"`
	City  string `iceberg:"city"`
	State string `iceberg:"state"`
}

// EnvelopeSource is the source block of a Debezium envelope.
type EnvelopeSource struct {
	DB  string `iceberg:"db"`
	LSN int64  `iceberg:"lsn"`
}

// CityEnvelope is a Debezium change event as the connector sends it: null fields
// are nil pointers (a tombstone is the zero CityEnvelope).
type CityEnvelope struct {
	Before *CityImage      `iceberg:"before"`
	After  *CityImage      `iceberg:"after"`
	Source *EnvelopeSource `iceberg:"source"`
	Op     *string         `iceberg:"op"`
	TsMs   *int64          `iceberg:"ts_ms"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[CityImage]())
	beam.RegisterType(reflect.TypeFor[EnvelopeSource]())
	beam.RegisterType(reflect.TypeFor[CityEnvelope]())
}

// debeziumEnvelopeConfig is the Debezium configuration of the README: the row
// image in after (before for deletes), op mapped, the log position in source.lsn.
func debeziumEnvelopeConfig(lc *icebergtest.LocalCatalog, table, sinkID string) iceberg.WriteConfig {
	return iceberg.WriteConfig{Table: table, CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, Only: "after", BeforeField: "before",
		ChangeTypeColumn: "op", ChangeTypeMap: map[string]string{"r": iceberg.ChangeInsert, "c": iceberg.ChangeInsert,
			"u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
		Upsert: true, SequenceNumberColumn: "source.lsn", EqualityColumns: []string{"id"}, SinkID: sinkID}
}

// icebeamCounters sums the pipeline's counters of the icebeam namespace by name
// (over the steps that count them).
func icebeamCounters(r beam.PipelineResult) map[string]int64 {
	counters := map[string]int64{}
	for _, c := range r.Metrics().AllMetrics().Counters() {
		if c.Key.Namespace == "icebeam" {
			counters[c.Key.Name] += c.Result()
		}
	}
	return counters
}

// runMORCounters is runMOR that also returns the icebeam counters of the run.
func runMORCounters(t *testing.T, cfg iceberg.WriteConfig, build func(s beam.Scope) beam.PCollection) ([]iceberg.SnapshotInfo, []iceberg.DeadLetter, map[string]int64) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, cfg, build(s))
	if err != nil {
		t.Fatal(err)
	}
	morMu.Lock()
	morRuns++
	key := fmt.Sprintf("%s#%d", t.Name(), morRuns)
	morMu.Unlock()
	beam.ParDo0(s, &morSnapsFn{Key: key}, res.Snapshots)
	beam.ParDo0(s, &morDeadFn{Key: key}, res.DeadLetter)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	counters := icebeamCounters(pr)
	morMu.Lock()
	defer morMu.Unlock()
	return morSnaps[key], morDead[key], counters
}

// envelopeRow builds a Debezium envelope as a Row: images are (id, city, state) or
// nil, lsn < 0 means no source block.
func envelopeRow(op any, before, after []any, lsn int64) iceberg.Row {
	img := iceberg.NewRowSchema([]string{"id", "city", "state"}, nil)
	src := iceberg.NewRowSchema([]string{"db", "lsn"}, nil)
	vals := []any{nil, nil, nil, op, int64(1732000000000)}
	if before != nil {
		vals[0] = iceberg.RowOf(img, before)
	}
	if after != nil {
		vals[1] = iceberg.RowOf(img, after)
	}
	if lsn >= 0 {
		vals[2] = iceberg.RowOf(src, []any{"shop", lsn})
	}
	return iceberg.NewRow([]string{"before", "after", "source", "op", "ts_ms"}, vals)
}

func img(id int64, city, state string) []any { return []any{id, city, state} }

// TestMergeOnReadDebeziumEnvelopeRows applies Debezium envelopes (Rows, as a
// decoder of the connector's JSON makes them) to a seeded table by configuration
// alone: c, u (after-image, upsert), d (before-image, after null), r with and without
// a source position, tombstones (skipped and counted) and envelopes that cannot be
// applied (dead-lettered with the reason, naming the row).
func TestMergeOnReadDebeziumEnvelopeRows(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "envrows", 100, 3)
	cfg := debeziumEnvelopeConfig(lc, "db.envrows", "env-rows")
	rows := []iceberg.Row{
		envelopeRow("r", nil, img(200, "snap-200", "OR"), -1), // snapshot read without a position
		envelopeRow("r", nil, img(201, "snap-201", "OR"), 5),
		envelopeRow("c", nil, img(500, "new-500", "WA"), 10),
		envelopeRow("u", img(1, "city-1", "CA"), img(1, "city-1", "NY"), 11),
		envelopeRow("d", img(5, "city-5", "CA"), nil, 12),
		envelopeRow(nil, nil, nil, 12), // Debezium's tombstone after the delete
		{},                             // a null event
		envelopeRow("d", img(200, "snap-200", "OR"), nil, 13),
		envelopeRow("c", nil, img(200, "again-200", "NV"), 14),
		envelopeRow("u", img(7, "city-7", "CA"), img(7, "first", "TX"), 15),
		envelopeRow("u", img(7, "first", "TX"), img(7, "second", "UT"), 16),
	}
	bad := []struct {
		row    iceberg.Row
		reason string
	}{
		{envelopeRow("d", nil, nil, 20), `no row image: "before" and "after" are null (change type DELETE)`},
		{envelopeRow("c", nil, nil, 21), `no row image: "after" is null (change type INSERT)`},
		{envelopeRow("u", nil, img(8, "x", "x"), -1), `sequence number column "source.lsn" is null`},
		{envelopeRow("x", nil, img(9, "x", "x"), 22), `unknown value "x"`},
		{envelopeRow("c", nil, []any{nil, "x", "x"}, 23), `column "id" is null`},
	}
	for _, b := range bad {
		rows = append(rows, b.row)
	}
	snaps, dead, counters := runMORCounters(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dead), len(bad), dead)
	}
	for _, b := range bad {
		found := false
		for _, d := range dead {
			found = found || (d.Row == b.row.String() && strings.Contains(d.Reason, b.reason) && d.Table == "db.envrows")
		}
		if !found {
			t.Errorf("no dead letter for %s with reason containing %s; got %+v", b.row, b.reason, dead)
		}
	}
	if counters["tombstones_skipped"] != 2 || counters["dead_letters"] != int64(len(bad)) {
		t.Errorf("counters %v: want 2 tombstones skipped, %d dead letters", counters, len(bad))
	}
	if len(snaps) != 1 || snaps[0].Skipped {
		t.Fatalf("snapshots %+v", snaps)
	}
	got, tbl := cityContents(t, lc, "envrows")
	want := map[int64]string{}
	for id := range int64(100) {
		want[id] = fmt.Sprintf("city-%d|CA", id)
	}
	delete(want, 5)
	maps.Copy(want, map[int64]string{1: "city-1|NY", 7: "second|UT", 200: "again-200|NV", 201: "snap-201|OR", 500: "new-500|WA"})
	if diff := diffModel(want, got); diff != "" {
		t.Fatalf("table differs from the model:\n%s", diff)
	}
	if n := tbl.Schema().NumFields(); n != 3 {
		t.Errorf("table has %d columns, want 3 (nothing of the envelope but the image)", n)
	}
	if v := tbl.CurrentSnapshot().Summary.Properties["beam.cdc.max-committed-seq.env-rows"]; v != "16" {
		t.Errorf("max committed seq %q, want 16", v)
	}
}

// TestMergeOnReadDebeziumEnvelopeRowsCreateTable: Row envelopes create the missing
// table from the first row image whose types they show (a delete's before-image
// here; the tombstone before it cannot), with the equality column as its key.
func TestMergeOnReadDebeziumEnvelopeRowsCreateTable(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	cfg := debeziumEnvelopeConfig(lc, "db.envcreate", "env-create")
	rows := []iceberg.Row{
		envelopeRow(nil, nil, nil, -1),
		envelopeRow("d", img(1, "gone", "CA"), nil, 1),
		envelopeRow("c", nil, img(2, "kept", "NY"), 2),
		envelopeRow("r", nil, img(3, "snap", "WA"), -1),
	}
	snaps, dead, counters := runMORCounters(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 0 || len(snaps) != 1 || counters["tombstones_skipped"] != 1 {
		t.Fatalf("snapshots %+v, dead %+v, counters %v", snaps, dead, counters)
	}
	got, tbl := cityContents(t, lc, "envcreate")
	if diff := diffModel(map[int64]string{2: "kept|NY", 3: "snap|WA"}, got); diff != "" {
		t.Fatalf("table differs:\n%s", diff)
	}
	if sc := tbl.Schema(); sc.NumFields() != 3 || len(sc.IdentifierFieldIDs) != 1 {
		t.Fatalf("schema %s", sc)
	}
}

// debeziumEnvelopes returns Debezium envelopes (c, u, d, r, tombstones after
// deletes) over n keys in batches, and the model of the table after each batch.
func debeziumEnvelopes(n int, batches int) ([][]CityEnvelope, []map[int64]string) {
	str := func(s string) *string { return &s }
	lsn := int64(0)
	live := map[int64]CityImage{}
	var out [][]CityEnvelope
	var models []map[int64]string
	ev := func(op string, before, after *CityImage) CityEnvelope {
		lsn++
		ts := 1732000000000 + lsn
		return CityEnvelope{Before: before, After: after, Source: &EnvelopeSource{DB: "shop", LSN: lsn}, Op: str(op), TsMs: &ts}
	}
	for b := range batches {
		var cur []CityEnvelope
		for id := int64(0); id < int64(n); id++ {
			old, ok := live[id]
			switch {
			case b == 0 && id%2 == 0:
				im := CityImage{ID: id, City: fmt.Sprintf("snap-%d", id), State: "CA"}
				e := ev("r", nil, &im)
				if id%4 == 0 {
					e.Source = nil // a snapshot read without a position
				}
				cur = append(cur, e)
				live[id] = im
			case !ok && (id+int64(b))%3 == 0:
				im := CityImage{ID: id, City: fmt.Sprintf("new-%d-%d", id, b), State: "WA"}
				cur = append(cur, ev("c", nil, &im))
				live[id] = im
			case ok && (id+int64(b))%5 == 0:
				cur = append(cur, ev("d", &old, nil), CityEnvelope{}) // delete, then its tombstone
				delete(live, id)
			case ok && (id+int64(b))%3 == 1:
				im := old
				im.City, im.State = fmt.Sprintf("moved-%d-%d", id, b), "NY"
				cur = append(cur, ev("u", &old, &im))
				live[id] = im
			}
		}
		model := map[int64]string{}
		for id, im := range live {
			model[id] = im.City + "|" + im.State
		}
		out = append(out, cur)
		models = append(models, model)
	}
	return out, models
}

// TestMergeOnReadDebeziumEnvelopeStructs writes Debezium envelopes as structs (nested
// images and source, nil pointers for nulls) to a table the write creates from the
// after-image, in three runs: the table matches the model after each, tombstones are
// skipped and counted, and the table passes the invariant checks.
func TestMergeOnReadDebeziumEnvelopeStructs(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	runs, models := debeziumEnvelopes(400, 3)
	shards := 3
	for i, evs := range runs {
		cfg := debeziumEnvelopeConfig(lc, "db.envstructs", fmt.Sprintf("env-structs-%d", i))
		cfg.NumShards = &shards
		tombstones := 0
		for _, e := range evs {
			if e.Op == nil {
				tombstones++
			}
		}
		snaps, dead, counters := runMORCounters(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, evs) })
		if len(dead) != 0 {
			t.Fatalf("run %d: dead letters %+v", i, dead[:min(3, len(dead))])
		}
		if len(snaps) != 1 || snaps[0].Skipped {
			t.Fatalf("run %d: snapshots %+v", i, snaps)
		}
		if counters["tombstones_skipped"] != int64(tombstones) {
			t.Errorf("run %d: tombstones_skipped = %d, want %d", i, counters["tombstones_skipped"], tombstones)
		}
		got, tbl := cityContents(t, lc, "envstructs")
		if diff := diffModel(models[i], got); diff != "" {
			t.Fatalf("run %d: table differs from the model:\n%s", i, diff)
		}
		sc := tbl.Schema()
		if sc.NumFields() != 3 || len(sc.IdentifierFieldIDs) != 1 {
			t.Fatalf("run %d: schema %s", i, sc)
		}
		if f, _ := sc.FindFieldByID(sc.IdentifierFieldIDs[0]); f.Name != "id" {
			t.Fatalf("run %d: identifier field %s", i, f.Name)
		}
	}
}

// TestMergeOnReadFlatRowsNestedControl: flat change rows whose control columns sit
// in a struct (the Kafka Connect sink's _cdc), dropped before writing with drop.
func TestMergeOnReadFlatRowsNestedControl(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "flatcdc", 50, 3)
	cfg := iceberg.WriteConfig{Table: "db.flatcdc", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_cdc.op", SequenceNumberColumn: "_cdc.offset",
		Upsert: true, Drop: []string{"_cdc"}, SinkID: "flatcdc"}
	meta := iceberg.NewRowSchema([]string{"op", "offset", "source"}, nil)
	change := func(op string, id int64, city string, off int64) iceberg.Row {
		return iceberg.NewRow([]string{"id", "city", "state", "_cdc"},
			[]any{id, city, "NV", iceberg.RowOf(meta, []any{op, off, "pg"})})
	}
	rows := []iceberg.Row{
		change(iceberg.ChangeUpdateAfter, 3, "moved", 1),
		change(iceberg.ChangeDelete, 4, "", 2),
		change(iceberg.ChangeInsert, 99, "new", 3),
	}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 0 || len(snaps) != 1 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	got, tbl := cityContents(t, lc, "flatcdc")
	if len(got) != 50 || got[3] != "moved|NV" || got[4] != "" || got[99] != "new|NV" {
		t.Fatalf("%d rows; 3=%q 4=%q 99=%q", len(got), got[3], got[4], got[99])
	}
	if tbl.Schema().NumFields() != 3 {
		t.Errorf("schema %s", tbl.Schema())
	}
}

// TestMergeOnReadEnvelopeConstructionErrors: envelope paths the element type does
// not have, or that go through a field that is not a struct, fail TryWrite with a
// ConfigError naming the key.
func TestMergeOnReadEnvelopeConstructionErrors(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	for _, tc := range []struct {
		name string
		mut  func(c *iceberg.WriteConfig)
		key  string
		want string
	}{
		{"missing sequence field", func(c *iceberg.WriteConfig) { c.SequenceNumberColumn = "source.pos" }, iceberg.KeySequenceNumberColumn, `"source.pos"`},
		{"sequence through a non-struct", func(c *iceberg.WriteConfig) { c.SequenceNumberColumn = "op.lsn" }, iceberg.KeySequenceNumberColumn, "not a struct"},
		{"sequence not a long", func(c *iceberg.WriteConfig) { c.SequenceNumberColumn = "source.db" }, iceberg.KeySequenceNumberColumn, "want long"},
		{"missing change type column", func(c *iceberg.WriteConfig) { c.ChangeTypeColumn = "operation" }, iceberg.KeyChangeTypeColumn, `"operation"`},
		{"missing only field", func(c *iceberg.WriteConfig) { c.Only = "payload.after" }, iceberg.KeyOnly, `"payload.after"`},
		{"only not a record", func(c *iceberg.WriteConfig) { c.Only = "ts_ms" }, iceberg.KeyOnly, "not a record"},
		{"missing before field", func(c *iceberg.WriteConfig) { c.BeforeField = "old" }, iceberg.KeyBeforeField, `"old"`},
		{"before field without only", func(c *iceberg.WriteConfig) { c.Only = "" }, iceberg.KeyBeforeField, "needs only"},
		{"image field the table lacks", func(c *iceberg.WriteConfig) { c.Table = "db.narrow" }, "", `"state"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := debeziumEnvelopeConfig(lc, "db.envbad", "")
			tc.mut(&cfg)
			if cfg.Table == "db.narrow" {
				icebergtest.CreateTable(t, lc.Catalog, "db.narrow", ibg.NewSchemaWithIdentifiers(0, []int{1},
					ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
					ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String}))
			}
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, []CityEnvelope{{}}))
			if !errors.Is(err, iceberg.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an invalid config naming %s", err, tc.want)
			}
			var ce *iceberg.ConfigError
			if tc.key != "" && (!errors.As(err, &ce) || ce.Key != tc.key) {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.key)
			}
		})
	}
}
