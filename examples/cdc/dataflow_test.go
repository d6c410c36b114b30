package main

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"

	"github.com/icebeam/icebeam/internal/runnertest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestTranslatesForDataflow translates the example's batch pipeline and its
// streaming pipeline (--streaming) for the Dataflow runner with --dry_run: every
// DoFn, coder and type must serialize into a job the Dataflow service accepts. It
// needs no credentials and submits nothing.
func TestTranslatesForDataflow(t *testing.T) {
	lines := splitLines(sampleEvents)
	for _, tc := range []struct {
		name  string
		build func(beam.Scope, target) error
	}{
		{"batch", func(s beam.Scope, tg target) error { return buildBatch(s, tg, lines, 0) }},
		{"streaming", func(s beam.Scope, tg target) error { return buildStreaming(s, tg, lines, time.Now(), 100, 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cat, err := icebergtest.NewLocalCatalogAt(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			runnertest.DataflowDryRun(t)
			p, s := beam.NewPipelineWithRoot()
			tg := target{name: cat.Name, props: cat.Props, table: "shop.orders", local: cat.Catalog, outDir: dir}
			if err := tc.build(s, tg); err != nil {
				t.Fatal(err)
			}
			if _, err := dataflow.Execute(context.Background(), p); err != nil {
				t.Fatalf("Dataflow translation: %v", err)
			}
		})
	}
}
