package iceberg

// The key constants (keys_gen.go, internal/config/keys_gen.go), the options that set
// one key each (options_gen.go) and README.md's key table are generated from the
// config types' managed fields: their tags, option tags and doc comments.
//go:generate go run ./internal/config/keygen

import "github.com/icebeam/icebeam/iceberg/internal/config"

// ReadKeys returns the keys ParseReadConfig accepts, in ReadConfig field order.
func ReadKeys() []string { return readSchema.Keys() }

// WriteKeys returns the keys ParseWriteConfig accepts, in WriteConfig field order.
func WriteKeys() []string { return writeSchema.Keys() }

// MergeOnReadOnlyKeys returns the write keys valid only with mode merge-on-read; setting
// one of them in append mode is an error.
func MergeOnReadOnlyKeys() []string { return config.MergeOnReadOnlyKeys() }
