package iceberg_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestUnlinkedCatalogFailsAtConstruction: a pipeline whose catalog_properties
// name a catalog type or a warehouse storage scheme that no imported package
// registered fails at construction (TryWrite, TryRead, TryReadChanges,
// TryMaintain return the error, before any connection) with a ConfigError that
// names the import to add; so does one built without the catalog
// (WithoutCatalogAtConstruction, WithSchema). This test binary links the sql catalog and gs://
// storage (through icebergtest), not hive nor s3://.
func TestUnlinkedCatalogFailsAtConstruction(t *testing.T) {
	if registry.Registered("hive") {
		t.Fatal("the iceberg package's tests link the hive catalog: this test needs a type they do not link")
	}
	lc := icebergtest.NewLocalCatalog(t)
	s3 := map[string]string{}
	for k, v := range lc.Props {
		s3[k] = v
	}
	s3["warehouse"] = "s3://bucket/warehouse"
	cases := []struct {
		name  string
		props map[string]string
		key   string
		imp   string
	}{
		{"hive catalog", map[string]string{"type": "hive", "uri": "thrift://127.0.0.1:1", "warehouse": "file:///tmp/wh"},
			"catalog_properties.type", "github.com/icebeam/icebeam/iceberg/catalogs/hive"},
		{"s3 warehouse", s3, "catalog_properties.warehouse", "github.com/icebeam/icebeam/iceberg/storage/s3"},
	}
	constructions := map[string]func(props map[string]string) error{
		"write": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props},
				beam.CreateList(s, events(1)))
			return err
		},
		"read": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props})
			return err
		},
		"changes": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props})
			return err
		},
		"write without the catalog": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props},
				beam.CreateList(s, events(1)), iceberg.WithoutCatalogAtConstruction())
			return err
		},
		"read with a given schema": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props},
				iceberg.WithSchema(offlineSchema()))
			return err
		},
		"maintain": func(props map[string]string) error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryMaintain(s, iceberg.MaintainConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props})
			return err
		},
	}
	for _, tc := range cases {
		for op, construct := range constructions {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				err := construct(tc.props)
				var ce *iceberg.ConfigError
				if !errors.As(err, &ce) || ce.Key != tc.key {
					t.Fatalf("err = %v, want a ConfigError on %s", err, tc.key)
				}
				if !errors.Is(err, iceberg.ErrUnsupported) {
					t.Errorf("err = %v, want ErrUnsupported", err)
				}
				if want := `import _ "` + tc.imp + `"`; !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %q, want it to name %s", err, want)
				}
			})
		}
	}
}
