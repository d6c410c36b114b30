package main

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
)

// closedURI returns the URI of a port nothing listens on.
func closedURI(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + l.Addr().String()
	l.Close()
	return uri
}

// TestBuildsWithoutCatalog: the program's imports are enough for a REST catalog
// with a gs:// warehouse, and its pipeline builds without reaching the catalog
// (here a closed port), as a --dry_run without credentials needs.
func TestBuildsWithoutCatalog(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	if err := build(s, catalogProperties(closedURI(t), "gs://bucket/warehouse", "none", ""), "demo.events", 3); err != nil {
		t.Fatalf("construction reached the catalog or failed a check: %v", err)
	}
}

// TestLinksOnlyRESTAndGCS: the linking checks still run at construction: a
// warehouse on storage the program did not import fails, naming the import.
func TestLinksOnlyRESTAndGCS(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	err := build(s, catalogProperties(closedURI(t), "s3://bucket/warehouse", "none", ""), "demo.events", 3)
	var ce *iceberg.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "iceberg/storage/s3") {
		t.Fatalf("err = %v, want a ConfigError naming the storage/s3 import", err)
	}
}
