package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// evolveTableSchema is the schema the evolution tests start from.
func evolveTableSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "n", Type: ibg.PrimitiveTypes.Int32},
		ibg.NestedField{ID: 3, Name: "f", Type: ibg.PrimitiveTypes.Float32},
		ibg.NestedField{ID: 4, Name: "note", Type: ibg.PrimitiveTypes.String, Required: true},
		ibg.NestedField{ID: 5, Name: "addr", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 6, Name: "city", Type: ibg.PrimitiveTypes.String},
		}}},
	)
}

// seedEvolve creates db.<name> with evolveTableSchema and two rows.
func seedEvolve(t *testing.T, lc *icebergtest.LocalCatalog, name string, partitioned bool) {
	t.Helper()
	var opts []icebergtest.TableOption
	if partitioned {
		// The hash distribution shuffles the rows of partitioned tables only.
		opts = append(opts, icebergtest.WithPartitionSpec(ibg.NewPartitionSpec(
			ibg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: ibg.BucketTransform{NumBuckets: 4}})))
	}
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db."+name, evolveTableSchema(), opts...)
	rec := icebergtest.Records(t, tbl.Schema(), [][]any{
		{int64(1), int32(1), float32(0.5), "seed", []any{"paris"}},
		{int64(2), nil, nil, "seed", nil},
	})
	defer rec.Release()
	icebergtest.AppendRecords(t, tbl, rec)
}

// evolveRows are rows for evolveTableSchema's table: old-schema rows first, then a
// new top-level column, a new nested field, int and float values that need long and
// double, and a null in the required column note.
func evolveRows() []iceberg.Row {
	addr := func(names []string, vals ...any) iceberg.Row { return iceberg.NewRow(names, vals) }
	return []iceberg.Row{
		iceberg.NewRow([]string{"id", "n", "note"}, []any{int64(10), int32(10), "old"}),
		iceberg.NewRow([]string{"id", "n", "f", "note", "addr"}, []any{int64(11), int32(11), float32(1.5), "old", addr([]string{"city"}, "rome")}),
		iceberg.NewRow([]string{"id", "note", "extra"}, []any{int64(12), "new column", "e12"}),
		iceberg.NewRow([]string{"id", "note", "addr"}, []any{int64(13), "nested", addr([]string{"city", "zip"}, "oslo", int32(150))}),
		iceberg.NewRow([]string{"id", "n", "note"}, []any{int64(14), int64(1) << 40, "long"}),
		iceberg.NewRow([]string{"id", "f", "note"}, []any{int64(15), 2.25, "double"}),
		iceberg.NewRow([]string{"id", "note", "extra"}, []any{int64(16), nil, "e16"}),
	}
}

// evolvedContents is what the table holds after evolveRows (and the seed rows).
var evolvedContents = []string{
	`id=1, n=1, f=0.5, note="seed", extra=null, addr={"city":"paris","zip":null}`,
	`id=2, n=null, f=null, note="seed", extra=null, addr=null`,
	`id=10, n=10, f=null, note="old", extra=null, addr=null`,
	`id=11, n=11, f=1.5, note="old", extra=null, addr={"city":"rome","zip":null}`,
	`id=12, n=null, f=null, note="new column", extra="e12", addr=null`,
	`id=13, n=null, f=null, note="nested", extra=null, addr={"city":"oslo","zip":150}`,
	`id=14, n=1099511627776, f=null, note="long", extra=null, addr=null`,
	`id=15, n=null, f=2.25, note="double", extra=null, addr=null`,
	`id=16, n=null, f=null, note=null, extra="e16", addr=null`,
}

// tableRows loads db.<name>, checks it and returns its rows rendered by
// icebergtest.RowStrings (columns cols), sorted.
func tableRows(t *testing.T, lc *icebergtest.LocalCatalog, name string, cols ...string) ([]string, *table.Table) {
	t.Helper()
	tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", name})
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	at := icebergtest.ReadAll(t, tbl, nil)
	defer at.Release()
	got := icebergtest.RowStrings(at, cols)
	for i, r := range got {
		got[i] = strings.TrimSuffix(strings.TrimPrefix(r, "{"), "}")
	}
	slices.SortFunc(got, func(a, b string) int { return idOf(a) - idOf(b) })
	return got, tbl
}

