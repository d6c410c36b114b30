package iceberg_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestReadSplitsRowGroups reads one data file of many small row groups with deletion
// vectors spread over it: the reader splits it into one restriction per row group and
// must still emit every live row exactly once, with the DV applied at the right
// positions in every split.
func TestReadSplitsRowGroups(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.big", sc,
		icebergtest.WithProperties(map[string]string{"write.parquet.row-group-limit": "100"}))
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.SampleRecords(t, 5000, 7))
	files := icebergtest.DataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("want one data file, got %d", len(files))
	}
	if n := len(files[0].SplitOffsets()); n < 40 {
		t.Fatalf("want a file of many row groups, got %d split offsets", n)
	}
	var del []int64
	for p := int64(0); p < 5000; p += 37 { // positions in most row groups
		del = append(del, p)
	}
	tbl = icebergtest.DeleteRowsDV(t, tbl, map[string][]int64{files[0].FilePath(): del})
	icebergtest.RequireValid(t, tbl)

	want := rowsOf(t, tbl.Schema(), icebergtest.ReadAll(t, tbl, nil))
	if len(want) != 5000-len(del) {
		t.Fatalf("reference scan: %d rows, want %d", len(want), 5000-len(del))
	}
	p, s := beam.NewPipelineWithRoot()
	got := iceberg.Read(s, iceberg.ReadConfig{Table: "db.big", CatalogName: cat.Name, CatalogProperties: cat.Props})
	passert.Equals(s, got, want...)
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	counters := icebeamCounters(res)
	units := int64(len(files[0].SplitOffsets()))
	for name, wantN := range map[string]int64{
		"files_planned":   1,
		"row_groups_read": units,
		"rows_emitted":    int64(len(want)),
	} {
		if counters[name] != wantN {
			t.Errorf("counter %s = %d, want %d (all: %v)", name, counters[name], wantN, counters)
		}
	}
	if counters["bytes_read"] < files[0].FileSizeBytes()/2 {
		t.Errorf("counter bytes_read = %d for a file of %d bytes", counters["bytes_read"], files[0].FileSizeBytes())
	}
}

// TestReadFakeGCS reads a table whose warehouse is a gs:// bucket on an in-process
// fake GCS server: the rows equal iceberg-go's own scan of the same table.
func TestReadFakeGCS(t *testing.T) {
	gcs := icebergtest.NewFakeGCS(t, "lake")
	cat := icebergtest.NewLocalCatalogGCS(t, gcs)
	sc := icebergtest.SampleSchema()
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.remote", sc)
	rows := icebergtest.SampleRows(400, 3)
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[:200]))
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[200:]))
	files := icebergtest.DataFiles(t, tbl)
	tbl = icebergtest.DeleteRowsDV(t, tbl, map[string][]int64{files[0].FilePath(): {1, 2, 3, 150}})
	icebergtest.RequireValid(t, tbl)

	const filter = "id >= 2 AND string_col IS NOT NULL"
	cfg := iceberg.ReadConfig{Table: "db.remote", CatalogName: cat.Name, CatalogProperties: cat.Props, Filter: filter}
	f := readFixture{cat: cat, ident: "db.remote", tbl: tbl}
	want := wantRows(t, f, filter)
	p, s := beam.NewPipelineWithRoot()
	passert.Equals(s, iceberg.Read(s, cfg), want...)
	ptest.RunAndValidate(t, p)
}
