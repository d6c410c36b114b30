// Package rowcoder registers row.Row with Beam: its type and its deterministic
// coder (row.Encode, row.Decode), so that rows may be elements, GroupByKey keys and
// state keys. Packages that put rows in a pipeline import it for its side effect;
// package row itself stays free of Beam, so that the plain-Go packages built on it
// (iceberg/cdc) are too.
package rowcoder

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	t := reflect.TypeFor[row.Row]()
	beam.RegisterType(t)
	beam.RegisterCoder(t, row.Encode, row.Decode)
	// The encoding is deterministic, so rows may be GroupByKey keys and state keys.
	coder.RegisterDeterministicCoder(t, row.Encode, row.Decode)
}
