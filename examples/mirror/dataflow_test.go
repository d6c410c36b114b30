package main

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/internal/runnertest"
)

// TestTranslatesForDataflow translates the example's mirror pipeline (ReadChanges
// into a merge-on-read write) for the Dataflow runner with --dry_run. The source
// table is built first on the test's runner: ReadChanges loads it at construction.
func TestTranslatesForDataflow(t *testing.T) {
	tg := newTarget(t)
	if err := buildSource(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	runnertest.DataflowDryRun(t)
	p, s := beam.NewPipelineWithRoot()
	cfg := iceberg.ChangesConfig{Table: sourceTable, CatalogName: tg.name, CatalogProperties: tg.props,
		StartingStrategy: iceberg.StartEarliest}
	if err := buildMirror(s, tg, cfg, mirrorTable, "mirror-dry-run"); err != nil {
		t.Fatal(err)
	}
	if _, err := dataflow.Execute(context.Background(), p); err != nil {
		t.Fatalf("Dataflow translation: %v", err)
	}
}
