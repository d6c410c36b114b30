package interop

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestCompatTableInREADME fails when README.md's compatibility table (between the
// compat markers) is not compat.md, the table compat.py made from an interop run;
// run.sh fails when a run's results no longer make compat.md. Fix a failure with
// `python3 testing/interop/compat.py WORK --write` on a run's folder.
func TestCompatTableInREADME(t *testing.T) {
	const begin, end = "<!-- compat:begin -->", "<!-- compat:end -->"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("compat.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s ... %s section", begin, end)
	}
	if got := s[i+len(begin) : j]; got != "\n"+string(want) {
		t.Errorf("README.md's compatibility table differs from testing/interop/compat.md: run "+
			"python3 testing/interop/compat.py WORK --write on an interop run's folder\nREADME:\n%s\ncompat.md:\n%s", got, want)
	}
}

// geoRow is a row with a WKB value for a geography column.
type geoRow struct {
	ID int64  `iceberg:"id"`
	G  []byte `iceberg:"g"`
}

// TestGeographyNotWritable: compat.py's geography row says "not tested" because
// icebeam cannot write a geography column; this fails once Write accepts one, so the
// row gets a scenario instead of an outdated reason.
func TestGeographyNotWritable(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	geo, err := ibg.GeographyTypeOf("srid:4326", "spherical")
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.CreateTable(t, lc.Catalog, "db.geo", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "g", Type: geo}), icebergtest.WithFormatVersion(3))
	_, s := beam.NewPipelineWithRoot()
	point := []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40} // POINT(1 2), WKB
	_, err = iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.geo", CatalogName: lc.Name, CatalogProperties: lc.Props},
		beam.Create(s, geoRow{1, point}))
	if err == nil || !strings.Contains(err.Error(), `column "g" is geography`) {
		t.Fatalf("TryWrite to a geography column: %v; want the schema check to reject it (if icebeam writes "+
			"geography now, give compat.py's geography row a scenario instead of its NOT_WRITTEN reason)", err)
	}
}
