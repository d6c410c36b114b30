package config

import (
	"math"
	"reflect"
	"slices"
	"strings"
)

// Maintenance operations (the operations key), in the order Maintain runs them.
const (
	OpRewriteDataFiles  = "rewrite_data_files"
	OpExpireSnapshots   = "expire_snapshots"
	OpRemoveOrphanFiles = "remove_orphan_files"
)

// MaintenanceOperations are the operations, in the order they run.
var MaintenanceOperations = []string{OpRewriteDataFiles, OpExpireSnapshots, OpRemoveOrphanFiles}

// Maintenance defaults.
const (
	// DefaultOrphanOlderThanSeconds is how old an unreferenced file must be before
	// remove_orphan_files deletes it: 3 days, as Spark's remove_orphan_files.
	DefaultOrphanOlderThanSeconds = 3 * 24 * 3600
)

// MaintainConfig configures table maintenance (Maintain): compaction of data files
// with their deletes folded in, snapshot expiry and orphan file removal. Each managed
// field is tagged with its managed key; the zero value of a field means "not set".
type MaintainConfig struct {
	// Table is the table identifier, e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Operations lists the operations to run, in their fixed order
	// (rewrite_data_files, expire_snapshots, remove_orphan_files); default all three.
	Operations []string `managed:"operations"`
	// Filter is a SQL predicate: compaction rewrites only the data files that may hold
	// matching rows (whole files; use partition columns to pick partitions).
	Filter string `managed:"filter"`
	// TargetFileSizeBytes is the size of the files compaction writes; default the
	// table's write.target-file-size-bytes (512 MiB when unset).
	TargetFileSizeBytes *int64 `managed:"target_file_size_bytes"`
	// MinInputFiles is how many files of one partition make a bin worth rewriting for
	// their size alone (default 5).
	MinInputFiles *int `managed:"min_input_files"`
	// DeleteFileThreshold rewrites any data file with at least this many delete files
	// (a deletion vector counts one); unset: only the delete ratio (30% of a file's
	// rows deleted) and size select files.
	DeleteFileThreshold *int `managed:"delete_file_threshold"`
	// RewriteAll rewrites every selected data file whatever its size and deletes.
	RewriteAll bool `managed:"rewrite_all"`
	// ExpireOlderThanSeconds expires snapshots older than this; default the table's
	// history.expire.max-snapshot-age-ms (5 days when unset). Also a write key (inline
	// maintenance).
	ExpireOlderThanSeconds *int `managed:"expire_older_than_seconds"`
	// RetainLast keeps at least this many snapshots of each branch; default the
	// table's history.expire.min-snapshots-to-keep (1 when unset). Also a write key.
	RetainLast *int `managed:"retain_last"`
	// OrphanOlderThanSeconds removes only orphan files older than this (default
	// DefaultOrphanOlderThanSeconds: younger files may belong to a commit in flight).
	OrphanOlderThanSeconds *int `managed:"orphan_older_than_seconds"`
	// DryRun lists orphan files without deleting them.
	DryRun bool `managed:"dry_run"`
}

var maintainSchema = buildSchema("maintain", reflect.TypeFor[MaintainConfig]())

// MaintainKeys returns the managed keys MaintainConfig accepts, in field order.
func MaintainKeys() []string { return append([]string(nil), maintainSchema.keys...) }

// ParseMaintainConfig builds a MaintainConfig from a managed-style map and validates
// it. Every problem is reported at once (see ParseReadConfig for the error form).
func ParseMaintainConfig(m map[string]any) (MaintainConfig, error) {
	var c MaintainConfig
	errs := maintainSchema.decode(m, reflect.ValueOf(&c), writeSchema)
	if err := merge(errs, c.Validate()).Err(); err != nil {
		return MaintainConfig{}, err
	}
	return c, nil
}

