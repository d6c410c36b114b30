package iceberg_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func init() {
	register.DoFn3x1[int, func(*row.Row) bool, func(row.Row), error](&applyChangesFn{})
}

// changesFixture is a format-version 3 table with identifier field id and three
// snapshots: s1 appends ids 0..99; s2 deletes ids 10, 20, 30, 40, 50 with deletion
// vectors; s3 updates ids 60, 61, 62 (DV delete of the old rows and append of the new
// versions in one RowDelta). states[i] is the table after snapshot i (states[0] empty).
type changesFixture struct {
	cat    *icebergtest.LocalCatalog
	ident  string
	sc     *ibg.Schema
	snaps  []*table.Snapshot // snaps[i] is snapshot i; snaps[0] nil
	states [][]row.Row
}

var (
	deletedIDs = []int64{10, 20, 30, 40, 50}
	updatedIDs = []int64{60, 61, 62}
)

func newChangesFixture(t *testing.T) changesFixture {
	t.Helper()
	f, steps := newChangesSteps(t)
	for _, step := range steps {
		step()
	}
	if len(f.states[1]) != 100 || len(f.states[2]) != 95 || len(f.states[3]) != 95 {
		t.Fatalf("fixture states have %d, %d, %d rows", len(f.states[1]), len(f.states[2]), len(f.states[3]))
	}
	return *f
}

// newChangesSteps creates the fixture's empty table and returns the fixture with the
// three commits that make snapshots 1, 2 and 3, to run in order (each records its
// snapshot and state), before or while a pipeline reads the table.
func newChangesSteps(t *testing.T) (*changesFixture, []func()) {
	t.Helper()
	ctx := context.Background()
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	f := &changesFixture{cat: cat, ident: "db.changes", sc: sc, snaps: []*table.Snapshot{nil}, states: [][]row.Row{nil}}
	tbl := icebergtest.CreateTable(t, cat.Catalog, f.ident, sc, icebergtest.WithFormatVersion(3))
	rows := icebergtest.SampleRows(100, 7)
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
	appendRows := func() {
		record(icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows)))
	}
	deleteRows := func() {
		keys := make([]any, len(deletedIDs))
		for i, id := range deletedIDs {
			keys[i] = id
		}
		next, n, err := icebergtest.DeleteKeysDV(ctx, tbl, "id", keys)
		if err != nil || n != len(deletedIDs) {
			t.Errorf("delete keys: %d rows, %v", n, err)
			return
		}
		record(next)
	}
	updateRows := func() {
		var keys []any
		var updated [][]any
		for _, id := range updatedIDs {
			keys = append(keys, id)
			r := slices.Clone(rows[id])
			r[11] = fmt.Sprintf("updated-%d", id) // string_col
			r[2] = int32(id)                      // int_col
			updated = append(updated, r)
		}
		pos, err := icebergtest.PositionsOf(ctx, tbl, "id", keys)
		if err != nil {
			t.Error(err)
			return
		}
		added, replaced := icebergtest.WriteDVs(t, tbl, pos)
		data := icebergtest.WriteDataFiles(t, tbl, icebergtest.Records(t, sc, updated))
		next := icebergtest.CommitRowDelta(t, tbl, data, added, replaced)
		icebergtest.RequireValid(t, next)
		record(next)
	}
	return f, []func(){appendRows, deleteRows, updateRows}
}

func (f changesFixture) config() iceberg.ChangesConfig {
	return iceberg.ChangesConfig{Table: f.ident, CatalogName: f.cat.Name, CatalogProperties: f.cat.Props}
}

// change is one expected change row: a row of a state, the change and its snapshot.
func (f changesFixture) change(r row.Row, kind string, snap int, cols ...string) row.Row {
	names, types, vals := []string{}, []ibg.Type{}, []any{}
	s := r.Schema()
	for i, n := range s.Names() {
		if len(cols) > 0 && !slices.Contains(cols, n) {
			continue
		}
		names, types, vals = append(names, n), append(types, s.Types()[i]), append(vals, r.Value(i))
	}
	if len(cols) > 0 { // keep's order
		order := make([]int, len(cols))
		for i, c := range cols {
			order[i] = slices.Index(names, c)
		}
		n2, t2, v2 := make([]string, len(cols)), make([]ibg.Type, len(cols)), make([]any, len(cols))
		for i, j := range order {
			n2[i], t2[i], v2[i] = names[j], types[j], vals[j]
		}
		names, types, vals = n2, t2, v2
	}
	names = append(names, iceberg.ChangeTypeColumn, iceberg.CommitSnapshotIDColumn, iceberg.CommitSequenceNumberColumn)
	types = append(types, ibg.PrimitiveTypes.String, ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int64)
	vals = append(vals, kind, f.snaps[snap].SnapshotID, f.snaps[snap].SequenceNumber)
	return row.Of(row.NewSchema(names, types), vals)
}

