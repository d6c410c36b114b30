package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// DebeziumChange is a Debezium-style change event flattened to the row's columns.
type DebeziumChange struct {
	Op    string `iceberg:"op"`
	ID    int64  `iceberg:"id"`
	City  string `iceberg:"city"`
	State string `iceberg:"state"`
	Seq   int64  `iceberg:"_commit_snapshot_sequence_number"`
}

// timedChange is a DebeziumChange with its event time (ms).
type timedChange struct {
	C    DebeziumChange
	AtMs int64
}

var (
	morMu    sync.Mutex
	morSnaps = map[string][]iceberg.SnapshotInfo{}
	morDead  = map[string][]iceberg.DeadLetter{}
	morRuns  int
)

type morSnapsFn struct{ Key string }

func (f *morSnapsFn) ProcessElement(si iceberg.SnapshotInfo) {
	morMu.Lock()
	defer morMu.Unlock()
	morSnaps[f.Key] = append(morSnaps[f.Key], si)
}

type morDeadFn struct{ Key string }

func (f *morDeadFn) ProcessElement(dl iceberg.DeadLetter) {
	morMu.Lock()
	defer morMu.Unlock()
	morDead[f.Key] = append(morDead[f.Key], dl)
}

// stampFn gives each change its event time.
func stampFn(tc timedChange, emit func(beam.EventTime, DebeziumChange)) {
	emit(mtime.FromMilliseconds(tc.AtMs), tc.C)
}

func init() {
	register.DoFn1x0[iceberg.SnapshotInfo](&morSnapsFn{})
	register.DoFn1x0[iceberg.DeadLetter](&morDeadFn{})
	register.Function2x0(stampFn)
	register.Emitter2[beam.EventTime, DebeziumChange]()
	beam.RegisterType(reflect.TypeFor[DebeziumChange]())
	beam.RegisterType(reflect.TypeFor[*DebeziumChange]())
	beam.RegisterType(reflect.TypeFor[timedChange]())
}

// runMOR runs one pipeline writing the PCollection build makes with cfg and returns
// the snapshots and dead letters.
func runMOR(t *testing.T, cfg iceberg.WriteConfig, build func(s beam.Scope) beam.PCollection) ([]iceberg.SnapshotInfo, []iceberg.DeadLetter) {
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
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	morMu.Lock()
	defer morMu.Unlock()
	return morSnaps[key], morDead[key]
}

func cityTableSchema() *ibg.Schema {
	return ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "state", Type: ibg.PrimitiveTypes.String})
}

// seedCities creates db.<name> with n rows (id, city-<id>, CA) in files of 50,000.
func seedCities(t *testing.T, lc *icebergtest.LocalCatalog, name string, n, version int) *table.Table {
	t.Helper()
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db."+name, cityTableSchema(), icebergtest.WithFormatVersion(version))
	for lo := 0; lo < n; lo += 50000 {
		rows := make([][]any, 0, 50000)
		for i := lo; i < min(n, lo+50000); i++ {
			rows = append(rows, []any{int64(i), fmt.Sprintf("city-%d", i), "CA"})
		}
		rec := icebergtest.Records(t, tbl.Schema(), rows)
		tbl = icebergtest.AppendRecords(t, tbl, rec)
		rec.Release()
	}
	return tbl
}

// cityContents reads db.<name> as id -> "city|state", failing on a duplicate id.
func cityContents(t *testing.T, lc *icebergtest.LocalCatalog, name string) (map[int64]string, *table.Table) {
	t.Helper()
	return cityContentsTB(t, lc, name)
}

func cityContentsTB(t testing.TB, lc *icebergtest.LocalCatalog, name string) (map[int64]string, *table.Table) {
	t.Helper()
	tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", name})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	at := icebergtest.ReadAll(t, tbl, nil, "id", "city", "state")
	out := map[int64]string{}
	rdr := array.NewTableReader(at, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		cities, states := rec.Column(1).(*array.String), rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			id := ids.Value(i)
			if _, dup := out[id]; dup {
				t.Fatalf("id %d appears twice", id)
			}
			out[id] = cities.Value(i) + "|" + states.Value(i)
		}
	}
	return out, tbl
}

// cdcRow is a change row with a change type column "_change_type".
func cdcRow(kind string, id int64, city, state string, seq int64) iceberg.Row {
	return iceberg.NewRow([]string{"_change_type", "id", "city", "state", "_commit_snapshot_sequence_number"},
		[]any{kind, id, city, state, seq})
}