// ParseMaintainConfigJSON parses a JSON object of managed keys (see
// ParseMaintainConfig).
func ParseMaintainConfigJSON(b []byte) (MaintainConfig, error) {
	m, err := decodeJSON(b)
	if err != nil {
		return MaintainConfig{}, err
	}
	return ParseMaintainConfig(m)
}

// ParseMaintainConfigYAML parses a YAML mapping of managed keys (see
// ParseMaintainConfig).
func ParseMaintainConfigYAML(b []byte) (MaintainConfig, error) {
	m, err := decodeYAML(b)
	if err != nil {
		return MaintainConfig{}, err
	}
	return ParseMaintainConfig(m)
}

// Map returns the managed-style map of the keys set in c: the inverse of
// ParseMaintainConfig.
func (c MaintainConfig) Map() map[string]any {
	return maintainSchema.encode(reflect.ValueOf(c))
}

// Runs reports whether c runs operation op.
func (c MaintainConfig) Runs(op string) bool {
	return len(c.Operations) == 0 || slices.Contains(c.Operations, op)
}

// OrphanOlderThan returns OrphanOlderThanSeconds or its default.
func (c MaintainConfig) OrphanOlderThan() int {
	if c.OrphanOlderThanSeconds != nil {
		return *c.OrphanOlderThanSeconds
	}
	return DefaultOrphanOlderThanSeconds
}

// Validate reports every problem of c at once (see ParseReadConfig for the error form).
func (c MaintainConfig) Validate() error {
	var errs Errors
	checkCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	if strings.ContainsAny(c.Table, "{}") {
		errs.Add(Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	seen := map[string]bool{}
	for _, op := range c.Operations {
		switch {
		case !slices.Contains(MaintenanceOperations, op):
			errs.Add(Errorf(KeyOperations, "unknown operation %q (want some of %s)", op, strings.Join(MaintenanceOperations, ", ")))
		case seen[op]:
			errs.Add(Errorf(KeyOperations, "operation %q listed twice", op))
		}
		seen[op] = true
	}
	if c.Operations != nil && len(c.Operations) == 0 {
		errs.Add(Errorf(KeyOperations, "lists no operation (leave it out to run all)"))
	}
	const maxI = math.MaxInt32
	if c.TargetFileSizeBytes != nil && *c.TargetFileSizeBytes < 1 {
		errs.Add(Errorf(KeyTargetFileSizeBytes, "must be at least 1, got %d", *c.TargetFileSizeBytes))
	}
	checkIntRange(&errs, KeyMinInputFiles, c.MinInputFiles, 1, maxI)
	checkIntRange(&errs, KeyDeleteFileThreshold, c.DeleteFileThreshold, 1, maxI)
	checkIntRange(&errs, KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds, 0, maxI)
	checkIntRange(&errs, KeyRetainLast, c.RetainLast, 1, maxI)
	checkIntRange(&errs, KeyOrphanOlderThanSeconds, c.OrphanOlderThanSeconds, 0, maxI)
	for _, g := range []struct {
		op   string
		keys []string
		set  []bool
	}{
		{OpRewriteDataFiles, []string{KeyFilter, KeyTargetFileSizeBytes, KeyMinInputFiles, KeyDeleteFileThreshold, KeyRewriteAll},
			[]bool{c.Filter != "", c.TargetFileSizeBytes != nil, c.MinInputFiles != nil, c.DeleteFileThreshold != nil, c.RewriteAll}},
		{OpExpireSnapshots, []string{KeyExpireOlderThanSeconds, KeyRetainLast},
			[]bool{c.ExpireOlderThanSeconds != nil, c.RetainLast != nil}},
		{OpRemoveOrphanFiles, []string{KeyOrphanOlderThanSeconds, KeyDryRun}, []bool{c.OrphanOlderThanSeconds != nil, c.DryRun}},
	} {
		if c.Runs(g.op) {
			continue
		}
		for i, k := range g.keys {
			if g.set[i] {
				errs.Add(Errorf(k, "applies to operation %s, which %s does not list", g.op, KeyOperations))
			}
		}
	}
	return flatten(errs).Err()
}