// idOf returns the leading id=N of a rendered row.
func idOf(s string) int {
	n := 0
	for _, c := range strings.TrimPrefix(s, "id=") {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// checkEvolved checks the evolved schema of db.<name>: n long, f double, note
// optional, extra a string, addr.zip an int.
func checkEvolved(t *testing.T, tbl *table.Table) {
	t.Helper()
	sc := tbl.Schema()
	for col, want := range map[string]ibg.Type{"n": ibg.PrimitiveTypes.Int64, "f": ibg.PrimitiveTypes.Float64,
		"extra": ibg.PrimitiveTypes.String, "addr.zip": ibg.PrimitiveTypes.Int32, "note": ibg.PrimitiveTypes.String} {
		f, ok := sc.FindFieldByName(col)
		if !ok || !f.Type.Equals(want) || f.Required {
			t.Errorf("column %s: %v (found %v), want optional %s", col, f, ok, want)
		}
	}
	if f, _ := sc.FindFieldByName("id"); f.ID != 1 || !f.Required {
		t.Errorf("id changed: %v", f)
	}
}

// TestWriteEvolveSchema writes rows that need new columns (top level and nested),
// widenings and a required column made optional, in each append writer: the
// per-bundle writer and the hash distribution (auto-sharded: several writers see the
// new fields). Rows of the old schema written
// before the update keep their values; the table holds every row.
func TestWriteEvolveSchema(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *iceberg.WriteConfig)
	}{
		{"bundle writers", func(c *iceberg.WriteConfig) {}},
		{"hash", func(c *iceberg.WriteConfig) {
			c.DistributionMode, c.AutoSharding = iceberg.DistributionHash, true
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			seedEvolve(t, lc, "ev", tc.name == "hash")
			cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props, EvolveSchema: true}
			tc.mutate(&cfg)
			rows := evolveRows()
			snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection {
				return beam.Reshuffle(s, beam.CreateList(s, rows))
			})
			if len(dead) != 0 || len(snaps) != 1 || snaps[0].RowsAdded != int64(len(rows)) {
				t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
			}
			got, tbl := tableRows(t, lc, "ev", "id", "n", "f", "note", "extra", "addr")
			if !slices.Equal(got, evolvedContents) {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(evolvedContents, "\n"))
			}
			checkEvolved(t, tbl)
		})
	}
}

// TestWriteEvolveSchemaOff writes the same rows without evolve_schema: the rows that
// need a change go to the dead letter output naming the column, as before, and the
// schema stays.
func TestWriteEvolveSchemaOff(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedEvolve(t, lc, "ev", false)
	cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, evolveRows()) })
	if len(snaps) != 1 || snaps[0].RowsAdded != 2 || len(dead) != 5 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	named := map[string]bool{}
	for _, d := range dead {
		for _, col := range []string{"extra", "addr.zip", "n", "f"} {
			if strings.Contains(d.Reason, `column "`+col+`"`) {
				named[col] = true
			}
		}
	}
	if len(named) != 4 {
		t.Errorf("dead letters do not name the columns: %+v", dead)
	}
	_, tbl := tableRows(t, lc, "ev")
	if !tbl.Schema().Equals(evolveTableSchema()) || len(tbl.Metadata().Schemas()) != 1 {
		t.Errorf("schema changed without evolve_schema: %s", tbl.Schema())
	}
}

