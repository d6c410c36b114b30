package main

import (
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestTranslatesForDataflow translates the example's write and read for the Dataflow
// runner with --dry_run: every DoFn, coder and type must serialize into a job the
// Dataflow service accepts. It needs no credentials and submits nothing.
func TestTranslatesForDataflow(t *testing.T) {
	dir := t.TempDir()
	cat, err := icebergtest.NewLocalCatalogAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })

	// The read validates against the table at construction, so create it first.
	p, s := beam.NewPipelineWithRoot()
	if err := buildWrite(s, cat); err != nil {
		t.Fatal(err)
	}
	ptest.RunAndValidate(t, p)

	// The runner checks the staging bucket's soft-delete policy with a GCS client: let
	// an in-process fake GCS answer, so nothing leaves the machine.
	gcs := icebergtest.NewFakeGCS(t, "icebeam-test")
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(gcs.Server.URL(), "http://"))
	for name, value := range map[string]string{
		"dry_run": "true", "project": "icebeam-test", "region": "us-central1",
		"staging_location": "gs://icebeam-test/staging", "temp_location": "gs://icebeam-test/tmp",
		"environment_type": "DOCKER", "environment_config": "",
	} {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatalf("flag %s: %v", name, err)
		}
		t.Cleanup(func() { flag.Set(name, old) })
	}

	p, s = beam.NewPipelineWithRoot()
	if err := buildWrite(s.Scope("write"), cat); err != nil {
		t.Fatal(err)
	}
	if err := buildRead(s.Scope("read"), cat, filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := dataflow.Execute(context.Background(), p); err != nil {
		t.Fatalf("Dataflow translation: %v", err)
	}
}
