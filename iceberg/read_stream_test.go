package iceberg_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// appendsFixture is a format-version 3 table whose snapshots 1, 2 and 4 append sample
// rows (ids 0..49, 50..79, 80..99) and whose snapshot 3 deletes ids 5 and 55 with
// deletion vectors. states[i] is the table after snapshot i.
type appendsFixture struct {
	cat    *icebergtest.LocalCatalog
	ident  string
	snaps  []*table.Snapshot
	states [][]row.Row
}

// appendedIDs are the ids snapshot i appends (none for the delete, snapshot 3).
var appendedIDs = [][2]int64{1: {0, 50}, 2: {50, 80}, 3: {0, 0}, 4: {80, 100}}

// newAppendsSteps creates the empty table and returns the four commits, to run in
// order before or while a pipeline reads the table.
func newAppendsSteps(t *testing.T) (*appendsFixture, []func()) {
	t.Helper()
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	f := &appendsFixture{cat: cat, ident: "db.appends", snaps: []*table.Snapshot{nil}, states: [][]row.Row{nil}}
	tbl := icebergtest.CreateTable(t, cat.Catalog, f.ident, sc, icebergtest.WithFormatVersion(3))
	rows := icebergtest.SampleRows(100, 11)
	record := func(next *table.Table) {
		tbl = next
		time.Sleep(3 * time.Millisecond) // distinct snapshot timestamps
		f.snaps = append(f.snaps, tbl.CurrentSnapshot())
		var state []row.Row
		for _, r := range rowsOf(t, tbl.Schema(), icebergtest.ReadAll(t, tbl, nil)) {
			state = append(state, r.(row.Row))
		}
		f.states = append(f.states, state)
	}
	add := func(i int) func() {
		return func() {
			lo, hi := appendedIDs[i][0], appendedIDs[i][1]
			record(icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[lo:hi])))
		}
	}
	del := func() {
		next, n, err := icebergtest.DeleteKeysDV(context.Background(), tbl, "id", []any{int64(5), int64(55)})
		if err != nil || n != 2 {
			t.Errorf("delete keys: %d rows, %v", n, err)
			return
		}
		record(next)
	}
	return f, []func(){add(1), add(2), del, add(4)}
}

func (f *appendsFixture) config() iceberg.ReadConfig {
	return iceberg.ReadConfig{Table: f.ident, CatalogName: f.cat.Name, CatalogProperties: f.cat.Props}
}

// appended returns the rows snapshot i appends (as they were when it committed), with
// cols kept and rows passing keep.
func (f *appendsFixture) appended(i int, keep func(row.Row) bool, cols ...string) []any {
	var ids []int64
	for id := appendedIDs[i][0]; id < appendedIDs[i][1]; id++ {
		ids = append(ids, id)
	}
	return project(rowsWithIDs(f.states[i], ids, keep), cols...)
}

// project returns rows with only cols, in that order (all columns when cols is empty).
func project(rows []row.Row, cols ...string) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		if len(cols) == 0 {
			out = append(out, r)
			continue
		}
		types := make([]ibg.Type, len(cols))
		vals := make([]any, len(cols))
		for i, c := range cols {
			j := r.Schema().Index(c)
			types[i], vals[i] = r.Schema().Types()[j], r.Value(j)
		}
		out = append(out, row.Of(row.NewSchema(cols, types), vals))
	}
	return out
}