// TestMergeOnReadSeed is the seed scenario through Write: on a 100,000-row v3 table,
// a CDC batch deletes id=5000 and updates id=1 to NY, with before- and after-images
// and, as a variant, as upserts of the after-image alone. A rerun with the same sink
// id is skipped.
func TestMergeOnReadSeed(t *testing.T) {
	tests := []struct {
		name   string
		upsert bool
		rows   []iceberg.Row
	}{
		{"update images", false, []iceberg.Row{
			cdcRow(iceberg.ChangeDelete, 5000, "city-5000", "CA", 10),
			cdcRow(iceberg.ChangeUpdateBefore, 1, "city-1", "CA", 11),
			cdcRow(iceberg.ChangeUpdateAfter, 1, "city-1", "NY", 11),
		}},
		{"upsert", true, []iceberg.Row{
			cdcRow(iceberg.ChangeDelete, 5000, "city-5000", "CA", 10),
			cdcRow(iceberg.ChangeUpdateAfter, 1, "city-1", "NY", 11),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			seedCities(t, lc, "cities", 100000, 3)
			cfg := iceberg.WriteConfig{Table: "db.cities", CatalogName: lc.Name, CatalogProperties: lc.Props,
				Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: tc.upsert,
				SinkID: "seed-" + tc.name, SnapshotProperties: map[string]string{"job": "seed"}}
			build := func(s beam.Scope) beam.PCollection { return beam.CreateList(s, tc.rows) }
			snaps, dead, counters := runMORCounters(t, cfg, build)
			if len(dead) != 0 {
				t.Fatalf("dead letters: %+v", dead)
			}
			if len(snaps) != 1 || snaps[0].Skipped || snaps[0].RowsAdded != 1 || snaps[0].FilesAdded != 1 || snaps[0].Table != "db.cities" {
				t.Fatalf("snapshots %+v", snaps)
			}
			got, tbl := cityContents(t, lc, "cities")
			if len(got) != 99999 {
				t.Fatalf("%d rows, want 99999", len(got))
			}
			if v, ok := got[5000]; ok {
				t.Errorf("id 5000 still there: %s", v)
			}
			if got[1] != "city-1|NY" || got[2] != "city-2|CA" {
				t.Errorf("id 1 = %q, id 2 = %q", got[1], got[2])
			}
			snap := tbl.CurrentSnapshot()
			if snap.SnapshotID != snaps[0].SnapshotID {
				t.Errorf("current snapshot %d, reported %d", snap.SnapshotID, snaps[0].SnapshotID)
			}
			sum := snap.Summary.Properties
			for k, want := range map[string]string{"added-delete-files": "1", "added-position-delete-files": "1",
				"added-position-deletes": "2", "added-records": "1", "added-dvs": "1", "job": "seed",
				"beam.cdc.sink-id": cfg.SinkID, "beam.cdc.max-committed-seq." + cfg.SinkID: "11"} {
				if sum[k] != want {
					t.Errorf("summary %s = %q, want %q", k, sum[k], want)
				}
			}
			// A batch write: the key join resolved the keys (1, 5000) by one read
			// of the one seed file whose id bounds hold them, counted once.
			if counters["key_files_read"] != 1 || counters["key_column_bytes_read"] <= 0 {
				t.Errorf("key_files_read %d, key_column_bytes_read %d: want 1 file and its key column's size",
					counters["key_files_read"], counters["key_column_bytes_read"])
			}
			positions, _ := strconv.ParseInt(sum["added-position-deletes"], 10, 64)
			if si := snaps[0]; si.DeleteFilesAdded < 1 || si.PositionsDeleted != positions || si.DVsRemoved != 0 || si.EqualityDeletesAdded != 0 {
				t.Errorf("snapshot info deletes %+v, want >= 1 delete file, %d positions", si, positions)
			}
			for _, k := range []string{"added-equality-delete-files", "_change_type", "_commit_snapshot_sequence_number"} {
				if _, ok := sum[k]; ok {
					t.Errorf("summary has %s", k)
				}
			}
			if n := tbl.Schema().NumFields(); n != 3 {
				t.Errorf("table has %d columns after the write, want 3 (control columns stripped)", n)
			}
			dir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
			if puffins, _ := filepath.Glob(dir + "/*.puffin"); len(puffins) != 1 {
				t.Errorf("%d .puffin files in %s, want 1", len(puffins), dir)
			}

			// The same batch with the same sink id commits nothing.
			again, _ := runMOR(t, cfg, build)
			if len(again) != 1 || !again[0].Skipped || again[0].SnapshotID != snap.SnapshotID {
				t.Fatalf("rerun: %+v", again)
			}
			if a := again[0]; a.DeleteFilesAdded != snaps[0].DeleteFilesAdded || a.PositionsDeleted != positions {
				t.Errorf("rerun reports deletes %+v, want those of %+v", a, snaps[0])
			}
			tbl2, _ := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "cities"})
			if tbl2.CurrentSnapshot().SnapshotID != snap.SnapshotID {
				t.Fatal("rerun committed a snapshot")
			}
		})
	}
}