// TestWriteEvolveSchemaRejects: with evolve_schema, a narrowing or another type change
// is still an error, a dead letter naming the table and the column; the other rows are
// written and the schema evolves only for them.
func TestWriteEvolveSchemaRejects(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedEvolve(t, lc, "ev", false)
	rows := []iceberg.Row{
		iceberg.NewRow([]string{"id", "n", "note"}, []any{int64(20), "twenty", "type change"}),
		iceberg.NewRow([]string{"id", "note", "addr"}, []any{int64(21), "nested type change", iceberg.NewRow([]string{"city"}, []any{int64(3)})}),
		iceberg.NewRow([]string{"id", "note", "extra"}, []any{int64(22), "ok", "e22"}),
	}
	cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props, EvolveSchema: true}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(snaps) != 1 || snaps[0].RowsAdded != 1 || len(dead) != 2 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	for _, d := range dead {
		col := `"n"`
		if strings.Contains(d.Row, "nested") {
			col = `"addr.city"`
		}
		if d.Table != "db.ev" || !strings.Contains(d.Reason, "db.ev") || !strings.Contains(d.Reason, col) {
			t.Errorf("dead letter %+v does not name db.ev and %s", d, col)
		}
	}
	_, tbl := tableRows(t, lc, "ev")
	if f, _ := tbl.Schema().FindFieldByName("n"); !f.Type.Equals(ibg.PrimitiveTypes.Int32) {
		t.Errorf("n is %s", f.Type)
	}
	if _, ok := tbl.Schema().FindFieldByName("extra"); !ok {
		t.Errorf("extra was not added: %s", tbl.Schema())
	}
}

// EvolvedEvent is a struct whose type has a field the table lacks and a long for the
// table's int.
type EvolvedEvent struct {
	ID    int64  `iceberg:"id"`
	N     int64  `iceberg:"n"`
	Note  string `iceberg:"note"`
	Extra string `iceberg:"extra"`
}

