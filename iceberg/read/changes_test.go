package read

import (
	"context"
	"errors"
	"slices"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// changesTable creates db.c (format version v) with 50 sample rows in one append.
func changesTable(t *testing.T, v int) (*icebergtest.LocalCatalog, *table.Table) {
	t.Helper()
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.c", sc, icebergtest.WithFormatVersion(v))
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, icebergtest.SampleRows(50, 3)))
	return cat, tbl
}

// readChanges plans and reads the changes of (from, current] without a pipeline and
// returns the change rows.
func readChanges(t *testing.T, cat *icebergtest.LocalCatalog, tbl *table.Table, from int64) []row.Row {
	t.Helper()
	ctx := context.Background()
	spec, err := ResolveChanges(ctx, cat.Name, cat.Props, "db.c", tbl, ChangesOptions{FromSnapshot: &from})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := planChanges(ctx, tbl, spec)
	if err != nil {
		t.Fatal(err)
	}
	fn := &changesReadFn{Spec: spec}
	var conv toChangeRowsFn
	var out []row.Row
	for _, ct := range tasks {
		err := fn.ProcessElement(ctx, ct, func(b ChangeBatch) {
			if err := conv.ProcessElement(b, func(r row.Row) { out = append(out, r) }); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// changedIDs returns the "<change type> <id>" of each row, sorted.
func changedIDs(rows []row.Row) []string {
	var out []string
	for _, r := range rows {
		id, _ := r.Get("id")
		ct, _ := r.Get(ChangeTypeColumn)
		out = append(out, ct.(string)+" "+string(rune('0'+id.(int64)/10))+string(rune('0'+id.(int64)%10)))
	}
	slices.Sort(out)
	return out
}

// TestChangesIcebergGoChangelogScanRejectsDeletes records why ReadChanges plans
// changes itself: iceberg-go v0.7.0's IncrementalChangelogScan fails on any snapshot
// range whose manifest lists reference a delete manifest, so it cannot see rows
// deleted by deletion vectors.
func TestChangesIcebergGoChangelogScanRejectsDeletes(t *testing.T) {
	_, tbl := changesTable(t, 3)
	first := tbl.CurrentSnapshot().SnapshotID
	tbl, _, err := icebergtest.DeleteKeysDV(context.Background(), tbl, "id", []any{int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.NewIncrementalChangelogScan().FromSnapshotExclusive(first).PlanFiles(context.Background())
	if !errors.Is(err, table.ErrInvalidOperation) {
		t.Fatalf("IncrementalChangelogScan.PlanFiles on a DV delete: %v; if it now works, consider building on it", err)
	}
}

// TestChangesEqualityDeletesV3 reads rows removed by an equality delete file and by a
// later deletion vector on the same data file: each appears once, as a DELETE.
func TestChangesEqualityDeletesV3(t *testing.T) {
	cat, tbl := changesTable(t, 3)
	first := tbl.CurrentSnapshot().SnapshotID
	keys := icebergtest.Records(t, ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true}),
		[][]any{{int64(4)}, {int64(17)}})
	tbl = icebergtest.DeleteEquality(t, tbl, []string{"id"}, keys)
	tbl, _, err := icebergtest.DeleteKeysDV(context.Background(), tbl, "id", []any{int64(4), int64(30)})
	if err != nil {
		t.Fatal(err)
	}
	got := changedIDs(readChanges(t, cat, tbl, first))
	if want := []string{"DELETE 04", "DELETE 17", "DELETE 30"}; !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
}

// TestChangesFormatVersion2 reads appends of a format-version 2 table and rejects, at
// construction and with ErrUnsupported, a range with position deletes (no row lineage
// to tell the deleted rows apart).
func TestChangesFormatVersion2(t *testing.T) {
	cat, tbl := changesTable(t, 2)
	first := tbl.CurrentSnapshot().SnapshotID
	sc := tbl.Schema()
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, [][]any{append([]any{int64(77)}, make([]any, len(sc.Fields())-1)...)}))
	if got := changedIDs(readChanges(t, cat, tbl, first)); !slices.Equal(got, []string{"INSERT 77"}) {
		t.Errorf("changes = %v", got)
	}
	files := icebergtest.DataFiles(t, tbl)
	tbl = icebergtest.DeletePositionsV2(t, tbl, map[string][]int64{files[0].FilePath(): {0}})
	_, err := ResolveChanges(context.Background(), cat.Name, cat.Props, "db.c", tbl, ChangesOptions{FromSnapshot: &first})
	if !errors.Is(err, config.ErrUnsupported) {
		t.Errorf("position deletes on v2: %v, want ErrUnsupported", err)
	}
}

// TestChangesNetRules checks the per-key reduction: carried-over rows cancel, pairs
// become updates, the rest stay.
func TestChangesNetRules(t *testing.T) {
	names := []string{"id", "v", ChangeTypeColumn, CommitSnapshotIDColumn, CommitSequenceNumberColumn}
	s := row.NewSchema(names, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.String,
		ibg.PrimitiveTypes.String, ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int64})
	r := func(v, ct string) row.Row { return row.Of(s, []any{int64(1), v, ct, int64(9), int64(2)}) }
	cases := []struct {
		name string
		in   []row.Row
		want []string
	}{
		{"update", []row.Row{r("a", changeDelete), r("b", changeInsert)}, []string{"UPDATE_AFTER b", "UPDATE_BEFORE a"}},
		{"carried over", []row.Row{r("a", changeDelete), r("a", changeInsert)}, nil},
		{"carry-over and update", []row.Row{r("a", changeDelete), r("x", changeDelete), r("a", changeInsert), r("b", changeInsert)},
			[]string{"UPDATE_AFTER b", "UPDATE_BEFORE x"}},
		{"delete", []row.Row{r("a", changeDelete)}, []string{"DELETE a"}},
		{"two inserts, one delete", []row.Row{r("a", changeDelete), r("b", changeInsert), r("c", changeInsert)},
			[]string{"INSERT c", "UPDATE_AFTER b", "UPDATE_BEFORE a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn := &netChangesFn{Columns: []string{"v"}}
			i := 0
			var got []string
			err := fn.ProcessElement(row.Row{}, func(out *row.Row) bool {
				if i == len(c.in) {
					return false
				}
				*out = c.in[i]
				i++
				return true
			}, func(o row.Row) {
				if o.Len() != 4 {
					t.Errorf("row %v: want v and the change columns", o)
				}
				ct, _ := o.Get(ChangeTypeColumn)
				v, _ := o.Get("v")
				got = append(got, ct.(string)+" "+v.(string))
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