// TestReadStreamingEnds reads continuously over ranges whose end is already in the
// table: the base (the table at the start snapshot, or the appends after
// from_snapshot / from_timestamp, or nothing with starting_strategy latest), then the
// rows each later append snapshot adds, skipping the delete snapshot (its deleted rows
// stay in the output), with filter and keep applied, ending at to_snapshot or
// to_timestamp.
func TestReadStreamingEnds(t *testing.T) {
	f, steps := newAppendsSteps(t)
	for _, step := range steps {
		step()
	}
	id := func(i int) int64 { return f.snaps[i].SnapshotID }
	all := func(lists ...[]any) []any { return slices.Concat(lists...) }
	below60 := func(r row.Row) bool { v, _ := r.Get("id"); return v.(int64) < 60 || v.(int64) >= 90 }
	cases := []struct {
		name string
		opts []iceberg.ReadOption
		want []any
	}{
		{"earliest to s2", []iceberg.ReadOption{iceberg.WithReadToSnapshot(id(2))}, project(f.states[2])},
		{"earliest to the time of s2", []iceberg.ReadOption{iceberg.WithReadToTimestamp(time.UnixMilli(f.snaps[2].TimestampMs))},
			project(f.states[2])},
		{"from s1 to s4", []iceberg.ReadOption{iceberg.WithReadFromSnapshot(id(1)), iceberg.WithReadToSnapshot(id(4))},
			all(f.appended(2, nil), f.appended(4, nil))},
		{"from timestamp of s2 to s4", []iceberg.ReadOption{iceberg.WithReadFromTimestamp(time.UnixMilli(f.snaps[2].TimestampMs)),
			iceberg.WithReadToSnapshot(id(4))}, all(f.appended(2, nil), f.appended(4, nil))},
		{"from the first snapshot's time", []iceberg.ReadOption{iceberg.WithReadFromTimestamp(time.UnixMilli(f.snaps[1].TimestampMs)),
			iceberg.WithReadToSnapshot(id(4))}, all(f.appended(1, nil), f.appended(2, nil), f.appended(4, nil))},
		{"latest", []iceberg.ReadOption{iceberg.WithReadStartingStrategy(iceberg.StartLatest), iceberg.WithReadToSnapshot(id(4))}, nil},
		{"filter and keep", []iceberg.ReadOption{iceberg.WithReadFromSnapshot(id(1)), iceberg.WithReadToSnapshot(id(4)),
			iceberg.WithFilter("id < 60 OR id >= 90"), iceberg.WithKeep("id", "string_col")},
			all(f.appended(2, below60, "id", "string_col"), f.appended(4, below60, "id", "string_col"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			opts := append([]iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithPollInterval(time.Second)}, c.opts...)
			got, err := iceberg.TryRead(s, f.config(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			passert.Equals(s, got, c.want...)
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestReadStreamingLive runs a continuous Read (1 s polls) while the test commits to
// the table: the current snapshot's rows come first, then the rows of each append
// while the read still runs, not the delete's (its deleted rows stay: the read emits
// appended rows only, counting the skipped snapshot in snapshots_skipped), and the
// read ends at to_timestamp. It logs the latency from each append to its first row.
func TestReadStreamingLive(t *testing.T) {
	f, steps := newAppendsSteps(t)
	steps[0]() // snapshot 1: the read starts with its rows
	key := t.Name()
	start := time.Now()
	until := start.Add(10 * time.Second)
	p, s := beam.NewPipelineWithRoot()
	rows := iceberg.Read(s, f.config(), iceberg.WithStreaming(true), iceberg.WithPollInterval(time.Second),
		iceberg.WithReadToTimestamp(until))
	beam.ParDo0(s, &recordFn{Key: key}, rows)

	committed := make([]time.Time, len(steps)+1)
	done := make(chan bool)
	go func() {
		if !waitArrivals(key, 1, until) {
			done <- false
			return
		}
		for i, step := range steps[1:] {
			time.Sleep(1200 * time.Millisecond)
			step()
			committed[i+2] = time.Now()
		}
		done <- true
	}()
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	if !<-done {
		t.Fatalf("no row within %v of the start", until.Sub(start))
	}
	if len(f.snaps) != 5 {
		t.Fatalf("the test made %d snapshots, want 4", len(f.snaps)-1)
	}
	if f.snaps[4].TimestampMs > until.UnixMilli() {
		t.Fatal("the last snapshot committed after to_timestamp (the machine is too slow for this test)")
	}
	got := arrivals(key)
	sameRows(t, got, slices.Concat(project(f.states[1]), f.appended(2, nil), f.appended(4, nil)))

	first := map[int64]time.Time{}
	for _, a := range got {
		v, _ := a.row.Get("id")
		id := v.(int64)
		snap := 1
		for i := 2; i < len(appendedIDs); i++ {
			if id >= appendedIDs[i][0] && id < appendedIDs[i][1] {
				snap = i
			}
		}
		if ft, ok := first[int64(snap)]; !ok || a.at.Before(ft) {
			first[int64(snap)] = a.at
		}
		if a.at.After(until) {
			t.Errorf("row %d arrived %v after to_timestamp", id, a.at.Sub(until))
		}
	}
	for _, i := range []int{2, 4} {
		t.Logf("snapshot %d: first row %v after the commit returned", i, first[int64(i)].Sub(committed[i]).Round(time.Millisecond))
	}
	counters := icebeamCounters(res)
	if counters["snapshots_skipped"] != 1 || counters["snapshots_read"] != 3 {
		t.Errorf("counters snapshots_skipped = %d, snapshots_read = %d; want 1 and 3 (all: %v)",
			counters["snapshots_skipped"], counters["snapshots_read"], counters)
	}
	if ended.Before(until) {
		t.Errorf("the read ended %v before to_timestamp", until.Sub(ended))
	}
}

// TestReadStreamingConfigErrors checks that each bad continuous-read setting is
// reported at construction with its key and sentinel, and that a continuous read may
// wait for what is not in the table yet (a future from_timestamp; a to_timestamp on a
// table without snapshots).
func TestReadStreamingConfigErrors(t *testing.T) {
	f, steps := newAppendsSteps(t)
	steps[0]()
	v1 := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, v1.Catalog, "db.v1", icebergtest.SampleSchema(), icebergtest.WithFormatVersion(1))
	empty := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, empty.Catalog, "db.empty", icebergtest.SampleSchema(), icebergtest.WithFormatVersion(3))
	future := time.Now().Add(time.Hour)
	cases := []struct {
		name     string
		cfg      iceberg.ReadConfig
		opts     []iceberg.ReadOption
		key      string
		sentinel error
	}{
		{"from snapshot without streaming", f.config(), []iceberg.ReadOption{iceberg.WithReadFromSnapshot(f.snaps[1].SnapshotID)},
			iceberg.KeyFromSnapshot, iceberg.ErrInvalidConfig},
		{"poll interval without streaming", f.config(), []iceberg.ReadOption{iceberg.WithPollInterval(time.Second)},
			iceberg.KeyPollIntervalSeconds, iceberg.ErrInvalidConfig},
		{"zero poll interval", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithPollInterval(0)},
			iceberg.KeyPollIntervalSeconds, iceberg.ErrInvalidConfig},
		{"streaming with snapshot id", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithSnapshotID(f.snaps[1].SnapshotID)},
			iceberg.KeySnapshotID, iceberg.ErrInvalidConfig},
		{"streaming with branch", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithBranch("main")},
			iceberg.KeyBranch, iceberg.ErrInvalidConfig},
		{"from snapshot not in table", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithReadFromSnapshot(12345)},
			iceberg.KeyFromSnapshot, iceberg.ErrInvalidConfig},
		{"to snapshot not in table", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithReadToSnapshot(12345)},
			iceberg.KeyToSnapshot, iceberg.ErrInvalidConfig},
		{"bad strategy", f.config(), []iceberg.ReadOption{iceberg.WithStreaming(true), iceberg.WithReadStartingStrategy("oldest")},
			iceberg.KeyStartingStrategy, iceberg.ErrInvalidConfig},
		{"format version 1", iceberg.ReadConfig{Table: "db.v1", CatalogName: v1.Name, CatalogProperties: v1.Props},
			[]iceberg.ReadOption{iceberg.WithStreaming(true)}, iceberg.KeyStreaming, iceberg.ErrUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, c.cfg, c.opts...)
			if !errors.Is(err, c.sentinel) {
				t.Fatalf("error %v does not wrap %v", err, c.sentinel)
			}
			var ce *iceberg.ConfigError
			if !errors.As(err, &ce) || ce.Key != c.key {
				t.Errorf("error %v: want a ConfigError for key %q", err, c.key)
			}
		})
	}
	t.Run("changelog on format version 1", func(t *testing.T) {
		_, s := beam.NewPipelineWithRoot()
		_, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{Table: "db.v1", CatalogName: v1.Name, CatalogProperties: v1.Props},
			iceberg.WithChangesStreaming(true))
		var ce *iceberg.ConfigError
		if !errors.Is(err, iceberg.ErrUnsupported) || !errors.As(err, &ce) || ce.Key != iceberg.KeyStreaming {
			t.Errorf("error %v: want an unsupported ConfigError for %q", err, iceberg.KeyStreaming)
		}
	})
	for name, build := range map[string]func(s beam.Scope) error{
		"read from a future time": func(s beam.Scope) error {
			_, err := iceberg.TryRead(s, f.config(), iceberg.WithStreaming(true), iceberg.WithReadFromTimestamp(future))
			return err
		},
		"changes from a future time": func(s beam.Scope) error {
			_, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{Table: f.ident, CatalogName: f.cat.Name, CatalogProperties: f.cat.Props},
				iceberg.WithChangesStreaming(true), iceberg.WithFromTimestamp(future))
			return err
		},
		"read an empty table until a time": func(s beam.Scope) error {
			_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.empty", CatalogName: empty.Name, CatalogProperties: empty.Props},
				iceberg.WithStreaming(true), iceberg.WithReadToTimestamp(future))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			if err := build(s); err != nil {
				t.Errorf("a continuous read may wait: %v", err)
			}
		})
	}
}

