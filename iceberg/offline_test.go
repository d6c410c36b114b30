package iceberg_test

import (
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// offlineOrder is a row of the offline construction tests.
type offlineOrder struct {
	ID    int64  `iceberg:"id"`
	State string `iceberg:"state"`
}

// offlineChange is offlineOrder as a merge-on-read change (every change an INSERT),
// ordered by Seq.
type offlineChange struct {
	ID    int64  `iceberg:"id"`
	State string `iceberg:"state"`
	Seq   int64  `iceberg:"seq"`
}

func init() {
	beam.RegisterType(reflect.TypeOf(offlineOrder{}))
	beam.RegisterType(reflect.TypeOf(offlineChange{}))
	register.Function1x1(formatOfflineOrder)
}

func formatOfflineOrder(o offlineOrder) string { return o.State + ":" + string(rune('0'+o.ID)) }

// offlineSchema is the schema of offlineOrder's table, as a user gives it to Read.
func offlineSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "state", Type: ibg.PrimitiveTypes.String, Required: true})
}

// closedREST returns the catalog properties of a REST catalog on a closed port: any
// attempt to reach it fails.
func closedREST(t *testing.T) map[string]string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + l.Addr().String()
	l.Close()
	return map[string]string{"type": "rest", "uri": uri, "warehouse": "file:///nowhere", "rest.auth.type": "none"}
}

// TestConstructionWithoutCatalog: with WithoutCatalogAtConstruction (write, both
// modes) and WithSchema (read), a pipeline builds against a catalog nobody can
// reach; without them construction fails reaching it.
func TestConstructionWithoutCatalog(t *testing.T) {
	props := closedREST(t)
	rows := func(s beam.Scope) beam.PCollection { return beam.Create(s, offlineOrder{1, "NY"}) }
	appendCfg := iceberg.WriteConfig{Table: "shop.orders", CatalogName: "c", CatalogProperties: props}
	morCfg := appendCfg
	morCfg.Mode, morCfg.EqualityColumns, morCfg.SequenceNumberColumn = iceberg.MergeOnRead, []string{"id"}, "seq"
	changes := func(s beam.Scope) beam.PCollection { return beam.Create(s, offlineChange{1, "NY", 1}) }
	readCfg := iceberg.ReadConfig{Table: "shop.orders", CatalogName: "c", CatalogProperties: props,
		Filter: "state = 'NY'", Keep: []string{"id", "state"}}
	cases := []struct {
		name    string
		offline func(beam.Scope) error
		online  func(beam.Scope) error
	}{
		{"append",
			func(s beam.Scope) error {
				_, err := iceberg.TryWrite(s, appendCfg, rows(s), iceberg.WithoutCatalogAtConstruction())
				return err
			},
			func(s beam.Scope) error { _, err := iceberg.TryWrite(s, appendCfg, rows(s)); return err }},
		{"merge-on-read",
			func(s beam.Scope) error {
				_, err := iceberg.TryWrite(s, morCfg, changes(s), iceberg.WithoutCatalogAtConstruction())
				return err
			},
			func(s beam.Scope) error { _, err := iceberg.TryWrite(s, morCfg, changes(s)); return err }},
		{"read",
			func(s beam.Scope) error {
				_, err := iceberg.TryRead(s, readCfg, iceberg.WithSchema(offlineSchema()),
					iceberg.WithOutputType(reflect.TypeOf(offlineOrder{})))
				return err
			},
			func(s beam.Scope) error { _, err := iceberg.TryRead(s, readCfg); return err }},
		{"read batches",
			func(s beam.Scope) error {
				_, err := iceberg.TryReadBatches(s, readCfg, iceberg.WithSchema(offlineSchema()))
				return err
			},
			func(s beam.Scope) error { _, err := iceberg.TryReadBatches(s, readCfg); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			if err := c.offline(s); err != nil {
				t.Errorf("offline construction: %v", err)
			}
			_, s = beam.NewPipelineWithRoot()
			if err := c.online(s); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Errorf("construction reaching the catalog: err = %v, want connection refused", err)
			}
		})
	}
}

// TestConstructionWithoutCatalogChecks: what can be checked without the table still
// is, against the given schema and the config.
func TestConstructionWithoutCatalogChecks(t *testing.T) {
	props := closedREST(t)
	_, s := beam.NewPipelineWithRoot()
	_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "shop.orders", CatalogName: "c", CatalogProperties: props,
		Filter: "stat = 'NY'", Keep: []string{"idd"}}, iceberg.WithSchema(offlineSchema()))
	for _, want := range []string{`"filter"`, "stat", `"keep"`, `unknown column "idd" (did you mean "id"?)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read with a given schema: err = %v, want it to name %s", err, want)
		}
	}
	_, err = iceberg.TryWrite(s, iceberg.WriteConfig{Table: "shop.orders", CatalogName: "c", CatalogProperties: props,
		Mode: iceberg.MergeOnRead, SequenceNumberColumn: "seq"}, beam.Create(s, offlineChange{1, "NY", 1}), iceberg.WithoutCatalogAtConstruction())
	if err == nil || !strings.Contains(err.Error(), "equality_columns") {
		t.Errorf("merge-on-read without equality_columns, offline: err = %v, want it to name equality_columns", err)
	}
	_, err = iceberg.TryRead(s, iceberg.ReadConfig{Table: "shop.orders", CatalogName: "c", CatalogProperties: props,
		Streaming: true}, iceberg.WithSchema(offlineSchema()))
	if err == nil || !strings.Contains(err.Error(), "not with streaming") {
		t.Errorf("streaming read with a given schema: err = %v, want it refused", err)
	}
}

// TestReadAfterWriteOnePipeline: one pipeline creates a table with a merge-on-read
// write built without the catalog and reads it back after the write's commits
// (WithReadAfter), with the schema given up front: the read sees every committed row.
func TestReadAfterWriteOnePipeline(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	p, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, offlineChange{1, "NY", 1}, offlineChange{2, "CA", 2}, offlineChange{3, "NY", 3})
	res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "shop.orders", CatalogName: cat.Name,
		CatalogProperties: cat.Props, Mode: iceberg.MergeOnRead, EqualityColumns: []string{"id"},
		SequenceNumberColumn: "seq"}, in,
		iceberg.WithoutCatalogAtConstruction())
	if err != nil {
		t.Fatal(err)
	}
	got, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "shop.orders", CatalogName: cat.Name,
		CatalogProperties: cat.Props, Filter: "state = 'NY'"}, iceberg.WithSchema(offlineSchema()),
		iceberg.WithOutputType(reflect.TypeOf(offlineOrder{})), iceberg.WithReadAfter(res.Snapshots))
	if err != nil {
		t.Fatal(err)
	}
	passert.Equals(s, beam.ParDo(s, formatOfflineOrder, got), "NY:1", "NY:3")
	ptest.RunAndValidate(t, p)
}

// TestReadGivenSchemaMismatch: a read built with a schema the table does not match
// fails when it plans, naming the column and both types.
func TestReadGivenSchemaMismatch(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, cat.Catalog, "shop.orders", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int32, Required: true},
		ibg.NestedField{ID: 2, Name: "state", Type: ibg.PrimitiveTypes.String}))
	p, s := beam.NewPipelineWithRoot()
	iceberg.Read(s, iceberg.ReadConfig{Table: "shop.orders", CatalogName: cat.Name, CatalogProperties: cat.Props},
		iceberg.WithSchema(offlineSchema()))
	err := ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), `column "id" is int in the table, long in the schema given to the read`) {
		t.Fatalf("err = %v, want the type mismatch of id", err)
	}
}