// rowsWithIDs returns the rows of state whose id is in ids and that pass keep.
func rowsWithIDs(state []row.Row, ids []int64, keep func(row.Row) bool) []row.Row {
	var out []row.Row
	for _, r := range state {
		id, _ := r.Get("id")
		if slices.Contains(ids, id.(int64)) && (keep == nil || keep(r)) {
			out = append(out, r)
		}
	}
	return out
}

// expected returns the change rows of snapshot snap (1, 2 or 3), with cols kept and
// rows passing keep.
func (f changesFixture) expected(snap int, keep func(row.Row) bool, cols ...string) []any {
	var out []any
	add := func(rows []row.Row, kind string) {
		for _, r := range rows {
			out = append(out, f.change(r, kind, snap, cols...))
		}
	}
	switch snap {
	case 1:
		add(rowsWithIDs(f.states[1], allIDs(), keep), "INSERT")
	case 2:
		add(rowsWithIDs(f.states[1], deletedIDs, keep), "DELETE")
	case 3:
		add(rowsWithIDs(f.states[2], updatedIDs, keep), "UPDATE_BEFORE")
		add(rowsWithIDs(f.states[3], updatedIDs, keep), "UPDATE_AFTER")
	}
	return out
}

func timeOf(s *table.Snapshot) time.Time { return time.UnixMilli(s.TimestampMs) }

func allIDs() []int64 {
	out := make([]int64, 100)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// TestReadChanges reads the changes between each pair of snapshots (and with keep,
// drop, filter, timestamps and starting strategies) and checks every change row.
func TestReadChanges(t *testing.T) {
	f := newChangesFixture(t)
	id := func(i int) int64 { return f.snaps[i].SnapshotID }
	idBelow := func(n int64) func(row.Row) bool {
		return func(r row.Row) bool { v, _ := r.Get("id"); return v.(int64) < n }
	}
	cases := []struct {
		name string
		opts []iceberg.ChangesOption
		want []any
	}{
		{"earliest to s1", []iceberg.ChangesOption{iceberg.WithToSnapshot(id(1))}, f.expected(1, nil)},
		{"s1 to s2", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)), iceberg.WithToSnapshot(id(2))}, f.expected(2, nil)},
		{"s2 to s3", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(2)), iceberg.WithToSnapshot(id(3))}, f.expected(3, nil)},
		{"s2 to current", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(2))}, f.expected(3, nil)},
		{"s1 to s3", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)), iceberg.WithToSnapshot(id(3))},
			append(f.expected(2, nil), f.expected(3, nil)...)},
		{"earliest", nil, append(append(f.expected(1, nil), f.expected(2, nil)...), f.expected(3, nil)...)},
		{"latest", []iceberg.ChangesOption{iceberg.WithStartingStrategy(iceberg.StartLatest)}, f.expected(3, nil)},
		{"latest to s2", []iceberg.ChangesOption{iceberg.WithStartingStrategy(iceberg.StartLatest), iceberg.WithToSnapshot(id(2))}, f.expected(2, nil)},
		{"empty range", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(3))}, nil},
		{"timestamps", []iceberg.ChangesOption{
			iceberg.WithFromTimestamp(timeOf(f.snaps[2])), iceberg.WithToTimestamp(timeOf(f.snaps[2]))}, f.expected(2, nil)},
		{"keep and filter", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)),
			iceberg.WithChangesKeep("string_col", "id"), iceberg.WithChangesFilter("id < 30 OR id = 61")},
			append(f.expected(2, idBelow(30), "string_col", "id"), f.expected(3, func(r row.Row) bool { v, _ := r.Get("id"); return v == int64(61) }, "string_col", "id")...)},
		{"keep without the key", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(2)), iceberg.WithChangesKeep("string_col")},
			f.expected(3, nil, "string_col")},
		{"drop", []iceberg.ChangesOption{iceberg.WithFromSnapshot(id(1)), iceberg.WithToSnapshot(id(2)), iceberg.WithChangesDrop(dropAllBut(f.sc, "id", "long_col")...)},
			f.expected(2, nil, "id", "long_col")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			got, err := iceberg.TryReadChanges(s, f.config(), c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			passert.Equals(s, got, c.want...)
			ptest.RunAndValidate(t, p)
		})
	}
}