// NarrowEvent has an int for the table's float.
type NarrowEvent struct {
	ID   int64  `iceberg:"id"`
	F    int32  `iceberg:"f"`
	Note string `iceberg:"note"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[EvolvedEvent]())
	beam.RegisterType(reflect.TypeFor[NarrowEvent]())
	beam.RegisterType(reflect.TypeFor[evolveRange]())
	register.Function2x0(genEvolveRowsFn)
}

// evolveRange is the ids [Lo, Hi).
type evolveRange struct{ Lo, Hi int64 }

// genEvolveRowsFn emits a row per id of r with the new column extra and n a long.
func genEvolveRowsFn(r evolveRange, emit func(iceberg.Row)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(iceberg.NewRow([]string{"id", "n", "note", "extra"}, []any{id, id, "b", "e" + strconv.FormatInt(id, 10)}))
	}
}

// TestWriteEvolveSchemaManyBundles: every bundle of a reshuffled input sees the new
// column and the long values at once; the table ends with one schema update and every
// row, also with the hash distribution's shards.
func TestWriteEvolveSchemaManyBundles(t *testing.T) {
	for _, hash := range []bool{false, true} {
		t.Run(fmt.Sprintf("hash=%v", hash), func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			seedEvolve(t, lc, "ev", hash)
			cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props, EvolveSchema: true}
			if hash {
				cfg.DistributionMode, cfg.AutoSharding = iceberg.DistributionHash, true
			}
			var ranges []evolveRange
			for lo := int64(100); lo < 4100; lo += 250 {
				ranges = append(ranges, evolveRange{lo, lo + 250})
			}
			snaps, dead, counters := runMORCounters(t, cfg, func(s beam.Scope) beam.PCollection {
				return beam.ParDo(s, genEvolveRowsFn, beam.Reshuffle(s, beam.CreateList(s, ranges)))
			})
			if len(dead) != 0 || len(snaps) != 1 || snaps[0].RowsAdded != 4000 {
				t.Fatalf("snapshots %+v, dead %d", snaps, len(dead))
			}
			got, tbl := tableRows(t, lc, "ev", "id", "n", "extra")
			if len(got) != 4002 || got[2] != `id=100, n=100, extra="e100"` || got[4001] != `id=4099, n=4099, extra="e4099"` {
				t.Errorf("%d rows: %q ... %q", len(got), got[:3], got[len(got)-1])
			}
			if n := len(tbl.Metadata().Schemas()); n != 2 || counters["schema_updates"] != 1 {
				t.Errorf("%d schemas, %d schema updates; want one update", n, counters["schema_updates"])
			}
		})
	}
}

// TestWriteEvolveSchemaStructs writes structs to an existing table: without
// evolve_schema the construction fails naming the column, with it the table evolves;
// a type change fails the construction either way.
func TestWriteEvolveSchemaStructs(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedEvolve(t, lc, "ev", false)
	in := []EvolvedEvent{{ID: 30, N: 1 << 33, Note: "s", Extra: "x"}, {ID: 31, N: 2, Note: "t", Extra: "y"}}
	cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props}
	_, s := beam.NewPipelineWithRoot()
	if _, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, in)); !errors.Is(err, iceberg.ErrInvalidConfig) || !strings.Contains(err.Error(), `"n"`) {
		t.Fatalf("without evolve_schema: %v", err)
	}
	_, s = beam.NewPipelineWithRoot()
	narrow := cfg.With(iceberg.WithSchemaEvolution(true))
	if _, err := iceberg.TryWrite(s, narrow, beam.CreateList(s, []NarrowEvent{{ID: 1}})); !errors.Is(err, iceberg.ErrInvalidConfig) || !strings.Contains(err.Error(), `"f"`) {
		t.Fatalf("float column from an int field: %v", err)
	}
	snaps, dead := runMOR(t, narrow, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, in) })
	if len(dead) != 0 || len(snaps) != 1 || snaps[0].RowsAdded != 2 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	got, tbl := tableRows(t, lc, "ev", "id", "n", "note", "extra")
	want := []string{`id=1, n=1, note="seed", extra=null`, `id=2, n=null, note="seed", extra=null`,
		`id=30, n=8589934592, note="s", extra="x"`, `id=31, n=2, note="t", extra="y"`}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if f, _ := tbl.Schema().FindFieldByName("n"); !f.Type.Equals(ibg.PrimitiveTypes.Int64) {
		t.Errorf("n is %s", f.Type)
	}
}

// TestWriteEvolveSchemaDynamic writes to a table template: the existing table of one
// region evolves, the other region's table is created from its rows.
func TestWriteEvolveSchemaDynamic(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedEvolve(t, lc, "dyn_eu", false)
	rows := []iceberg.Row{
		iceberg.NewRow([]string{"id", "note", "region"}, []any{int64(40), "eu old", "eu"}),
		iceberg.NewRow([]string{"id", "note", "region", "extra"}, []any{int64(41), "eu new", "eu", "e41"}),
		iceberg.NewRow([]string{"id", "note", "region", "extra"}, []any{int64(42), "us", "us", "e42"}),
		iceberg.NewRow([]string{"id", "note", "region", "more"}, []any{int64(43), "us more", "us", int32(7)}),
	}
	cfg := iceberg.WriteConfig{Table: "db.dyn_{region}", CatalogName: lc.Name, CatalogProperties: lc.Props, EvolveSchema: true}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 0 || len(snaps) != 2 {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	eu, _ := tableRows(t, lc, "dyn_eu", "id", "note", "region", "extra")
	if want := []string{`id=1, note="seed", region=null, extra=null`, `id=2, note="seed", region=null, extra=null`,
		`id=40, note="eu old", region="eu", extra=null`, `id=41, note="eu new", region="eu", extra="e41"`}; !slices.Equal(eu, want) {
		t.Errorf("dyn_eu rows %q, want %q", eu, want)
	}
	us, _ := tableRows(t, lc, "dyn_us", "id", "note", "region", "extra", "more")
	if want := []string{`id=42, note="us", region="us", extra="e42", more=null`, `id=43, note="us more", region="us", extra=null, more=7`}; !slices.Equal(us, want) {
		t.Errorf("dyn_us rows %q, want %q", us, want)
	}
}

// TestMergeOnReadEvolveSchema applies changes with a new column to a merge-on-read
// table: inserts, updates and deletes across the schema update (the changes parsed
// before it are written with the new schema's columns null), and the key column
// cannot change.
func TestMergeOnReadEvolveSchema(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "cities", 10, 3)
	names := []string{"_change_type", "id", "city", "state", "_commit_snapshot_sequence_number"}
	withZip := append(slices.Clone(names), "zip")
	rows := []iceberg.Row{
		cdcRow(iceberg.ChangeUpdateAfter, 1, "sf", "CA", 1),
		cdcRow(iceberg.ChangeDelete, 2, "city-2", "CA", 2),
		iceberg.NewRow(withZip, []any{iceberg.ChangeUpdateAfter, int64(3), "la", "CA", int64(3), int32(90001)}),
		iceberg.NewRow(withZip, []any{iceberg.ChangeInsert, int64(100), "ny", "NY", int64(4), int32(10001)}),
		cdcRow(iceberg.ChangeInsert, 101, "boston", "MA", 5),
		iceberg.NewRow(names, []any{iceberg.ChangeInsert, "102", "bad key", "XX", int64(6)}),
	}
	cfg := iceberg.WriteConfig{Table: "db.cities", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", EqualityColumns: []string{"id"}, Upsert: true,
		EvolveSchema: true, NumShards: ptr(4)}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(snaps) != 1 || len(dead) != 1 || !strings.Contains(dead[0].Reason, `"id"`) {
		t.Fatalf("snapshots %+v, dead %+v", snaps, dead)
	}
	got, tbl := tableRows(t, lc, "cities", "id", "city", "state", "zip")
	want := []string{`id=0, city="city-0", state="CA", zip=null`, `id=1, city="sf", state="CA", zip=null`,
		`id=3, city="la", state="CA", zip=90001`}
	for i := 4; i < 10; i++ {
		want = append(want, `id=`+strconv.Itoa(i)+`, city="city-`+strconv.Itoa(i)+`", state="CA", zip=null`)
	}
	want = append(want, `id=100, city="ny", state="NY", zip=10001`, `id=101, city="boston", state="MA", zip=null`)
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f, ok := tbl.Schema().FindFieldByName("zip"); !ok || f.Required || !f.Type.Equals(ibg.PrimitiveTypes.Int32) {
		t.Errorf("zip: %v %v", f, ok)
	}
}

// TestReadEvolvedTable reads the table TestWriteEvolveSchema evolves with a filter on
// the widened column: files written before the update have 4-byte bounds for it,
// which iceberg-go v0.7.0 cannot read when pruning; Read and ReadChanges plan
// without pruning then (ReadChanges the live files of each snapshot) and still
// filter the rows.
func TestReadEvolvedTable(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedEvolve(t, lc, "ev", false)
	cfg := iceberg.WriteConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props, EvolveSchema: true}
	if _, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, evolveRows()) }); len(dead) != 0 {
		t.Fatalf("dead %+v", dead)
	}
	p, s := beam.NewPipelineWithRoot()
	got := iceberg.Read(s, iceberg.ReadConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Filter: "n >= 10", Keep: []string{"id", "n"}})
	passert.Equals(s, beam.ParDo(s, rowString, got), "{id: 10, n: 10}", "{id: 11, n: 11}", "{id: 14, n: 1099511627776}")
	ptest.RunAndValidate(t, p)

	p, s = beam.NewPipelineWithRoot()
	changes, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{Table: "db.ev", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Filter: "n >= 10", Keep: []string{"id", "n"}})
	if err != nil {
		t.Fatal(err)
	}
	passert.Equals(s, beam.ParDo(s, changeString, changes), "INSERT 10 10", "INSERT 11 11", "INSERT 14 1099511627776")
	ptest.RunAndValidate(t, p)
}

func rowString(r iceberg.Row) string { return r.String() }

func changeString(r iceberg.Row) string {
	op, _ := r.Get("_change_type")
	id, _ := r.Get("id")
	n, _ := r.Get("n")
	return fmt.Sprint(op, " ", id, " ", n)
}

func init() {
	register.Function1x1(rowString)
	register.Function1x1(changeString)
}
