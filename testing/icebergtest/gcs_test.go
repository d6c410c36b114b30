package icebergtest

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func TestFakeGCSProps(t *testing.T) {
	gcs := NewFakeGCS(t, "bkt")
	p := gcs.Props()
	if !strings.HasPrefix(p["gcs.endpoint"], "http://127.0.0.1:") || !strings.HasSuffix(p["gcs.endpoint"], "/storage/v1/") {
		t.Errorf("gcs.endpoint = %q", p["gcs.endpoint"])
	}
	for _, k := range []string{"gcs.no-auth", "gcs.usejsonapi"} {
		if p[k] != "true" {
			t.Errorf("%s = %q, want true", k, p[k])
		}
	}
}

func TestLocalCatalogGCS(t *testing.T) {
	gcs := NewFakeGCS(t, "lake")
	cat := NewLocalCatalogGCS(t, gcs)
	if cat.Warehouse != "gs://lake/warehouse" || cat.Props["warehouse"] != cat.Warehouse {
		t.Fatalf("warehouse = %q, props %q", cat.Warehouse, cat.Props["warehouse"])
	}
	for k, v := range gcs.Props() {
		if cat.Props[k] != v {
			t.Errorf("Props[%s] = %q, want %q", k, cat.Props[k], v)
		}
	}

	tbl := CreateTable(t, cat.Catalog, "db.events", SampleSchema())
	if !strings.HasPrefix(tbl.Location(), "gs://lake/warehouse/") {
		t.Fatalf("table location = %q", tbl.Location())
	}
	recs := SampleRecords(t, 25, 11)
	tbl = AppendRecords(t, tbl, recs)
	path := DataFiles(t, tbl)[0].FilePath()
	tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {0}})
	RequireValid(t, tbl)
	if got := ReadAll(t, tbl, nil).NumRows(); got != 24 {
		t.Fatalf("rows = %d, want 24", got)
	}

	// The files are in the fake bucket, not on local disk.
	objs, _, err := gcs.Server.ListObjectsWithOptions("lake", fakestorage.ListOptions{Prefix: "warehouse/db.db/events/data/"})
	if err != nil {
		t.Fatal(err)
	}
	var parquet, puffin int
	for _, o := range objs {
		switch {
		case strings.HasSuffix(o.Name, ".parquet"):
			parquet++
		case strings.HasSuffix(o.Name, ".puffin"):
			puffin++
		}
	}
	if parquet != 1 || puffin != 1 {
		t.Fatalf("bucket holds %d parquet and %d puffin files, want 1 and 1", parquet, puffin)
	}

	// A reload through the catalog sees the same table.
	again, err := cat.Catalog.LoadTable(context.Background(), catalog.ToIdentifier("db.events"))
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, ReadAll(t, tbl, nil), ReadAll(t, again, nil))
}