// debeziumWindows builds changes over a few hundred keys in three one-minute
// windows (the third in a second run), and the model of the table after each run.
func debeziumWindows() (runs [2][]timedChange, models [2]map[int64]string) {
	seq := int64(0)
	model := map[int64]string{}
	var cur []timedChange
	add := func(win int, op string, id int64, city, state string) {
		seq++
		cur = append(cur, timedChange{C: DebeziumChange{Op: op, ID: id, City: city, State: state, Seq: seq},
			AtMs: int64(win)*60000 + seq%60000})
		if op == "d" {
			delete(model, id)
		} else {
			model[id] = city + "|" + state
		}
	}
	// Window 0: a snapshot read and inserts.
	for id := range int64(300) {
		op := "c"
		if id < 100 {
			op = "r"
		}
		add(0, op, id, fmt.Sprintf("city-%d", id), "CA")
	}
	// Window 1: updates, deletes, delete then re-insert, insert then delete, two
	// updates of one key, new keys.
	for id := range int64(300) {
		switch {
		case id%21 == 0:
			add(1, "d", id, "", "")
			add(1, "c", id, fmt.Sprintf("again-%d", id), "WA")
		case id%7 == 0:
			add(1, "d", id, "", "")
		case id%3 == 0:
			add(1, "u", id, fmt.Sprintf("city-%d", id), "NY")
			if id%2 == 0 {
				add(1, "u", id, fmt.Sprintf("city-%d", id), "NJ")
			}
		}
	}
	for id := int64(300); id < 340; id++ {
		add(1, "c", id, fmt.Sprintf("new-%d", id), "TX")
		if id%4 == 0 {
			add(1, "d", id, "", "")
		}
	}
	runs[0], models[0] = cur, maps.Clone(model)
	cur = nil
	// Window 2 (second run): updates of updated and re-inserted keys, deletes of
	// new keys, re-insert of a deleted key.
	for id := int64(0); id < 340; id += 5 {
		switch {
		case id%35 == 0:
			add(2, "c", id, fmt.Sprintf("back-%d", id), "OR")
		case id%2 == 0:
			add(2, "u", id, fmt.Sprintf("moved-%d", id), "NV")
		default:
			add(2, "d", id, "", "")
		}
	}
	runs[1], models[1] = cur, model
	return runs, models
}

