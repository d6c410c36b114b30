package write

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder" // Row's Beam coder
)

// DeadLetter is a row the write could not write, with where it was going and why.
type DeadLetter struct {
	// Row is the row in its String form.
	Row string
	// Table is the destination table, empty when none could be rendered.
	Table string
	// Reason says why the row was rejected; it names the column when one is at fault.
	Reason string
}

func init() {
	beam.RegisterType(reflect.TypeFor[DeadLetter]())
}