func dropAllBut(sc *ibg.Schema, keep ...string) []string {
	var out []string
	for _, f := range sc.Fields() {
		if !slices.Contains(keep, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// TestReadChangesReplay applies the change rows of (s0, sN] and (s1, sN] in a pipeline
// to the earlier state and checks the result is the state of sN.
func TestReadChangesReplay(t *testing.T) {
	f := newChangesFixture(t)
	for _, from := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("from s%d", from), func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			var opts []iceberg.ChangesOption
			if from > 0 {
				opts = append(opts, iceberg.WithFromSnapshot(f.snaps[from].SnapshotID))
			}
			changes := iceberg.ReadChanges(s, f.config(), opts...)
			start := make([]any, len(f.states[from]))
			for i, r := range f.states[from] {
				start[i] = f.change(r, "INSERT", 1) // the start state as inserts before s1's sequence
			}
			all := beam.Flatten(s, changes, beam.CreateList(s, startAsSeq0(start)))
			got := beam.ParDo(s, &applyChangesFn{}, beam.GroupByKey(s, beam.AddFixedKey(s, all)))
			want := make([]any, len(f.states[3]))
			for i, r := range f.states[3] {
				want[i] = r
			}
			passert.Equals(s, got, want...)
			ptest.RunAndValidate(t, p)
		})
	}
}

// startAsSeq0 gives start-state rows sequence number 0, before every snapshot.
func startAsSeq0(rows []any) []row.Row {
	out := make([]row.Row, len(rows))
	for i, r := range rows {
		rr := r.(row.Row)
		vals := slices.Clone(rr.Values())
		vals[len(vals)-1] = int64(0)
		out[i] = row.Of(rr.Schema(), vals)
	}
	return out
}

// applyChangesFn replays change rows by key (id) in sequence order, deletes before
// inserts within a commit, checking that every DELETE and UPDATE_BEFORE removes the
// live row it names, and emits the final rows without the change columns.
type applyChangesFn struct{}

func (applyChangesFn) ProcessElement(_ int, rows func(*row.Row) bool, emit func(row.Row)) error {
	var all []row.Row
	var r row.Row
	for rows(&r) {
		all = append(all, r)
	}
	kind := func(r row.Row) int {
		v, _ := r.Get(iceberg.ChangeTypeColumn)
		if v == "DELETE" || v == "UPDATE_BEFORE" {
			return 0
		}
		return 1
	}
	seq := func(r row.Row) int64 { v, _ := r.Get(iceberg.CommitSequenceNumberColumn); return v.(int64) }
	slices.SortStableFunc(all, func(a, b row.Row) int { return cmp.Or(cmp.Compare(seq(a), seq(b)), cmp.Compare(kind(a), kind(b))) })
	data := func(r row.Row) row.Row {
		n := r.Len() - 3
		return row.Of(row.NewSchema(r.Names()[:n], r.Schema().Types()[:n]), r.Values()[:n])
	}
	live := map[int64]row.Row{}
	for _, r := range all {
		v, _ := r.Get("id")
		id := v.(int64)
		if kind(r) == 0 {
			old, ok := live[id]
			if !ok || !row.Equal(old, data(r)) {
				return fmt.Errorf("change %v deletes a row that is not live (live: %v)", r, old)
			}
			delete(live, id)
			continue
		}
		if old, ok := live[id]; ok {
			return fmt.Errorf("change %v inserts key %d, live already: %v", r, id, old)
		}
		live[id] = data(r)
	}
	for _, r := range live {
		emit(r)
	}
	return nil
}