// TestMergeOnReadDebezium writes Debezium-style structs (op c/u/d/r, upsert, no
// before-images) in fixed windows to a table the write creates: three windows in two
// runs with one sink id. The table equals the model after each run; a rerun of the
// first run is skipped window by window.
func TestMergeOnReadDebezium(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	n := 4
	cfg := iceberg.WriteConfig{Table: "db.customers", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op",
		ChangeTypeMap: map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete, "r": iceberg.ChangeInsert},
		Upsert:        true, EqualityColumns: []string{"id"}, NumShards: &n, SinkID: "debezium"}
	runs, models := debeziumWindows()
	build := func(in []timedChange) func(s beam.Scope) beam.PCollection {
		return func(s beam.Scope) beam.PCollection {
			stamped := beam.ParDo(s, stampFn, beam.CreateList(s, in))
			return beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
		}
	}
	wantWindows := [][]int64{{59999, 119999}, {179999}}
	for i, in := range runs {
		snaps, dead := runMOR(t, cfg, build(in))
		if len(dead) != 0 {
			t.Fatalf("run %d: dead letters %+v", i, dead)
		}
		if len(snaps) != len(wantWindows[i]) {
			t.Fatalf("run %d: snapshots %+v, want one per window", i, snaps)
		}
		got, tbl := cityContents(t, lc, "customers")
		if diff := diffModel(models[i], got); diff != "" {
			t.Fatalf("run %d: table differs from the model:\n%s", i, diff)
		}
		// One snapshot per window, in window order, each with its token.
		var ends []int64
		for _, s := range table.AncestorsOf(tbl.CurrentSnapshot().SnapshotID, tbl.Metadata().SnapshotByID) {
			if v, ok := s.Summary.Properties["beam.cdc.committed-through-ms.debezium"]; ok {
				var ms int64
				fmt.Sscan(v, &ms)
				ends = append([]int64{ms}, ends...)
			}
		}
		want := slices.Concat(wantWindows[:i+1]...)
		if !slices.Equal(ends, want) {
			t.Fatalf("run %d: tokens of the ancestry %v, want %v", i, ends, want)
		}
		if i == 0 {
			sc := tbl.Schema()
			if f, _ := sc.FindFieldByName("id"); !slices.Equal(sc.IdentifierFieldIDs, []int{f.ID}) || !f.Required {
				t.Errorf("created table's identifier fields %v, id field %+v", sc.IdentifierFieldIDs, f)
			}
			if v := tbl.Metadata().Version(); v != 3 {
				t.Errorf("created table has format version %d", v)
			}
		}
	}
	// Rerunning the first run: both windows are older than the token.
	snaps, _ := runMOR(t, cfg, build(runs[0]))
	if len(snaps) != 2 || !snaps[0].Skipped || !snaps[1].Skipped {
		t.Fatalf("rerun: %+v", snaps)
	}
	got, _ := cityContents(t, lc, "customers")
	if diff := diffModel(models[1], got); diff != "" {
		t.Fatalf("after the rerun:\n%s", diff)
	}
}

func diffModel(want, got map[int64]string) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if got[id] != want[id] {
			fmt.Fprintf(&b, "id %d: got %q, want %q\n", id, got[id], want[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[id]; !ok {
			fmt.Fprintf(&b, "id %d: got %q, want no row\n", id, got[id])
		}
	}
	return b.String()
}

// TestMergeOnReadDeadLetter sends rows that cannot be applied to the dead letter
// output with the reason; the others are applied.
func TestMergeOnReadDeadLetter(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "dl", 100, 3)
	cfg := iceberg.WriteConfig{Table: "db.dl", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", SinkID: "dl"}
	names := []string{"_change_type", "id", "city", "state", "_commit_snapshot_sequence_number"}
	bad := []struct {
		row    iceberg.Row
		reason string
	}{
		{cdcRow("UPSERT", 3, "x", "x", 1), `unknown value "UPSERT"`},
		{iceberg.NewRow(names, []any{iceberg.ChangeDelete, int64(4), "x", "x", nil}), `"_commit_snapshot_sequence_number" is null`},
		{iceberg.NewRow(names, []any{iceberg.ChangeDelete, nil, "x", "x", int64(1)}), `equality column "id" is null`},
		{iceberg.NewRow(append(names, "zip"), []any{iceberg.ChangeInsert, int64(5), "x", "x", int64(1), "12345"}), `"zip" is not in the table`},
		{iceberg.NewRow(names, []any{iceberg.ChangeInsert, "six", "x", "x", int64(1)}), `"id"`},
		{iceberg.NewRow(names, []any{nil, int64(7), "x", "x", int64(1)}), `"_change_type" is null`},
	}
	rows := []iceberg.Row{
		cdcRow(iceberg.ChangeDelete, 10, "", "", 1),
		cdcRow(iceberg.ChangeUpdateBefore, 11, "", "", 2),
		cdcRow(iceberg.ChangeUpdateAfter, 11, "city-11", "NY", 2),
		cdcRow(iceberg.ChangeInsert, 500, "city-500", "WA", 3),
	}
	for _, b := range bad {
		rows = append(rows, b.row)
	}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dead), len(bad), dead)
	}
	for _, b := range bad {
		found := false
		for _, d := range dead {
			found = found || (d.Row == b.row.String() && strings.Contains(d.Reason, b.reason) && d.Table == "db.dl")
		}
		if !found {
			t.Errorf("no dead letter for %s with reason containing %s; got %+v", b.row, b.reason, dead)
		}
	}
	if len(snaps) != 1 || snaps[0].RowsAdded != 2 {
		t.Fatalf("snapshots %+v", snaps)
	}
	got, _ := cityContents(t, lc, "dl")
	// 100 rows - id 10 + id 500; id 11 updated.
	if len(got) != 100 || got[10] != "" || got[11] != "city-11|NY" || got[500] != "city-500|WA" || got[3] != "city-3|CA" {
		t.Fatalf("%d rows; 10=%q 11=%q 500=%q 3=%q", len(got), got[10], got[11], got[500], got[3])
	}
}

