//go:build interop

package interop

import (
	"os"
	"path/filepath"
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
)

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