// TestReadChangesConfigErrors checks that each bad key is reported, with its key and
// sentinel, at construction.
func TestReadChangesConfigErrors(t *testing.T) {
	f := newChangesFixture(t)
	neg := int64(-1)
	cases := []struct {
		name     string
		cfg      func(c *iceberg.ChangesConfig)
		key      string
		sentinel error
	}{
		{"unknown keep column", func(c *iceberg.ChangesConfig) { c.Keep = []string{"nope"} }, iceberg.KeyKeep, iceberg.ErrInvalidConfig},
		{"unknown drop column", func(c *iceberg.ChangesConfig) { c.Drop = []string{"nope"} }, iceberg.KeyDrop, iceberg.ErrInvalidConfig},
		{"unknown filter column", func(c *iceberg.ChangesConfig) { c.Filter = "nope = 1" }, iceberg.KeyFilter, iceberg.ErrInvalidConfig},
		{"malformed filter", func(c *iceberg.ChangesConfig) { c.Filter = "id = " }, iceberg.KeyFilter, iceberg.ErrInvalidConfig},
		{"keep and drop", func(c *iceberg.ChangesConfig) { c.Keep, c.Drop = []string{"id"}, []string{"long_col"} }, iceberg.KeyDrop, iceberg.ErrInvalidConfig},
		{"from snapshot not in table", func(c *iceberg.ChangesConfig) { x := int64(12345); c.FromSnapshot = &x }, iceberg.KeyFromSnapshot, iceberg.ErrInvalidConfig},
		{"to snapshot not in table", func(c *iceberg.ChangesConfig) { x := int64(12345); c.ToSnapshot = &x }, iceberg.KeyToSnapshot, iceberg.ErrInvalidConfig},
		{"negative snapshot", func(c *iceberg.ChangesConfig) { c.FromSnapshot = &neg }, iceberg.KeyFromSnapshot, iceberg.ErrInvalidConfig},
		{"from after to", func(c *iceberg.ChangesConfig) {
			from, to := f.snaps[3].SnapshotID, f.snaps[1].SnapshotID
			c.FromSnapshot, c.ToSnapshot = &from, &to
		}, iceberg.KeyFromSnapshot, iceberg.ErrInvalidConfig},
		{"from timestamp after to timestamp", func(c *iceberg.ChangesConfig) {
			from, to := int64(2000), int64(1000)
			c.FromTimestamp, c.ToTimestamp = &from, &to
		}, iceberg.KeyFromTimestamp, iceberg.ErrInvalidConfig},
		{"from timestamp after to snapshot", func(c *iceberg.ChangesConfig) {
			from, to := f.snaps[3].TimestampMs+1, f.snaps[1].SnapshotID
			c.FromTimestamp, c.ToSnapshot = &from, &to
		}, iceberg.KeyFromTimestamp, iceberg.ErrInvalidConfig},
		{"to timestamp before the first snapshot", func(c *iceberg.ChangesConfig) { x := int64(1); c.ToTimestamp = &x }, iceberg.KeyToTimestamp, iceberg.ErrInvalidConfig},
		{"from snapshot and from timestamp", func(c *iceberg.ChangesConfig) {
			from, ts := f.snaps[1].SnapshotID, int64(1)
			c.FromSnapshot, c.FromTimestamp = &from, &ts
		}, iceberg.KeyFromTimestamp, iceberg.ErrInvalidConfig},
		{"strategy with from snapshot", func(c *iceberg.ChangesConfig) {
			from := f.snaps[1].SnapshotID
			c.FromSnapshot, c.StartingStrategy = &from, iceberg.StartLatest
		}, iceberg.KeyStartingStrategy, iceberg.ErrInvalidConfig},
		{"bad strategy", func(c *iceberg.ChangesConfig) { c.StartingStrategy = "newest" }, iceberg.KeyStartingStrategy, iceberg.ErrInvalidConfig},
		{"poll interval without streaming", func(c *iceberg.ChangesConfig) { x := 10; c.PollIntervalSeconds = &x }, iceberg.KeyPollIntervalSeconds, iceberg.ErrInvalidConfig},
		{"zero poll interval", func(c *iceberg.ChangesConfig) { x := 0; c.Streaming, c.PollIntervalSeconds = true, &x }, iceberg.KeyPollIntervalSeconds, iceberg.ErrInvalidConfig},
		{"streaming to snapshot not in table", func(c *iceberg.ChangesConfig) { x := int64(12345); c.Streaming, c.ToSnapshot = true, &x }, iceberg.KeyToSnapshot, iceberg.ErrInvalidConfig},
		{"streaming from a future time to a snapshot", func(c *iceberg.ChangesConfig) {
			from, to := time.Now().Add(time.Hour).UnixMilli(), f.snaps[3].SnapshotID
			c.Streaming, c.FromTimestamp, c.ToSnapshot = true, &from, &to
		}, iceberg.KeyFromTimestamp, iceberg.ErrInvalidConfig},
		{"config properties", func(c *iceberg.ChangesConfig) { c.ConfigProperties = map[string]string{"a": "b"} }, iceberg.KeyConfigProperties, iceberg.ErrUnsupported},
		{"missing table", func(c *iceberg.ChangesConfig) { c.Table = "db.nope" }, "", iceberg.ErrTableNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.config()
			c.cfg(&cfg)
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryReadChanges(s, cfg)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %v does not wrap %v", err, c.sentinel)
			}
			var ce *iceberg.ConfigError
			if c.key != "" && (!errors.As(err, &ce) || ce.Key != c.key) {
				t.Errorf("error %v: want a ConfigError for key %q", err, c.key)
			}
			if c.key == "" && !strings.HasPrefix(err.Error(), "iceberg: read changes "+cfg.Table+": ") {
				t.Errorf("error %q does not read `iceberg: read changes <table>: <cause>`", err)
			}
		})
	}
}

