package write

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder" // Row's Beam coder
)

// DeadLetter is a row the write could not write, with where it was going and why.
// The facade hands it to users as iceberg.DeadLetter, which has the same fields (a
// Go conversion) and documents them.
type DeadLetter struct {
	Row    string
	Table  string
	Reason string
}

func init() {
	beam.RegisterType(reflect.TypeFor[DeadLetter]())
}
