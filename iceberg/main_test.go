package iceberg_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain runs the package's pipelines on prism, the SDK's embedded runner.
func TestMain(m *testing.M) { ptest.Main(m) }
