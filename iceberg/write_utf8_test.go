package iceberg_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// notUTF8 is a string no UTF-8 decoder accepts (0xff never appears in UTF-8).
const notUTF8 = "bad\xffcity"

// wantDead fails unless dead holds exactly one letter per entry of want (row id -> text
// the reason must contain), each naming the table and saying the string is not UTF-8.
func wantDead(t *testing.T, dead []iceberg.DeadLetter, tableName string, want map[string]string) {
	t.Helper()
	if len(dead) != len(want) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dead), len(want), dead)
	}
	for id, col := range want {
		n := 0
		for _, d := range dead {
			if strings.Contains(d.Row, id) && strings.Contains(d.Reason, col) &&
				strings.Contains(d.Reason, "not valid UTF-8") && d.Table == tableName {
				n++
			}
		}
		if n != 1 {
			t.Errorf("want one dead letter for row %s naming %s; got %+v", id, col, dead)
		}
	}
}

// TestWriteInvalidUTF8Append: append rows (structs, and Rows with and without the hash
// shuffle) whose strings are not valid UTF-8, at the top level or nested, go to the dead
// letter output naming the column; the other rows are written and iceberg-go reads them.
func TestWriteInvalidUTF8Append(t *testing.T) {
	ctx := context.Background()
	t.Run("structs", func(t *testing.T) {
		lc := icebergtest.NewLocalCatalog(t)
		in := events(6)
		bad := events(10)[6:]
		bad[0].Region = notUTF8
		bad[1].Tags = []string{"a", notUTF8}
		bad[2].Address.City = notUTF8
		note := notUTF8
		bad[3].Note = &note
		cfg := iceberg.WriteConfig{Table: "db.utf8", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "utf8-structs"}
		snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, append(in, bad...)) })
		wantDead(t, dead, "db.utf8", map[string]string{
			"ID:6 ": `column "region"`, "ID:7 ": `column "tags.element"`, "ID:8 ": `column "address.city"`, "ID:9 ": `column "note"`,
		})
		if len(snaps) != 1 || snaps[0].RowsAdded != 6 {
			t.Fatalf("snapshots %+v, want one of 6 rows", snaps)
		}
		tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "utf8"})
		if err != nil {
			t.Fatal(err)
		}
		if got := readIDs(t, tbl); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("ids read back = %v, want 0..5", got)
		}
	})
	for _, dist := range []iceberg.DistributionMode{iceberg.DistributionNone, iceberg.DistributionHash} {
		t.Run("rows/"+string(dist), func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			var opts []icebergtest.TableOption
			if dist == iceberg.DistributionHash {
				// Shuffled (and so checked in the packer) for a partitioned table only.
				opts = append(opts, icebergtest.WithPartitionSpec(ibg.NewPartitionSpec(
					ibg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: ibg.BucketTransform{NumBuckets: 4}})))
			}
			icebergtest.CreateTable(t, lc.Catalog, "db.cities", cityTableSchema(), opts...)
			names := []string{"id", "city", "state"}
			rows := []iceberg.Row{
				iceberg.NewRow(names, []any{int64(1), "Zürich", "ZH"}),
				iceberg.NewRow(names, []any{int64(2), notUTF8, "CA"}),
				iceberg.NewRow(names, []any{int64(3), "Genève", "GE"}),
				iceberg.NewRow(names, []any{int64(4), "x", "\xc3"}),
			}
			cfg := iceberg.WriteConfig{Table: "db.cities", CatalogName: lc.Name, CatalogProperties: lc.Props,
				DistributionMode: dist, SinkID: "utf8-rows-" + string(dist)}
			_, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
			wantDead(t, dead, "db.cities", map[string]string{`id: 2,`: `column "city"`, `id: 4,`: `column "state"`})
			got, _ := cityContents(t, lc, "cities")
			if len(got) != 2 || got[1] != "Zürich|ZH" || got[3] != "Genève|GE" {
				t.Fatalf("table holds %v, want ids 1 and 3", got)
			}
		})
	}
}

