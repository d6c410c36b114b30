package icebergtest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// tableOf wraps one batch as an arrow.Table released in t.Cleanup.
func tableOf(t *testing.T, recs ...arrow.RecordBatch) arrow.Table {
	t.Helper()

	tbl := array.NewTableFromRecords(recs[0].Schema(), recs)
	t.Cleanup(tbl.Release)

	return tbl
}

// idsOf returns the id column of tbl in order.
func idsOf(t *testing.T, tbl arrow.Table) []int64 {
	t.Helper()

	idx := tbl.Schema().FieldIndices("id")
	if len(idx) != 1 {
		t.Fatalf("no id column in %s", tbl.Schema())
	}
	var out []int64
	for _, c := range tbl.Column(idx[0]).Data().Chunks() {
		out = append(out, c.(*array.Int64).Int64Values()...)
	}

	return out
}

func TestSampleRoundTrip(t *testing.T) {
	for _, fv := range []int{2, 3} {
		t.Run(map[int]string{2: "v2", 3: "v3"}[fv], func(t *testing.T) {
			cat := NewLocalCatalog(t)
			tbl := CreateTable(t, cat.Catalog, "db.sample", SampleSchema(), WithFormatVersion(fv))
			recs := SampleRecords(t, 50, 7)
			tbl = AppendRecords(t, tbl, recs)
			RequireValid(t, tbl)

			got := ReadAll(t, tbl, nil)
			EqualRows(t, tableOf(t, recs), got)
			if n := len(DataFiles(t, tbl)); n != 1 {
				t.Fatalf("data files = %d, want 1", n)
			}
		})
	}
}

func TestSampleRecordsDeterministic(t *testing.T) {
	a := tableOf(t, SampleRecords(t, 30, 1))
	b := tableOf(t, SampleRecords(t, 30, 1))
	c := tableOf(t, SampleRecords(t, 30, 2))
	if d := DiffRows(a, b); d != "" {
		t.Fatalf("same seed differs:\n%s", d)
	}
	if DiffRows(a, c) == "" {
		t.Fatal("different seeds give the same rows")
	}
	nulls := 0
	for i := 1; i < int(a.NumCols()); i++ {
		for _, ch := range a.Column(i).Data().Chunks() {
			nulls += ch.NullN()
		}
	}
	if nulls == 0 {
		t.Fatal("no nulls in optional columns")
	}
}

func TestDeletes(t *testing.T) {
	sc := ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String},
	)
	rows := func(ids ...int64) [][]any {
		out := make([][]any, len(ids))
		for i, id := range ids {
			out[i] = []any{id, "n"}
		}

		return out
	}
	tests := []struct {
		name    string
		version int
		del     func(t *testing.T, tbl *table.Table, path string) *table.Table
		want    []int64
	}{
		{
			name: "dv", version: 3,
			del: func(t *testing.T, tbl *table.Table, path string) *table.Table {
				return DeleteRowsDV(t, tbl, map[string][]int64{path: {0, 2}})
			},
			want: []int64{1, 3, 4},
		},
		{
			name: "dv twice on one file", version: 3,
			del: func(t *testing.T, tbl *table.Table, path string) *table.Table {
				tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {0}})
				tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {4}})
				if dvs := LiveDVs(t, tbl)[path]; len(dvs) != 1 || dvs[0].Count() != 2 {
					t.Fatalf("live DVs of %s = %v, want one with 2 positions", path, dvs)
				}

				return tbl
			},
			want: []int64{1, 2, 3},
		},
		{
			name: "position deletes v2", version: 2,
			del: func(t *testing.T, tbl *table.Table, path string) *table.Table {
				return DeletePositionsV2(t, tbl, map[string][]int64{path: {1, 3}})
			},
			want: []int64{0, 2, 4},
		},
		{
			name: "equality v3", version: 3,
			del: func(t *testing.T, tbl *table.Table, path string) *table.Table {
				keys := Records(t, ibg.NewSchema(0, sc.Field(0)), [][]any{{int64(3)}, {int64(4)}, {int64(99)}})
				return DeleteEquality(t, tbl, []string{"id"}, keys)
			},
			want: []int64{0, 1, 2},
		},
		{
			name: "equality v2", version: 2,
			del: func(t *testing.T, tbl *table.Table, path string) *table.Table {
				keys := Records(t, ibg.NewSchema(0, sc.Field(0)), [][]any{{int64(0)}})
				return DeleteEquality(t, tbl, []string{"id"}, keys)
			},
			want: []int64{1, 2, 3, 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := NewLocalCatalog(t)
			tbl := CreateTable(t, cat.Catalog, "db.t", sc, WithFormatVersion(tc.version))
			tbl = AppendRecords(t, tbl, Records(t, sc, rows(0, 1, 2, 3, 4)))
			files := DataFiles(t, tbl)
			if len(files) != 1 {
				t.Fatalf("data files = %d, want 1", len(files))
			}
			tbl = tc.del(t, tbl, files[0].FilePath())
			RequireValid(t, tbl)
			want := tableOf(t, Records(t, sc, rows(tc.want...)))
			EqualRows(t, want, ReadAll(t, tbl, nil))
		})
	}
}

func TestReadAllFilterAndColumns(t *testing.T) {
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.sample", SampleSchema())
	tbl = AppendRecords(t, tbl, SampleRecords(t, 20, 3))
	got := ReadAll(t, tbl, ibg.LessThan(ibg.Reference("id"), int64(5)), "id")
	if got.NumCols() != 1 {
		t.Fatalf("columns = %d, want 1", got.NumCols())
	}
	ids := idsOf(t, got)
	if len(ids) != 5 {
		t.Fatalf("ids = %v, want 0..4", ids)
	}
}

func TestPartitionedTableDeletes(t *testing.T) {
	sc := ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "region", Type: ibg.PrimitiveTypes.String, Required: true},
	)
	spec := ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: ibg.IdentityTransform{}})
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.parts", sc, WithPartitionSpec(spec), WithProperties(map[string]string{"owner": "test"}))
	if got := tbl.Properties()["owner"]; got != "test" {
		t.Fatalf("property owner = %q", got)
	}
	if tbl.Metadata().Version() != DefaultFormatVersion {
		t.Fatalf("format version = %d", tbl.Metadata().Version())
	}
	tbl = AppendRecords(t, tbl, Records(t, sc, [][]any{{int64(1), "eu"}, {int64(2), "us"}, {int64(3), "eu"}}))
	files := DataFiles(t, tbl)
	if len(files) != 2 {
		t.Fatalf("data files = %d, want one per region", len(files))
	}
	var eu string
	for _, f := range files {
		if f.Partition()[1000] == "eu" {
			eu = f.FilePath()
		}
	}
	if eu == "" {
		t.Fatalf("no eu partition among %v", files)
	}
	tbl = DeleteRowsDV(t, tbl, map[string][]int64{eu: {0}})
	dvs := LiveDVs(t, tbl)[eu]
	if len(dvs) != 1 || dvs[0].Partition()[1000] != "eu" || dvs[0].SpecID() != files[0].SpecID() {
		t.Fatalf("DV of %s = %v, want one in partition eu", eu, dvs)
	}
	RequireValid(t, tbl)
	want := tableOf(t, Records(t, sc, [][]any{{int64(2), "us"}, {int64(3), "eu"}}))
	EqualRows(t, want, ReadAll(t, tbl, nil))
	if n := ReadAll(t, tbl, ibg.EqualTo(ibg.Reference("region"), "eu")).NumRows(); n != 1 {
		t.Fatalf("eu rows = %d, want 1", n)
	}
}
