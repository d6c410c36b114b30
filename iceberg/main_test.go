package iceberg_test

import (
	"testing"

	"github.com/icebeam/icebeam/internal/runnertest"
)

// TestMain runs the package's pipelines on prism, the SDK's embedded runner, or
// with ICEBEAM_RUNNER=python on Beam Python's portable job service (the runner
// matrix of testing/interop/run.sh).
func TestMain(m *testing.M) { runnertest.Main(m) }
