package main

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
)

// TestLinksRESTAndGCS: the program's imports are enough for a REST catalog
// with a gs:// warehouse. Construction gets past the linking checks (a
// missing rest type or gs:// package would be a ConfigError naming the import)
// and fails only where it must: reaching the catalog, here a closed port.
func TestLinksRESTAndGCS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + l.Addr().String()
	l.Close()
	_, s := beam.NewPipelineWithRoot()
	err = build(s, catalogProperties(uri, "gs://bucket/warehouse", "none", ""), "demo.events", 3)
	if err == nil {
		t.Fatal("construction against a closed port succeeded")
	}
	var ce *iceberg.ConfigError
	if errors.As(err, &ce) || strings.Contains(err.Error(), "import _") {
		t.Fatalf("err = %v, want a connection error, not a configuration or linking one", err)
	}
	if !strings.Contains(err.Error(), "connect") && !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v, want the catalog connection to fail", err)
	}
}
