package config

import (
	"slices"
)

// Mode is the write mode of the mode key.
type Mode string

// Write modes.
const (
	// Append appends every row as new data. The default.
	Append Mode = "append"
	// MergeOnRead applies every row as a change (INSERT, UPDATE_BEFORE, UPDATE_AFTER,
	// DELETE) to the row with the same equality_columns, deleting prior rows with deletion
	// vectors (or equality deletes, see DeleteFormat).
	MergeOnRead Mode = "merge-on-read"
)

// DeleteFormat is how a merge-on-read write deletes prior rows (the delete_format key).
type DeleteFormat string

// Delete formats. The empty DeleteFormat means DV on format-version 3 tables and
// Equality on format-version 2 tables.
const (
	// DeleteFormatDV writes Iceberg V3 binary deletion vectors (Puffin files).
	DeleteFormatDV DeleteFormat = "dv"
	// DeleteFormatEquality writes equality delete files.
	DeleteFormatEquality DeleteFormat = "equality"
)

// DistributionMode is how rows reach the file writers (the distribution_mode key).
type DistributionMode string

// Distribution modes.
const (
	// DistributionNone writes rows where they are, without a shuffle. The default.
	DistributionNone DistributionMode = "none"
	// DistributionHash shuffles rows by partition key before writing.
	DistributionHash DistributionMode = "hash"
)

// Change types of change_type_map values and of merge-on-read rows.
const (
	ChangeInsert       = "INSERT"
	ChangeUpdateBefore = "UPDATE_BEFORE"
	ChangeUpdateAfter  = "UPDATE_AFTER"
	ChangeDelete       = "DELETE"
)

// Defaults. WriteDefaults and WriteConfig.Resolved are built from these values only.
const (
	DefaultMode                     = Append
	DefaultDistributionMode         = DistributionNone
	DefaultNumShards                = 16
	DefaultSorterMemoryMB           = 100
	DefaultKeyIndexMemoryMB         = 256
	DefaultAllowedLatenessSeconds   = 21600
	DefaultTableCachePollingBuckets = 1
	DefaultSequenceNumberColumn     = "_commit_snapshot_sequence_number"
)

// writeDefaults holds every write default by key. Merge-on-read-only keys apply only in
// that mode. shards_per_partition defaults to the effective num_shards.
var writeDefaults = map[string]any{
	KeyMode:                     string(DefaultMode),
	KeyDistributionMode:         string(DefaultDistributionMode),
	KeyAllowedLatenessSeconds:   DefaultAllowedLatenessSeconds,
	KeyTableCachePollingBuckets: DefaultTableCachePollingBuckets,
	KeyNumShards:                DefaultNumShards,
	KeySorterMemoryMB:           DefaultSorterMemoryMB,
	KeyKeyIndexMemoryMB:         DefaultKeyIndexMemoryMB,
	KeySequenceNumberColumn:     DefaultSequenceNumberColumn,
}

// mergeOnReadOnly are the keys that only apply to mode merge-on-read; setting one in
// append mode is an error (never a silent no-op).
var mergeOnReadOnly = []string{
	KeyChangeTypeColumn, KeyChangeTypeMap, KeyEqualityColumns, KeySequenceNumberColumn,
	KeyUpsert, KeyDeleteFormat, KeyNumShards, KeyShardsPerPartition, KeySorterMemoryMB,
	KeyKeyIndexMemoryMB, KeyBeforeField,
}

// WriteDefaults returns the default of every write key that has one. The merge-on-read
// keys among them (num_shards, sorter_memory_mb, sequence_number_column) apply only in
// that mode; sink_id defaults to a fresh UUID assigned by the write transform.
func WriteDefaults() map[string]any {
	out := make(map[string]any, len(writeDefaults))
	for k, v := range writeDefaults {
		out[k] = v
	}
	return out
}

// MergeOnReadOnlyKeys returns the write keys that are valid only with mode merge-on-read.
func MergeOnReadOnlyKeys() []string { return slices.Clone(mergeOnReadOnly) }

// CheckTemplate reports unbalanced braces and empty placeholders in a table template.
func CheckTemplate(errs *Errors, table string) {
	depth := 0
	start := 0
	for i, r := range table {
		switch r {
		case '{':
			if depth > 0 {
				errs.Add(Errorf(KeyTable, "nested { in table template"))
				return
			}
			depth, start = 1, i
		case '}':
			if depth == 0 {
				errs.Add(Errorf(KeyTable, "unmatched } in table template"))
				return
			}
			if Blank(table[start+1 : i]) {
				errs.Add(Errorf(KeyTable, "empty {} placeholder in table template"))
				return
			}
			depth = 0
		}
	}
	if depth > 0 {
		errs.Add(Errorf(KeyTable, "unclosed { in table template"))
	}
}

func SortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
