package config

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error icebeam returns wraps one of them (with %w), so callers
// can test with errors.Is. They are re-exported by package iceberg.
var (
	// ErrInvalidConfig is wrapped by every configuration error (see ConfigError).
	ErrInvalidConfig = errors.New("invalid configuration")
	// ErrTableNotFound is returned when the configured table does not exist.
	ErrTableNotFound = errors.New("table not found")
	// ErrCommitConflict is returned when a commit lost a race that retries could not resolve.
	ErrCommitConflict = errors.New("commit conflict")
	// ErrUnsupported is returned for a setting or table feature icebeam does not support.
	ErrUnsupported = errors.New("unsupported")
)

// ConfigError is one problem with one configuration key. It wraps ErrInvalidConfig and,
// when set, the underlying cause.
type ConfigError struct {
	Key string // the managed config key, e.g. "filter" or "catalog_properties.uri"
	Err error  // the cause
}

func (e *ConfigError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("iceberg: config key %q: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("iceberg: config key %q: %s", e.Key, Unprefixed(e.Err.Error()))
}

// Unwrap returns both the cause and ErrInvalidConfig, so errors.Is works for either.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidConfig}
	}
	return []error{e.Err, ErrInvalidConfig}
}

// OpError is an error of one operation on one table as users read it:
// "iceberg: <op> <table>: <cause>", op being read, read changes, write, commit and the
// like. It wraps its cause, and through it the sentinel (errors.Is). The "iceberg: "
// with which the messages of wrapped errors start is left out, and so is a repeat of
// the same op and table, so that the prefix stands once, in front.
type OpError struct {
	Op    string // "write"
	Table string // "db.t"; empty when the operation has none
	Err   error  // the cause
}

func (e *OpError) Error() string {
	head := "iceberg: " + e.Op
	if e.Table != "" {
		head += " " + e.Table
	}
	return head + ": " + Unprefixed(strings.TrimPrefix(e.Err.Error(), head+": "))
}

func (e *OpError) Unwrap() error { return e.Err }

// WrapOp returns err as the error of op on table (see OpError): nil when err is nil,
// err itself when it already is an *OpError of op on table.
func WrapOp(op, table string, err error) error {
	if oe, ok := err.(*OpError); err == nil || ok && oe.Op == op && oe.Table == table {
		return err
	}
	return &OpError{Op: op, Table: table, Err: err}
}

// OpErrorf returns the error of op on table whose cause is fmt.Errorf(format, args...),
// e.g. OpErrorf("write", t, "%w: rows must be a struct", ErrInvalidConfig).
func OpErrorf(op, table, format string, args ...any) error {
	return &OpError{Op: op, Table: table, Err: fmt.Errorf(format, args...)}
}

// Unprefixed returns the message of a wrapped error without the "iceberg: " of the
// errors in it, which the outer error's own prefix replaces.
func Unprefixed(msg string) string {
	return strings.ReplaceAll(strings.TrimPrefix(msg, "iceberg: "), ": iceberg: ", ": ")
}

// Errorf builds a ConfigError for key.
func Errorf(key, format string, args ...any) *ConfigError {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Errors collects several problems so that Validate reports every one at once.
type Errors []error

// Add appends err when it is not nil.
func (es *Errors) Add(err error) {
	if err != nil {
		*es = append(*es, err)
	}
}

// Err returns nil, the single error, or a joined error listing every problem.
func (es Errors) Err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return joined(es)
}

type joined []error

func (j joined) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iceberg: %d configuration problems:", len(j))
	for _, e := range j {
		b.WriteString("\n  - ")
		b.WriteString(e.Error())
	}
	return b.String()
}

func (j joined) Unwrap() []error { return j }
