package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
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

// TestReadmeDataflowCommand runs the README's Dataflow command (read from README.md,
// so the two cannot drift) with --dry_run added, with no Google credentials in the
// environment: the example must build its pipeline for BigLake's REST catalog and
// gs:// input and output without reaching the catalog, GCS or Google's auth, and the
// Dataflow runner must translate it.
func TestReadmeDataflowCommand(t *testing.T) {
	args := readmeCommand(t, "go run ./examples/cdc --runner=dataflow")
	if len(args) < 4 || args[0] != "go" || args[1] != "run" || args[2] != "./examples/cdc" {
		t.Fatalf("README command %q is not a go run of ./examples/cdc", args)
	}
	// No credentials: no key file, an empty home (no gcloud ADC file), no gcloud config.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	// The runner's staging-bucket check (a warning only) talks to an in-process fake
	// GCS rather than the network.
	gcs := icebergtest.NewFakeGCS(t, "icebeam-test")
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(gcs.Server.URL(), "http://"))
	set := func(name, value string) {
		t.Helper()
		f := flag.Lookup(name)
		if f == nil {
			t.Fatalf("README command flag --%s is not defined", name)
		}
		old := f.Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatalf("--%s=%s: %v", name, value, err)
		}
		t.Cleanup(func() { flag.Set(name, old) })
	}
	for _, a := range args[3:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Fatalf("README command argument %q is not --flag=value", a)
		}
		set(name, value)
	}
	for _, want := range []string{"runner", "input", "output", "catalog_properties"} {
		if flag.Lookup(want).Value.String() == "" {
			t.Fatalf("README command does not set --%s", want)
		}
	}
	set("dry_run", "true")
	var out bytes.Buffer
	if err := runMain(context.Background(), &out); err != nil {
		t.Fatalf("README Dataflow command with --dry_run: %v", err)
	}
	if !strings.Contains(out.String(), "pipeline done") {
		t.Errorf("output %q", out.String())
	}
}

// readmeCommand returns the arguments of the shell command in the repository's
// README.md that starts with prefix: backslash-newlines join lines, single quotes
// keep their content (newlines included), as the shell does.
func readmeCommand(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+prefix)
	if i < 0 {
		t.Fatalf("README.md has no command starting with %q", prefix)
	}
	text = text[i+1:]
	var args []string
	var cur strings.Builder
	inArg, quoted := false, false
	for j := 0; j < len(text); j++ {
		c := text[j]
		switch {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				cur.WriteByte(c)
			}
		case c == '\'':
			quoted, inArg = true, true
		case c == '\\' && j+1 < len(text) && text[j+1] == '\n':
			j++ // a line continuation
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
			if c == '\n' {
				return args
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	t.Fatalf("README command starting with %q does not end", prefix)
	return nil
}
