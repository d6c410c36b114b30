//go:build interop

package interop

import (
	"testing"

	"github.com/apache/iceberg-go/catalog"
)

// newReader returns the Go reader that the suite checks, for the catalog
// cat opened as name with props.
func newReader(t *testing.T, name string, cat catalog.Catalog, props map[string]string) readFunc {
	return iceberggoReader(t, cat)
}
