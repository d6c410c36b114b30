package runnertest

import (
	"flag"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/testing/icebergtest"
)

// DataflowDryRun sets the Dataflow runner's flags for a --dry_run translation for
// the rest of the test. The runner checks the staging bucket's soft-delete policy
// with a GCS client: an in-process fake GCS answers, so nothing leaves the machine.
func DataflowDryRun(t *testing.T) {
	t.Helper()
	gcs := icebergtest.NewFakeGCS(t, "icebeam-test")
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(gcs.Server.URL(), "http://"))
	for name, value := range map[string]string{
		"dry_run": "true", "project": "icebeam-test", "region": "us-central1",
		"staging_location": "gs://icebeam-test/staging", "temp_location": "gs://icebeam-test/tmp",
		"environment_type": "DOCKER", "environment_config": "",
	} {
		f := flag.Lookup(name)
		if f == nil {
			t.Fatalf("flag %s is not defined: import the dataflow runner", name)
		}
		old := f.Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatalf("flag %s: %v", name, err)
		}
		t.Cleanup(func() { flag.Set(name, old) })
	}
}
