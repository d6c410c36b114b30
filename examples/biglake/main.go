// Command biglake is the smallest icebeam pipeline a Dataflow user writes: it
// appends rows to an Iceberg table in BigLake's Iceberg REST catalog, with the
// table's files on Google Cloud Storage. It links only what that needs: the rest
// catalog (always linked, with Google Application Default Credentials for
// rest.auth.type=google) and gs:// storage (the one import below). Its worker
// binary is what testing/bench/binsize.sh measures against Beam's wordcount.
//
//	go run ./examples/biglake --runner=dataflow --project=P --region=R \
//	  --staging_location=gs://B/staging --warehouse=gs://B/warehouse --table=demo.events
//
// --project (Beam's own flag) is also billed for the catalog requests
// (header x-goog-user-project). Add --dry_run to translate the job without
// credentials: the pipeline is built without reaching the catalog. Any Iceberg REST catalog works with --catalog_uri and --auth=none or oauth2.
package main

import (
	"context"
	"flag"
	"log"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/icebeam/icebeam/iceberg"
	_ "github.com/icebeam/icebeam/iceberg/storage/gcs" // gs:// table files
)

var (
	catalogURI = flag.String("catalog_uri", "https://biglake.googleapis.com/iceberg/v1/restcatalog", "the Iceberg REST catalog's base URI")
	warehouse  = flag.String("warehouse", "", "the catalog's warehouse, gs://BUCKET/PATH for BigLake (required)")
	auth       = flag.String("auth", "google", "rest.auth.type: google (Application Default Credentials), oauth2 or none")
	tableName  = flag.String("table", "demo.events", "the table to append to, created when missing")
	rows       = flag.Int("rows", 1000, "how many rows to append")
)

// Event is one row of the table.
type Event struct {
	ID   int64  `iceberg:"id"`
	Name string `iceberg:"name"`
}

func init() {
	beam.RegisterType(reflect.TypeOf(Event{}))
}

// catalogProperties are the catalog_properties of a REST catalog at uri with
// warehouse, authenticated by auth, billed to project when set.
func catalogProperties(uri, warehouse, auth, project string) map[string]string {
	props := map[string]string{"type": "rest", "uri": uri, "warehouse": warehouse, "rest.auth.type": auth}
	if project != "" {
		props["header.x-goog-user-project"] = project
	}
	return props
}

// build appends n events to table in the catalog of props.
func build(s beam.Scope, props map[string]string, table string, n int) error {
	events := make([]Event, n)
	for i := range events {
		events[i] = Event{ID: int64(i), Name: "event"}
	}
	// Built without reaching the catalog: the table is created by the first rows when
	// the job runs, and --dry_run (or a CI job) needs no credentials.
	_, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: table, CatalogName: "biglake", CatalogProperties: props},
		beam.CreateList(s, events), iceberg.WithoutCatalogAtConstruction())
	return err
}

func main() {
	flag.Parse()
	beam.Init()
	if *warehouse == "" {
		log.Fatal("--warehouse is required (gs://BUCKET/PATH)")
	}
	p, s := beam.NewPipelineWithRoot()
	if err := build(s, catalogProperties(*catalogURI, *warehouse, *auth, *gcpopts.Project), *tableName, *rows); err != nil {
		log.Fatal(err)
	}
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatal(err)
	}
}
