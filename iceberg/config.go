package iceberg

import "github.com/icebeam/icebeam/iceberg/internal/config"

// PartitionField is one parsed partition_fields entry: Source column, Transform (one of
// identity, bucket, truncate, year, month, day, hour, void) and Param (bucket count or
// truncate width).
type PartitionField = config.PartitionField

// SortField is one parsed sort_fields entry: a term (Source, Transform, Param),
// Descending and NullsFirst.
type SortField = config.SortField

// Mode is the write mode (the mode key).
type Mode = config.Mode

// Write modes.
const (
	// Append appends every row as new data. The default.
	Append = config.Append
	// MergeOnRead applies every row as a change to the row with the same equality
	// columns, deleting prior rows with deletion vectors.
	MergeOnRead = config.MergeOnRead
)

// DeleteFormat is how a merge-on-read write deletes prior rows (the delete_format key).
type DeleteFormat = config.DeleteFormat

// Delete formats; the empty DeleteFormat picks DV on format-version 3 tables and
// equality deletes on format-version 2.
const (
	// DeleteFormatDV writes Iceberg V3 binary deletion vectors.
	DeleteFormatDV = config.DeleteFormatDV
	// DeleteFormatEquality writes equality delete files.
	DeleteFormatEquality = config.DeleteFormatEquality
)

// DistributionMode is how rows reach the file writers (the distribution_mode key).
type DistributionMode = config.DistributionMode

// Distribution modes.
const (
	// DistributionNone writes rows without a shuffle. The default.
	DistributionNone = config.DistributionNone
	// DistributionHash shuffles rows by partition before writing.
	DistributionHash = config.DistributionHash
)

// Change types: the values change_type_map maps to.
const (
	ChangeInsert       = config.ChangeInsert       // a new row
	ChangeUpdateBefore = config.ChangeUpdateBefore // the prior image of an update
	ChangeUpdateAfter  = config.ChangeUpdateAfter  // the new image of an update
	ChangeDelete       = config.ChangeDelete       // a deleted row
)

// Write defaults (see WriteDefaults).
const (
	DefaultNumShards                = config.DefaultNumShards                // num_shards, merge-on-read
	DefaultSorterMemoryMB           = config.DefaultSorterMemoryMB           // sorter_memory_mb, merge-on-read
	DefaultKeyIndexMemoryMB         = config.DefaultKeyIndexMemoryMB         // key_index_memory_mb, merge-on-read
	DefaultAllowedLatenessSeconds   = config.DefaultAllowedLatenessSeconds   // allowed_lateness_seconds
	DefaultTableCachePollingBuckets = config.DefaultTableCachePollingBuckets // table_cache_polling_buckets
	DefaultSequenceNumberColumn     = config.DefaultSequenceNumberColumn     // sequence_number_column, merge-on-read
	DefaultPollIntervalSeconds      = config.DefaultPollIntervalSeconds      // poll_interval_seconds, continuous reads
)

// ParseReadConfig builds a ReadConfig from a managed-style map, as decoded from YAML or
// JSON or built in Go, and validates it. Parsing is strict: an unknown key (with a "did you
// mean" hint), a wrong type and a contradiction are errors naming the key, and every
// problem is reported at once.
func ParseReadConfig(m map[string]any) (ReadConfig, error) {
	return config.Parse[ReadConfig](readSchema, m, writeSchema)
}

// ParseReadConfigJSON parses a JSON object of read keys (see ParseReadConfig).
func ParseReadConfigJSON(b []byte) (ReadConfig, error) {
	return config.ParseDoc(b, config.DecodeJSON, ParseReadConfig)
}

// ParseReadConfigYAML parses a YAML mapping of read keys (see ParseReadConfig).
func ParseReadConfigYAML(b []byte) (ReadConfig, error) {
	return config.ParseDoc(b, config.DecodeYAML, ParseReadConfig)
}

// ParseWriteConfig builds a WriteConfig from a managed-style map and validates it (see
// ParseReadConfig). An unset sink_id stays empty: Write assigns a fresh UUID.
func ParseWriteConfig(m map[string]any) (WriteConfig, error) {
	return config.Parse[WriteConfig](writeSchema, m, readSchema)
}

// ParseWriteConfigJSON parses a JSON object of write keys (see ParseWriteConfig).
func ParseWriteConfigJSON(b []byte) (WriteConfig, error) {
	return config.ParseDoc(b, config.DecodeJSON, ParseWriteConfig)
}

// ParseWriteConfigYAML parses a YAML mapping of write keys (see ParseWriteConfig).
func ParseWriteConfigYAML(b []byte) (WriteConfig, error) {
	return config.ParseDoc(b, config.DecodeYAML, ParseWriteConfig)
}

// ParsePartitionField parses one partition_fields entry: "col", "bucket(N, col)" (or
// "bucket(col, N)" or "bucket[N](col)"), the same forms of truncate, "year(col)",
// "month(col)", "day(col)", "hour(col)" or "void(col)".
func ParsePartitionField(s string) (PartitionField, error) { return config.ParsePartitionField(s) }

// ParseSortField parses one sort_fields entry: "<term> [asc|desc] [nulls first|nulls last]"
// where the term is a column or a partition transform of one.
func ParseSortField(s string) (SortField, error) { return config.ParseSortField(s) }

// WriteDefaults returns the default of every write key that has one.
func WriteDefaults() map[string]any { return config.WriteDefaults() }

// IsSecretKey reports whether a catalog property key names a secret whose value icebeam
// never logs, prints or puts in an error (names containing credential, token, secret,
// password, passwd, key, session or authorization).
func IsSecretKey(k string) bool { return config.IsSecretKey(k) }