// TestWriteInvalidUTF8MergeOnRead: change rows whose strings are not valid UTF-8 go to
// the dead letter output naming the column; the other changes of the window apply.
func TestWriteInvalidUTF8MergeOnRead(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	seedCities(t, lc, "utf8", 10, 3)
	cfg := iceberg.WriteConfig{Table: "db.utf8", CatalogName: lc.Name, CatalogProperties: lc.Props,
		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "_change_type", SinkID: "utf8-mor"}
	rows := []iceberg.Row{
		cdcRow(iceberg.ChangeInsert, 100, "city-100", "WA", 1),
		cdcRow(iceberg.ChangeInsert, 101, notUTF8, "WA", 1),
		cdcRow(iceberg.ChangeUpdateBefore, 2, "", "", 2),
		cdcRow(iceberg.ChangeUpdateAfter, 2, "city-2", "NY", 2),
		cdcRow(iceberg.ChangeUpdateAfter, 3, "city-3", "N\xffY", 2),
		cdcRow(iceberg.ChangeDelete, 4, "", "", 3),
	}
	snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	wantDead(t, dead, "db.utf8", map[string]string{`id: 101,`: `column "city"`, `id: 3,`: `column "state"`})
	if len(snaps) != 1 || snaps[0].RowsAdded != 2 {
		t.Fatalf("snapshots %+v, want one adding 2 rows", snaps)
	}
	got, _ := cityContents(t, lc, "utf8")
	// 10 rows - id 4 + id 100; id 2 updated; id 3 untouched (its update was rejected).
	if len(got) != 10 || got[100] != "city-100|WA" || got[2] != "city-2|NY" || got[3] != "city-3|CA" || got[4] != "" {
		t.Fatalf("%d rows; 100=%q 2=%q 3=%q 4=%q", len(got), got[100], got[2], got[3], got[4])
	}
	if _, ok := got[101]; ok {
		t.Fatal("the rejected insert of id 101 was written")
	}
}

// readIDs reads the id column of tbl with iceberg-go, sorted.
func readIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at := icebergtest.ReadAll(t, tbl, nil, "id")
	defer at.Release()
	var ids []int64
	rdr := array.NewTableReader(at, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
	}
	slices.Sort(ids)
	return ids
}

// TestWriteAppender: a batch write of 5,000 structs or Rows, more than the chunks the
// appender goroutine takes at a time, with bad ones in the first, a middle and the
// last (partial) chunk. Every good element is written once, each bad one becomes one
// dead letter naming its column, whether its chunk was answered during the bundle or
// at its end.
func TestWriteAppender(t *testing.T) {
	in := events(5000)
	badIDs := []int64{100, 2500, 4999}
	for _, id := range badIDs {
		in[id].Region = notUTF8
	}
	rows := make([]iceberg.Row, len(in))
	for i, e := range in {
		rows[i] = iceberg.NewRow([]string{"id", "region", "amount"}, []any{e.ID, e.Region, e.Amount})
	}
	for _, tc := range []struct {
		name   string
		create func(s beam.Scope) beam.PCollection
		key    string // how a dead letter's row shows its id
	}{
		{"structs", func(s beam.Scope) beam.PCollection { return beam.CreateList(s, in) }, "ID:%d "},
		{"rows", func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) }, "id: %d,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			lc := icebergtest.NewLocalCatalog(t)
			cfg := iceberg.WriteConfig{Table: "db.many", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "appender"}
			snaps, dead := runMOR(t, cfg, tc.create)
			want := map[string]string{}
			for _, id := range badIDs {
				want[fmt.Sprintf(tc.key, id)] = `column "region"`
			}
			wantDead(t, dead, "db.many", want)
			var added int64
			for _, s := range snaps {
				added += s.RowsAdded
			}
			if added != 4997 {
				t.Fatalf("snapshots %+v, want 4997 rows added", snaps)
			}
			tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "many"})
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			var wantIDs []int64
			for id := range int64(5000) {
				if !slices.Contains(badIDs, id) {
					wantIDs = append(wantIDs, id)
				}
			}
			if got := readIDs(t, tbl); !slices.Equal(got, wantIDs) {
				t.Fatalf("read back %d ids, want the 4997 good ones", len(got))
			}
		})
	}
}