// TestReadChangesReportsAllProblems: a problem of the config alone (a poll interval
// without streaming) and problems found against the table (a snapshot it does not
// have, an unknown keep column) are reported together.
func TestReadChangesReportsAllProblems(t *testing.T) {
	f := newChangesFixture(t)
	cfg := f.config()
	missing, poll := int64(12345), 10
	cfg.FromSnapshot, cfg.PollIntervalSeconds, cfg.Keep = &missing, &poll, []string{"nope"}
	_, s := beam.NewPipelineWithRoot()
	_, err := iceberg.TryReadChanges(s, cfg)
	var keys []string
	for _, ce := range configErrorsOf(err) {
		keys = append(keys, ce.Key)
	}
	slices.Sort(keys)
	if want := []string{iceberg.KeyFromSnapshot, iceberg.KeyKeep, iceberg.KeyPollIntervalSeconds}; !slices.Equal(keys, want) {
		t.Fatalf("TryReadChanges: %v\nkeys %v, want %v", err, keys, want)
	}
}

// configErrorsOf returns the ConfigErrors in err, joined ones included.
func configErrorsOf(err error) []*iceberg.ConfigError {
	if ce, ok := err.(*iceberg.ConfigError); ok {
		return []*iceberg.ConfigError{ce}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*iceberg.ConfigError
		for _, e := range j.Unwrap() {
			out = append(out, configErrorsOf(e)...)
		}
		return out
	}
	if e := errors.Unwrap(err); e != nil {
		return configErrorsOf(e)
	}
	return nil
}

// TestReadChangesParseConfig round-trips the managed map form and rejects unknown and
// mistyped keys.
func TestReadChangesParseConfig(t *testing.T) {
	m := map[string]any{
		"table": "db.t", "catalog_name": "c", "catalog_properties": map[string]any{"type": "sql"},
		"filter": "id > 1", "keep": []any{"id"}, "from_snapshot": 5, "to_snapshot": int64(7),
	}
	cfg, err := iceberg.ParseChangesConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.FromSnapshot != 5 || *cfg.ToSnapshot != 7 || cfg.Filter != "id > 1" {
		t.Errorf("parsed %+v", cfg)
	}
	back, err := iceberg.ParseChangesConfig(cfg.Map())
	if err != nil || fmt.Sprint(back.Map()) != fmt.Sprint(cfg.Map()) {
		t.Errorf("round trip: %v, %v != %v", err, back.Map(), cfg.Map())
	}
	yml := "table: db.t\ncatalog_name: c\ncatalog_properties: {type: sql}\nfrom_timestamp: 1000\nto_timestamp: 2000\n"
	if _, err := iceberg.ParseChangesConfigYAML([]byte(yml)); err != nil {
		t.Errorf("YAML: %v", err)
	}
	for key, v := range map[string]any{"snapshot_id": int64(1), "from_snapshot": "5", "streaming": "yes", "mode": "append"} {
		bad := map[string]any{"table": "db.t", "catalog_name": "c", "catalog_properties": map[string]any{"type": "sql"}, key: v}
		_, err := iceberg.ParseChangesConfig(bad)
		var ce *iceberg.ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s = %v: error %v, want a ConfigError for the key", key, v, err)
		}
	}
}
