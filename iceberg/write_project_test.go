package iceberg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

func TestWriteStructProjectionAndHash(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		mutate   func(c *iceberg.WriteConfig)
		wantCols string
	}{
		{"keep", func(c *iceberg.WriteConfig) { c.Keep = []string{"id", "region", "address.city"} }, "id,region,address"},
		{"drop", func(c *iceberg.WriteConfig) {
			c.Drop = []string{"blob", "tags", "note", "address", "key", "ratio", "small", "day", "ok", "amount"}
		}, "id,region,at"},
		{"only", func(c *iceberg.WriteConfig) { c.Only = "address" }, "city,zip"},
		{"hash", func(c *iceberg.WriteConfig) {
			c.DistributionMode = iceberg.DistributionHash
			c.PartitionFields = []string{"region", "day(at)"}
		}, "id,region,small,ratio,amount,ok,at,day,key,blob,note,tags,address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			cfg := iceberg.WriteConfig{Table: "db.events", CatalogName: lc.Name, CatalogProperties: lc.Props}
			tc.mutate(&cfg)
			const n = 60
			snaps := runWrite(t, cfg, events(n))
			if len(snaps) != 1 || snaps[0].RowsAdded != n {
				t.Fatalf("snapshots = %+v, want one of %d rows", snaps, n)
			}
			tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "events"})
			if err != nil {
				t.Fatal(err)
			}
			if err := icebergtest.CheckTable(ctx, tbl); err != nil {
				t.Fatal(err)
			}
			var cols []string
			for _, f := range tbl.Schema().Fields() {
				cols = append(cols, f.Name)
			}
			if got := strings.Join(cols, ","); got != tc.wantCols {
				t.Errorf("table columns %s, want %s", got, tc.wantCols)
			}
			if tc.name == "keep" {
				addr, _ := tbl.Schema().FindFieldByName("address")
				if s := addr.Type.String(); strings.Contains(s, "zip") || !strings.Contains(s, "city") {
					t.Errorf("address is %s, want only city", s)
				}
			}
		})
	}
}