// TestMergeOnReadStructDeadLetter: a merge-on-read write of struct pointers turns
// each into a row in its parse step; a struct with an unknown change type goes to
// the dead letter output naming the table and the struct's row, and the other
// changes commit.
func TestMergeOnReadStructDeadLetter(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "sdl", 100, 3)
	cfg := iceberg.WriteConfig{Table: "db.sdl", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op", Upsert: true,
		ChangeTypeMap:   map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete},
		EqualityColumns: []string{"id"}, SinkID: "sdl"}
	in := []*DebeziumChange{
		{Op: "d", ID: 10, Seq: 1},
		{Op: "u", ID: 11, City: "city-11", State: "NY", Seq: 2},
		{Op: "x", ID: 12, City: "city-12", State: "NY", Seq: 3},
		{Op: "c", ID: 500, City: "city-500", State: "WA", Seq: 4},
	}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, in) })
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1: %+v", len(dead), dead)
	}
	if d := dead[0]; d.Table != "db.sdl" || !strings.Contains(d.Reason, `unknown value "x"`) || !strings.Contains(d.Row, "city-12") {
		t.Errorf("dead letter %+v: want the unknown op's, naming db.sdl", d)
	}
	if len(snaps) != 1 || snaps[0].RowsAdded != 2 {
		t.Fatalf("snapshots %+v", snaps)
	}
	got, _ := cityContents(t, lc, "sdl")
	if len(got) != 100 || got[10] != "" || got[11] != "city-11|NY" || got[12] != "city-12|CA" || got[500] != "city-500|WA" {
		t.Fatalf("%d rows; 10=%q 11=%q 12=%q 500=%q", len(got), got[10], got[11], got[12], got[500])
	}
}

// TestMergeOnReadEqualityDeletes: delete_format=equality gives the contents DVs
// give, with equality delete files and no Puffin file; auto on a v2 table picks
// equality deletes and dv on v2 is a configuration error naming the key.
func TestMergeOnReadEqualityDeletes(t *testing.T) {
	rows := []iceberg.Row{
		cdcRow(iceberg.ChangeDelete, 50, "", "", 1),
		cdcRow(iceberg.ChangeUpdateBefore, 1, "city-1", "CA", 2),
		cdcRow(iceberg.ChangeUpdateAfter, 1, "city-1", "NY", 2),
		cdcRow(iceberg.ChangeInsert, 2000, "city-2000", "WA", 3),
		cdcRow(iceberg.ChangeUpdateAfter, 7, "city-7", "OR", 4), // upsert: replaces id 7
	}
	results := map[string]map[int64]string{}
	for _, tc := range []struct {
		name    string
		version int
		format  iceberg.DeleteFormat
		eq      bool
	}{
		{"dv", 3, iceberg.DeleteFormatDV, false},
		{"equality", 3, iceberg.DeleteFormatEquality, true},
		{"auto v2", 2, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			seedCities(t, lc, "eq", 1000, tc.version)
			cfg := iceberg.WriteConfig{Table: "db.eq", CatalogName: lc.Name, CatalogProperties: lc.Props,
				Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, DeleteFormat: tc.format, SinkID: "eq"}
			snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
			if len(dead) != 0 || len(snaps) != 1 || snaps[0].RowsAdded != 3 {
				t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
			}
			got, tbl := cityContents(t, lc, "eq")
			results[tc.name] = got
			sum := tbl.CurrentSnapshot().Summary.Properties
			if tc.eq && (sum["added-equality-delete-files"] == "" || sum["added-position-delete-files"] != "") {
				t.Errorf("summary %v: want equality deletes only", sum)
			}
			if !tc.eq && (sum["added-equality-delete-files"] != "" || sum["added-position-deletes"] != "3") {
				t.Errorf("summary %v: want 3 position deletes", sum)
			}
			si := snaps[0]
			if tc.eq && (si.EqualityDeletesAdded <= 0 || si.PositionsDeleted != 0 || si.DeleteFilesAdded < 1 || si.DVsRemoved != 0) {
				t.Errorf("snapshot info %+v: want equality deletes only", si)
			}
			if !tc.eq && (si.EqualityDeletesAdded != 0 || si.PositionsDeleted != 3 || si.DeleteFilesAdded < 1) {
				t.Errorf("snapshot info %+v: want 3 positions deleted by DVs", si)
			}
		})
	}
	want := results["dv"]
	if len(want) != 1000 || want[1] != "city-1|NY" || want[7] != "city-7|OR" || want[50] != "" || want[2000] != "city-2000|WA" {
		t.Fatalf("dv contents wrong: %d rows", len(want))
	}
	for name, got := range results {
		if diff := diffModel(want, got); diff != "" {
			t.Errorf("%s differs from dv:\n%s", name, diff)
		}
	}

	// dv on a format-version 2 table is a construction error naming delete_format.
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "v2", 10, 2)
	cfg := iceberg.WriteConfig{Table: "db.v2", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", DeleteFormat: iceberg.DeleteFormatDV}
	_, s := beam.NewPipelineWithRoot()
	_, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, rows))
	if !errors.Is(err, iceberg.ErrInvalidConfig) || !strings.Contains(err.Error(), "delete_format") {
		t.Fatalf("err = %v, want a config error naming delete_format", err)
	}
}