// TestStreamingReadsSeparateWorkerProcess runs a continuous ReadChanges (with the
// per-key net changes) and a continuous Read in one pipeline on prism with workers in
// a separate process, so the watch DoFns, their restrictions and watermark estimator
// states travel serialized; both end at to_snapshot.
func TestStreamingReadsSeparateWorkerProcess(t *testing.T) {
	cf := newChangesFixture(t)
	af, steps := newAppendsSteps(t)
	for _, step := range steps {
		step()
	}
	icebergtest.ProcessEnvironment(t)
	p, s := beam.NewPipelineWithRoot()
	changes, err := iceberg.TryReadChanges(s, cf.config(), iceberg.WithChangesStreaming(true), iceberg.WithChangesPollInterval(time.Second),
		iceberg.WithFromSnapshot(cf.snaps[1].SnapshotID), iceberg.WithToSnapshot(cf.snaps[3].SnapshotID))
	if err != nil {
		t.Fatal(err)
	}
	passert.Equals(s, changes, slices.Concat(cf.expected(2, nil), cf.expected(3, nil))...)
	rows, err := iceberg.TryRead(s, af.config(), iceberg.WithStreaming(true), iceberg.WithPollInterval(time.Second),
		iceberg.WithReadFromSnapshot(af.snaps[1].SnapshotID), iceberg.WithReadToSnapshot(af.snaps[4].SnapshotID))
	if err != nil {
		t.Fatal(err)
	}
	passert.Equals(s, rows, slices.Concat(af.appended(2, nil), af.appended(4, nil))...)
	ptest.RunAndValidate(t, p)
}
