package row

import (
	"errors"
	"fmt"
)

// Sentinel errors of package row. Errors returned by this package wrap one of them with
// %w and name the column (dotted path for nested fields) they are about.
var (
	// ErrTypeMismatch is wrapped when a value does not match its column's Iceberg type,
	// or when a conversion would lose information.
	ErrTypeMismatch = errors.New("value does not match column type")
	// ErrInvalidUTF8 is wrapped when a value of a string column (top-level or nested) is
	// not valid UTF-8, which Iceberg strings must be. It also wraps ErrTypeMismatch.
	ErrInvalidUTF8 = fmt.Errorf("string is not valid UTF-8 (%w)", ErrTypeMismatch)
	// ErrRequiredNull is wrapped when a required column or element holds null.
	ErrRequiredNull = errors.New("null in required column")
	// ErrUnknownColumn is wrapped when a row or struct names a column the schema lacks,
	// or a struct field has no column.
	ErrUnknownColumn = errors.New("unknown column")
	// ErrCorrupt is wrapped when encoded row bytes cannot be decoded.
	ErrCorrupt = errors.New("corrupt encoded row")
	// ErrUnsupportedType is wrapped for an Iceberg or Go type the package cannot handle
	// (geometry, geography, channels, ...).
	ErrUnsupportedType = errors.New("unsupported type")
)
