package iceberg_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestReadTimeTravel reads an older snapshot by id, by timestamp and through a branch
// that points at it: each returns the rows of that snapshot only.
func TestReadTimeTravel(t *testing.T) {
	ctx := context.Background()
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	tbl := icebergtest.CreateTable(t, cat.Catalog, "db.tt", sc)
	rows := icebergtest.SampleRows(300, 11)
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[:100]))
	first := tbl.CurrentSnapshot()
	old := rowsOf(t, tbl.Schema(), icebergtest.ReadAll(t, tbl, nil))
	time.Sleep(5 * time.Millisecond) // distinct snapshot timestamps
	tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[100:]))
	if _, _, err := cat.Catalog.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", first.SnapshotID, table.BranchRef, 0, 0, 0),
	}); err != nil {
		t.Fatal(err)
	}
	all := rowsOf(t, tbl.Schema(), icebergtest.ReadAll(t, tbl, nil))
	if len(old) != 100 || len(all) != 300 {
		t.Fatalf("fixture: %d and %d rows", len(old), len(all))
	}

	base := iceberg.ReadConfig{Table: "db.tt", CatalogName: cat.Name, CatalogProperties: cat.Props}
	cases := []struct {
		name string
		opt  iceberg.ReadOption
		want []any
	}{
		{"current", nil, all},
		{"snapshot_id", iceberg.WithSnapshotID(first.SnapshotID), old},
		{"as_of_timestamp", iceberg.WithAsOfTimestamp(time.UnixMilli(first.TimestampMs)), old},
		{"branch", iceberg.WithBranch("audit"), old},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			passert.Equals(s, iceberg.Read(s, base, c.opt), c.want...)
			ptest.RunAndValidate(t, p)
		})
	}

	t.Run("before the first snapshot", func(t *testing.T) {
		_, s := beam.NewPipelineWithRoot()
		_, err := iceberg.TryRead(s, base, iceberg.WithAsOfTimestamp(time.UnixMilli(first.TimestampMs-60_000)))
		if err == nil || !containsAll(err.Error(), "as_of_timestamp", "no snapshot") {
			t.Errorf("TryRead as of a time before the table: %v", err)
		}
	})

	t.Run("unknown branch", func(t *testing.T) {
		_, s := beam.NewPipelineWithRoot()
		_, err := iceberg.TryRead(s, base, iceberg.WithBranch("nope"))
		if err == nil {
			t.Fatal("no error for an unknown branch")
		}
		if got := fmt.Sprint(err); !containsAll(got, "branch", "nope") {
			t.Errorf("error %q does not name the key and branch", got)
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
