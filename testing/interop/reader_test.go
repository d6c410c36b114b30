//go:build interop

package interop

import (
	"testing"

	"github.com/apache/iceberg-go/catalog"
)

// newReader returns the Go reader that the suite checks: icebeam's
// iceberg.Read on prism, for the catalog opened as name with props.
// (iceberggoReader, iceberg-go's own scan, is the reference it replaced.)
func newReader(t *testing.T, name string, _ catalog.Catalog, props map[string]string) readFunc {
	return beamReader(t, name, props)
}
