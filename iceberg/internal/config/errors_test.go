package config

import (
	"errors"
	"fmt"
	"testing"
)

// TestOpError: an operation's error reads "iceberg: <op> <table>: <cause>" with the
// prefix once, however the cause was wrapped, and keeps the chain to the sentinel.
func TestOpError(t *testing.T) {
	inner := fmt.Errorf("iceberg: load table db.t from catalog \"c\": %w", ErrTableNotFound)
	tests := []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"plain cause", WrapOp("read", "db.t", errors.New("boom")), "iceberg: read db.t: boom", nil},
		{"prefixed cause", WrapOp("read", "db.t", inner),
			`iceberg: read db.t: load table db.t from catalog "c": table not found`, ErrTableNotFound},
		{"sentinel first in the cause", OpErrorf("write", "db.t", "%w: %w", ErrInvalidConfig, fmt.Errorf("iceberg: infer schema: iceberg: map struct: %w", ErrUnsupported)),
			"iceberg: write db.t: invalid configuration: infer schema: map struct: unsupported", ErrUnsupported},
		{"same op and table twice", WrapOp("commit", "db.t", WrapOp("commit", "db.t", fmt.Errorf("%w: gave up", ErrCommitConflict))),
			"iceberg: commit db.t: commit conflict: gave up", ErrCommitConflict},
		{"same op and table, formatted", WrapOp("commit", "db.t", fmt.Errorf("iceberg: commit db.t: %w", ErrCommitConflict)),
			"iceberg: commit db.t: commit conflict", ErrCommitConflict},
		{"another op inside", WrapOp("write", "db.t", fmt.Errorf("iceberg: create db.t: %w", ErrUnsupported)),
			"iceberg: write db.t: create db.t: unsupported", ErrUnsupported},
		{"config error inside", WrapOp("write", "db.t", Errorf(KeyEqualityColumns, "not set")),
			`iceberg: write db.t: config key "equality_columns": not set`, ErrInvalidConfig},
		{"no table", WrapOp("read", "", errors.New("iceberg: read structs: bad field")), "iceberg: read: read structs: bad field", nil},
		{"config error with a prefixed cause", &ConfigError{Key: KeyFilter, Err: errors.New("iceberg: filter at position 1: unknown column")},
			`iceberg: config key "filter": filter at position 1: unknown column`, ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if tc.is != nil && !errors.Is(tc.err, tc.is) {
				t.Errorf("%v does not wrap %v", tc.err, tc.is)
			}
		})
	}
	if WrapOp("read", "db.t", nil) != nil {
		t.Error("WrapOp(nil) is not nil")
	}
	var ce *ConfigError
	if !errors.As(WrapOp("write", "db.t", Errorf(KeyMode, "bad")), &ce) || ce.Key != KeyMode {
		t.Error("a wrapped ConfigError is not found by errors.As")
	}
}
