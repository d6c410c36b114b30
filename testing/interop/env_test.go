//go:build interop

package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Environment set by run.sh. A missing variable fails the test: the suite
// never skips an engine silently.
const (
	envWork    = "ICEBEAM_INTEROP_WORK"     // folder with catalog/, expected/, results/
	envPython  = "ICEBEAM_INTEROP_PYTHON"   // the venv's python (PySpark, PyIceberg, DuckDB)
	envJars    = "ICEBEAM_INTEROP_JARS"     // folder of the Spark-side jars
	envPG      = "ICEBEAM_PG_DSN"           // PostgreSQL DSN
	envRESTURI = "ICEBEAM_INTEROP_REST_URI" // Java RESTCatalogServer base URI
	envRESTWH  = "ICEBEAM_INTEROP_REST_WAREHOUSE"
	// envSparkLegs names the Spark legs besides the first (the venv's PySpark with
	// the Iceberg runtime in envJars): "name=python=runtime-jar", separated by ";".
	// Empty: the first leg only.
	envSparkLegs = "ICEBEAM_INTEROP_SPARK_LEGS"
)

// sparkLeg is one further Spark leg of envSparkLegs.
type sparkLeg struct{ Name, Python, Runtime string }

// sparkLegs parses envSparkLegs; a malformed entry fails the test.
func sparkLegs(t testing.TB) []sparkLeg {
	t.Helper()
	var out []sparkLeg
	for _, e := range strings.Split(os.Getenv(envSparkLegs), ";") {
		if strings.TrimSpace(e) == "" {
			continue
		}
		f := strings.Split(e, "=")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			t.Fatalf("interop: %s entry %q: want name=python=runtime-jar", envSparkLegs, e)
		}
		out = append(out, sparkLeg{Name: f[0], Python: f[1], Runtime: f[2]})
	}
	return out
}

func mustEnv(t testing.TB, k string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		t.Fatalf("interop: %s is not set: run the suite with testing/interop/run.sh (make interop)", k)
	}
	return v
}

func workDir(t testing.TB) string     { return mustEnv(t, envWork) }
func catalogDir(t testing.TB) string  { return filepath.Join(workDir(t), "catalog") }
func expectedDir(t testing.TB) string { return filepath.Join(workDir(t), "expected") }
func resultsDir(t testing.TB) string  { return filepath.Join(workDir(t), "results") }