// TestMergeOnReadConstructionErrors checks what TryWrite rejects before running.
func TestMergeOnReadConstructionErrors(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, lc.Catalog, "db.nokeys", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "state", Type: ibg.PrimitiveTypes.String}))
	icebergtest.CreateTable(t, lc.Catalog, "db.bystate", cityTableSchema(), icebergtest.WithPartitionSpec(
		ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "state", Transform: ibg.IdentityTransform{}})))
	base := iceberg.WriteConfig{CatalogName: lc.Name, CatalogProperties: lc.Props, Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op"}
	two := 2
	tests := []struct {
		name    string
		mutate  func(c *iceberg.WriteConfig)
		wantErr error
		wantMsg string
		events  bool // rows of type Event (no control columns) instead of DebeziumChange
	}{
		{"missing table without keys", func(c *iceberg.WriteConfig) { c.Table = "db.missing" }, iceberg.ErrInvalidConfig, "equality_columns", false},
		{"table without identifier fields", func(c *iceberg.WriteConfig) { c.Table = "db.nokeys" }, iceberg.ErrInvalidConfig, "identifier fields", false},
		{"template", func(c *iceberg.WriteConfig) { c.Table = "db.t_{state}"; c.EqualityColumns = []string{"id"} }, iceberg.ErrUnsupported, "table", false},
		{"heartbeat without streaming", func(c *iceberg.WriteConfig) { c.Table = "db.bystate"; n := 5; c.TokenHeartbeatSeconds = &n }, iceberg.ErrInvalidConfig, "token_heartbeat_seconds", false},
		{"shards per partition off the key", func(c *iceberg.WriteConfig) { c.Table = "db.bystate"; c.ShardsPerPartition = &two }, iceberg.ErrUnsupported, "shards_per_partition", false},
		{"struct without the sequence column", func(c *iceberg.WriteConfig) { c.Table = "db.bystate" }, iceberg.ErrInvalidConfig, "_commit_snapshot_sequence_number", true},
		{"struct column the table lacks", func(c *iceberg.WriteConfig) { c.Table = "db.nokeys"; c.EqualityColumns = []string{"id"} }, iceberg.ErrInvalidConfig, `"city"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mutate(&cfg)
			_, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, []DebeziumChange{{Op: "c", ID: 1}})
			if tc.events {
				in = beam.CreateList(s, events(1))
			}
			_, err := iceberg.TryWrite(s, cfg, in)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v mentioning %s", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// changeRange asks genCDCFn for the changes of ids Lo, Lo+Step, ... below Hi.
type changeRange struct{ Lo, Hi, Step int64 }

// genCDCFn emits, for each id of r (i-th of the range): a delete when i%5==0, an
// insert of id+10^7 when i%5==1, and otherwise an upsert of id to state NY.
func genCDCFn(r changeRange, emit func(iceberg.Row)) {
	for id, i := r.Lo, int64(0); id < r.Hi; id, i = id+r.Step, i+1 {
		switch i % 5 {
		case 0:
			emit(cdcRow(iceberg.ChangeDelete, id, "", "", id))
		case 1:
			emit(cdcRow(iceberg.ChangeInsert, id+10_000_000, "new", "TX", id))
		default:
			emit(cdcRow(iceberg.ChangeUpdateAfter, id, fmt.Sprintf("city-%d", id), "NY", id))
		}
	}
}

func init() {
	register.Function2x0(genCDCFn)
	register.Emitter1[iceberg.Row]()
	beam.RegisterType(reflect.TypeFor[changeRange]())
}

// BenchmarkMergeOnRead applies 100,000 changes (20,000 deletes, 20,000 inserts,
// 60,000 upserts; every 10th id, so every data file is touched) to a 1,000,000-row
// v3 table in 10 data files through Write on prism with the default 16 shards.
func BenchmarkMergeOnRead(b *testing.B) {
	const changes = 100_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lc := icebergtest.NewLocalCatalog(b)
		tbl := icebergtest.CreateTable(b, lc.Catalog, "db.bench", cityTableSchema())
		for lo := 0; lo < 1_000_000; lo += 100_000 {
			rows := make([][]any, 0, 100_000)
			for id := lo; id < lo+100_000; id++ {
				rows = append(rows, []any{int64(id), fmt.Sprintf("city-%d", id), "CA"})
			}
			rec := icebergtest.Records(b, tbl.Schema(), rows)
			tbl = icebergtest.AppendRecords(b, tbl, rec)
			rec.Release()
		}
		p, s := beam.NewPipelineWithRoot()
		var ranges []changeRange
		for lo := int64(0); lo < changes*10; lo += 50_000 {
			ranges = append(ranges, changeRange{lo, lo + 50_000, 10})
		}
		res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.bench", CatalogName: lc.Name, CatalogProperties: lc.Props,
			Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, SinkID: "bench"},
			beam.ParDo(s, genCDCFn, beam.CreateList(s, ranges)))
		if err != nil {
			b.Fatal(err)
		}
		beam.ParDo0(s, &morSnapsFn{Key: "bench"}, res.Snapshots)
		b.StartTimer()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		got, _ := cityContentsTB(b, lc, "bench")
		if len(got) != 1_000_000 || got[0] != "" || got[50] != "" || got[10] != "city-10|CA" || got[20] != "city-20|NY" || got[10_000_010] != "new|TX" {
			b.Fatalf("%d rows after the benchmark write", len(got))
		}
	}
	b.ReportMetric(float64(changes)*float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}

// TestMergeOnReadCreatesTableFromRows: with Row elements, a missing table is created
// at run time from the first row whose types are known (a delete with nulls cannot
// create it; it waits), with the equality columns as required identifier fields.
func TestMergeOnReadCreatesTableFromRows(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	names := []string{"_change_type", "id", "city", "state", "_commit_snapshot_sequence_number"}
	rows := []iceberg.Row{
		iceberg.NewRow(names, []any{iceberg.ChangeDelete, int64(2), nil, nil, int64(3)}),
		cdcRow(iceberg.ChangeInsert, 1, "city-1", "CA", 1),
		cdcRow(iceberg.ChangeInsert, 2, "city-2", "CA", 2),
		cdcRow(iceberg.ChangeInsert, 3, "city-3", "WA", 4),
	}
	cfg := iceberg.WriteConfig{Table: "db.fresh", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", EqualityColumns: []string{"id"},
		PartitionFields: []string{"state"}, SinkID: "fresh"}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 0 || len(snaps) != 1 || snaps[0].RowsAdded != 2 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	got, tbl := cityContents(t, lc, "fresh")
	if diff := diffModel(map[int64]string{1: "city-1|CA", 3: "city-3|WA"}, got); diff != "" {
		t.Fatal(diff)
	}
	sc := tbl.Schema()
	if f, _ := sc.FindFieldByName("id"); !slices.Equal(sc.IdentifierFieldIDs, []int{f.ID}) || !f.Required || sc.NumFields() != 3 {
		t.Fatalf("created schema %s", sc)
	}
	if spec := tbl.Spec(); spec.NumFields() != 1 || tbl.Metadata().Version() != 3 {
		t.Fatalf("created spec %s, version %d", spec, tbl.Metadata().Version())
	}
}

// TestMergeOnReadShardsPerPartition writes a table partitioned by state with keys
// (id, state), 8 shards and at most 2 per partition: each partition's new rows land in
// at most 2 data files; a second batch (another sink id) deletes and updates rows
// across partitions with DVs.
func TestMergeOnReadShardsPerPartition(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	eight, two := 8, 2
	cfg := iceberg.WriteConfig{Table: "db.parts", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", EqualityColumns: []string{"id", "state"},
		PartitionFields: []string{"state"}, NumShards: &eight, ShardsPerPartition: &two, SinkID: "parts-1"}
	states := []string{"CA", "NY", "TX", "WA"}
	var rows []iceberg.Row
	model := map[int64]string{}
	for id := range int64(400) {
		st := states[id%4]
		rows = append(rows, cdcRow(iceberg.ChangeInsert, id, fmt.Sprintf("city-%d", id), st, 1))
		model[id] = fmt.Sprintf("city-%d|%s", id, st)
	}
	if snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) }); len(dead) != 0 || len(snaps) != 1 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	_, tbl := cityContents(t, lc, "parts")
	perPartition := map[string]int{}
	for _, df := range icebergtest.DataFiles(t, tbl) {
		perPartition[fmt.Sprint(df.Partition())]++
	}
	if len(perPartition) != 4 {
		t.Fatalf("data files by partition %v", perPartition)
	}
	for p, n := range perPartition {
		if n > 2 {
			t.Errorf("partition %s has %d data files, want at most 2 (shards_per_partition)", p, n)
		}
	}
	rows = nil
	for id := int64(0); id < 400; id += 3 {
		st := states[id%4]
		if id%2 == 0 {
			rows = append(rows, cdcRow(iceberg.ChangeDelete, id, "", st, 2))
			delete(model, id)
		} else {
			rows = append(rows, cdcRow(iceberg.ChangeUpdateBefore, id, "", st, 2),
				cdcRow(iceberg.ChangeUpdateAfter, id, "moved", st, 2))
			model[id] = "moved|" + st
		}
	}
	cfg.SinkID = "parts-2"
	if snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) }); len(dead) != 0 || len(snaps) != 1 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	got, tbl := cityContents(t, lc, "parts")
	if diff := diffModel(model, got); diff != "" {
		t.Fatal(diff)
	}
	if n := len(icebergtest.LiveDVs(t, tbl)); n < 4 {
		t.Errorf("%d data files with DVs, want one or more per partition", n)
	}
}

// TestMergeOnReadSeparateWorkerProcess runs two merge-on-read writes in one pipeline
// with workers in processes other than the test's (so every DoFn travels in its
// serialized configuration; runnertest.WorkerProcesses: one on prism, two taking the
// bundles in turn on Beam Python's job service): Rows with a bad row into an existing
// table, and windowed Debezium structs into a table the write creates.
func TestMergeOnReadSeparateWorkerProcess(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "proc", 5000, 3)
	want, started := runnertest.WorkerProcesses(t)
	n := 4
	runs, models := debeziumWindows()
	p, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, []iceberg.Row{cdcRow(iceberg.ChangeDelete, 10, "", "", 1),
		cdcRow(iceberg.ChangeUpdateAfter, 11, "x", "NY", 2), cdcRow("BAD", 12, "", "", 3)})
	res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.proc", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", Upsert: true, SinkID: "proc", NumShards: &n}, rows)
	if err != nil {
		t.Fatal(err)
	}
	passert.Count(s, res.DeadLetter, "dead letters", 1)
	passert.Count(s, res.Snapshots, "snapshots", 1)
	stamped := beam.ParDo(s, stampFn, beam.CreateList(s, runs[0]))
	res, err = iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.customers", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op",
		ChangeTypeMap: map[string]string{"c": iceberg.ChangeInsert, "u": iceberg.ChangeUpdateAfter, "d": iceberg.ChangeDelete, "r": iceberg.ChangeInsert},
		Upsert:        true, EqualityColumns: []string{"id"}, NumShards: &n, SinkID: "debezium"},
		beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped))
	if err != nil {
		t.Fatal(err)
	}
	passert.Count(s, res.DeadLetter, "dead letters", 0)
	passert.Count(s, res.Snapshots, "snapshots", 2)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	got, _ := cityContents(t, lc, "proc")
	if len(got) != 4999 || got[10] != "" || got[11] != "x|NY" {
		t.Fatalf("db.proc: %d rows, 10=%q, 11=%q", len(got), got[10], got[11])
	}
	got, _ = cityContents(t, lc, "customers")
	if diff := diffModel(models[0], got); diff != "" {
		t.Fatalf("db.customers differs from the model:\n%s", diff)
	}
	if n := started(); n < want {
		t.Errorf("%d worker processes started, want %d", n, want)
	} else {
		t.Logf("%s: %d worker processes", runnertest.Runner(), n)
	}
}
