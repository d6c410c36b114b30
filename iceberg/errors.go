package iceberg

import "github.com/icebeam/icebeam/iceberg/internal/config"

// Sentinel errors. Every error icebeam returns wraps one of them; test with errors.Is.
// Messages read "iceberg: <op> <table>: <cause>" (op: read, read changes, write, commit,
// ...), the cause starting with the sentinel's text where one applies, e.g.
// "iceberg: write db.t: invalid configuration: schema mismatch: ..."; a ConfigError
// reads "iceberg: config key "<key>": <cause>".
var (
	// ErrInvalidConfig is wrapped by every configuration error (see ConfigError).
	ErrInvalidConfig = config.ErrInvalidConfig
	// ErrTableNotFound is returned when the configured table does not exist.
	ErrTableNotFound = config.ErrTableNotFound
	// ErrCommitConflict is returned when a commit lost a race that retries could not resolve.
	ErrCommitConflict = config.ErrCommitConflict
	// ErrUnsupported is returned for a setting or table feature icebeam does not support,
	// such as config_properties.
	ErrUnsupported = config.ErrUnsupported
)

// ConfigError is one problem with one configuration key: Key names the managed key (for a
// map entry "catalog_properties.<name>"), Err the cause. It wraps ErrInvalidConfig. When a
// config has several problems the error lists one ConfigError per problem; find them with
// errors.As or by walking Unwrap() []error. Values of catalog properties never appear in
// its message.
type ConfigError = config.ConfigError
