package iceberg_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestUnknownColumnEveryWriter: no data file icebeam writes holds a column for a field
// of type unknown (the Iceberg spec: writers omit it), whichever path writes it: an
// append (one writer per bundle, and distribution_mode hash), a merge-on-read upsert
// (whose updated rows keep their row lineage), WriteBatches, and compaction (sorted by
// the identifier field, and iceberg-go's unsorted rewrite); and the tables read back
// with nulls in that column.
func TestUnknownColumnEveryWriter(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	fields := []ibg.NestedField{
		{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "nothing", Type: ibg.PrimitiveTypes.Unknown},
		{ID: 3, Name: "name", Type: ibg.PrimitiveTypes.String},
	}
	icebergtest.CreateTable(t, lc.Catalog, "db.unk", ibg.NewSchemaWithIdentifiers(0, []int{1}, fields...))
	icebergtest.CreateTable(t, lc.Catalog, "db.copy", ibg.NewSchema(0, fields...))
	names := []string{"id", "nothing", "name"}
	row := func(id int64, name string) iceberg.Row { return iceberg.NewRow(names, []any{id, nil, name}) }
	change := func(kind string, id int64, name string, seq int64) iceberg.Row {
		return iceberg.NewRow([]string{"_change_type", "id", "nothing", "name", "_commit_snapshot_sequence_number"},
			[]any{kind, id, nil, name, seq})
	}

	base := iceberg.WriteConfig{Table: "db.unk", CatalogName: lc.Name, CatalogProperties: lc.Props}
	hash := base
	hash.DistributionMode = iceberg.DistributionHash
	mor := base
	mor.Mode, mor.ChangeTypeColumn, mor.Upsert = iceberg.MergeOnRead, "_change_type", true
	for _, step := range []struct {
		name string
		cfg  iceberg.WriteConfig
		rows []iceberg.Row
	}{
		{"append", base, []iceberg.Row{row(1, "a"), row(2, "b")}},
		{"hash", hash, []iceberg.Row{row(3, "c"), row(4, "d")}},
		{"merge-on-read", mor, []iceberg.Row{change(iceberg.ChangeUpdateAfter, 2, "b2", 10), change(iceberg.ChangeInsert, 5, "e", 11)}},
	} {
		step.cfg.SinkID = "unknown-" + step.name
		if _, dead := runMOR(t, step.cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, step.rows) }); len(dead) != 0 {
			t.Fatalf("%s: dead letters %+v", step.name, dead)
		}
		requireNoUnknownColumns(t, lc, "db.unk", step.name)
	}

	p, s := beam.NewPipelineWithRoot()
	batches := iceberg.ReadBatches(s, iceberg.ReadConfig{Table: "db.unk", CatalogName: lc.Name, CatalogProperties: lc.Props})
	res := iceberg.WriteBatches(s, iceberg.WriteConfig{Table: "db.copy", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "unknown-batches"}, batches)
	passert.Count(s, res.DeadLetter, "dead letters", 0)
	ptest.RunAndValidate(t, p)
	requireNoUnknownColumns(t, lc, "db.copy", "WriteBatches")

	// Compaction: db.unk sorted by its identifier field, keeping row lineage; db.copy,
	// which has none, by iceberg-go's rewrite.
	for _, name := range []string{"db.unk", "db.copy"} {
		p, s := beam.NewPipelineWithRoot()
		iceberg.Maintain(s, iceberg.MaintainConfig{Table: name, CatalogName: lc.Name, CatalogProperties: lc.Props,
			Operations: []string{iceberg.OpRewriteDataFiles}, RewriteAll: true})
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
		if n := requireNoUnknownColumns(t, lc, name, "compaction"); n != 1 {
			t.Errorf("compaction of %s left %d data files, want 1", name, n)
		}
	}

	var want []string
	for _, r := range [][]any{{int64(1), "a"}, {int64(2), "b2"}, {int64(3), "c"}, {int64(4), "d"}, {int64(5), "e"}} {
		want = append(want, describeRow(iceberg.NewRow(names, []any{r[0], nil, r[1]})))
	}
	readDescribed(t, lc, "db.unk", nil, want)
	readDescribed(t, lc, "db.copy", nil, want)
}

// TestUnknownColumnInOtherWritersFile: a data file that holds a column for an unknown
// field (iceberg-go's own writer writes one, INT32 annotated Null; so does pyarrow)
// reads as nulls there.
func TestUnknownColumnInOtherWritersFile(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "nothing", Type: ibg.PrimitiveTypes.Unknown},
		ibg.NestedField{ID: 3, Name: "name", Type: ibg.PrimitiveTypes.String})
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db.other", sc)
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(`[{"id": 1, "nothing": null, "name": "a"}, {"id": 2, "nothing": null, "name": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	tbl = icebergtest.AppendRecords(t, tbl, rec)
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	files := icebergtest.DataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d data files, want 1", len(files))
	}
	if ids, err := icebergtest.ParquetFieldIDs(fs, files[0].FilePath()); err != nil || !slices.Contains(ids, 2) {
		t.Fatalf("the file's field ids are %v (%v): want a column for unknown field 2", ids, err)
	}
	names := []string{"id", "nothing", "name"}
	readDescribed(t, lc, "db.other", nil, []string{
		describeRow(iceberg.NewRow(names, []any{int64(1), nil, "a"})),
		describeRow(iceberg.NewRow(names, []any{int64(2), nil, nil})),
	})
}

// requireNoUnknownColumns checks table name (CheckTable, which fails a data file with
// a column for an unknown field) and that each of its live data files has a column
// for id (field 1) and none for nothing (field 2); it returns the number of files.
func requireNoUnknownColumns(t *testing.T, lc *icebergtest.LocalCatalog, name, step string) int {
	t.Helper()
	ctx := context.Background()
	tbl := loadValid(t, lc, name)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatalf("%s: %s has no data files", step, name)
	}
	for _, task := range tasks {
		ids, err := icebergtest.ParquetFieldIDs(fs, task.File.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, 2) || !slices.Contains(ids, 1) {
			t.Errorf("%s: data file %s of %s has columns of field ids %v, want 1 and not 2 (unknown)", step, task.File.FilePath(), name, ids)
		}
	}
	return len(tasks)
}
