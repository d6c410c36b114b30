package iceberg

import (
	"context"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// Maintenance operations, the values of the operations key, in the order Maintain
// runs them.
const (
	// OpRewriteDataFiles compacts data files, folding their deletes in.
	OpRewriteDataFiles = config.OpRewriteDataFiles
	// OpExpireSnapshots expires old snapshots, keeping the sinks' newest tokens.
	OpExpireSnapshots = config.OpExpireSnapshots
	// OpRemoveOrphanFiles removes files no metadata references.
	OpRemoveOrphanFiles = config.OpRemoveOrphanFiles
)

// MaintainConfig configures Maintain: compaction of a table's data files with their
// deletes folded in, snapshot expiry and orphan file removal. Each field is tagged
// with its managed key; the zero value of a field means "not set".
type MaintainConfig struct {
	// Table is the table identifier (`db.table`), e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table; every worker must use the
	// same name. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties are the properties that build the catalog: `type` (`sql`, `rest`,
	// `hadoop`, `glue`, `hive`), `uri`, `warehouse`, storage settings. A property the
	// catalog type does not read is an error naming the closest one (see Catalogs in the
	// README). Values of secret keys (see [IsSecretKey]) are never logged or put in
	// errors. Required (`type`).
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop configuration properties. Not used by icebeam: any entry
	// is rejected with [ErrUnsupported] (put storage settings in `catalog_properties`).
	ConfigProperties map[string]string `managed:"config_properties"`
	// Operations lists the operations Maintain runs, in this fixed order:
	// `rewrite_data_files` ([OpRewriteDataFiles]), `expire_snapshots`
	// ([OpExpireSnapshots]), `remove_orphan_files` ([OpRemoveOrphanFiles]). icebeam key.
	// Default: all three.
	Operations []string `managed:"operations"`
	// Filter is a SQL predicate (Calcite syntax): compaction rewrites only the data files
	// that may hold matching rows (whole files; filter on partition columns to pick
	// partitions).
	Filter string `managed:"filter"`
	// TargetFileSizeBytes is the size of the files compaction writes; files under 75% of
	// it are compacted. icebeam key. Default: the table's `write.target-file-size-bytes`
	// (512 MiB when unset).
	TargetFileSizeBytes *int64 `managed:"target_file_size_bytes"`
	// MinInputFiles is how many files of one partition make a bin worth rewriting for
	// their size alone (a bin is also rewritten when it reaches the target size, or holds
	// a delete-heavy file). icebeam key. Default: `5`.
	MinInputFiles *int `managed:"min_input_files"`
	// DeleteFileThreshold rewrites any data file with at least this many delete files (a
	// deletion vector counts one; `1` folds every DV). Unset, a file is rewritten for its
	// deletes when they cover 30% of its rows. icebeam key. Default: unset.
	DeleteFileThreshold *int `managed:"delete_file_threshold"`
	// RewriteAll rewrites every selected data file, whatever its size and deletes. icebeam
	// key. Default: `false`.
	RewriteAll bool `managed:"rewrite_all"`
	// ExpireOlderThanSeconds expires snapshots older than this (beyond `retain_last`),
	// keeping each recent sink's newest exactly-once token. icebeam key. Default: the
	// table's `history.expire.max-snapshot-age-ms` (5 days when unset).
	ExpireOlderThanSeconds *int `managed:"expire_older_than_seconds"`
	// RetainLast keeps at least this many snapshots of each branch, whatever their age.
	// icebeam key. Default: the table's `history.expire.min-snapshots-to-keep` (1 when
	// unset).
	RetainLast *int `managed:"retain_last"`
	// OrphanOlderThanSeconds makes `remove_orphan_files` delete only unreferenced files
	// older than this: younger ones may belong to a commit in flight. icebeam key.
	// Default: `259200` (3 days).
	OrphanOlderThanSeconds *int `managed:"orphan_older_than_seconds"`
	// DryRun makes `remove_orphan_files` list the orphan files in the report without
	// deleting them. icebeam key. Default: `false`.
	DryRun bool `managed:"dry_run"`
}

// Map returns the managed-style map of the keys set in c: the inverse of
// ParseMaintainConfig.
func (c MaintainConfig) Map() map[string]any { return maintainSchema.Encode(reflect.ValueOf(c)) }

// runs reports whether c runs operation op.
func (c MaintainConfig) runs(op string) bool {
	return len(c.Operations) == 0 || slices.Contains(c.Operations, op)
}

// Validate reports every problem of c at once, each a *ConfigError naming its key.
func (c MaintainConfig) Validate() error {
	var errs config.Errors
	config.CheckCommon(&errs, c.Table, c.CatalogName, c.CatalogProperties, c.ConfigProperties)
	if strings.ContainsAny(c.Table, "{}") {
		errs.Add(config.Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	seen := map[string]bool{}
	for _, op := range c.Operations {
		switch {
		case !slices.Contains(config.MaintenanceOperations, op):
			errs.Add(config.Errorf(KeyOperations, "unknown operation %q (want some of %s)", op, strings.Join(config.MaintenanceOperations, ", ")))
		case seen[op]:
			errs.Add(config.Errorf(KeyOperations, "operation %q listed twice", op))
		}
		seen[op] = true
	}
	if c.Operations != nil && len(c.Operations) == 0 {
		errs.Add(config.Errorf(KeyOperations, "lists no operation (leave it out to run all)"))
	}
	const maxI = math.MaxInt32
	if c.TargetFileSizeBytes != nil && *c.TargetFileSizeBytes < 1 {
		errs.Add(config.Errorf(KeyTargetFileSizeBytes, "must be at least 1, got %d", *c.TargetFileSizeBytes))
	}
	config.CheckIntRange(&errs, KeyMinInputFiles, c.MinInputFiles, 1, maxI)
	config.CheckIntRange(&errs, KeyDeleteFileThreshold, c.DeleteFileThreshold, 1, maxI)
	config.CheckIntRange(&errs, KeyExpireOlderThanSeconds, c.ExpireOlderThanSeconds, 0, maxI)
	config.CheckIntRange(&errs, KeyRetainLast, c.RetainLast, 1, maxI)
	config.CheckIntRange(&errs, KeyOrphanOlderThanSeconds, c.OrphanOlderThanSeconds, 0, maxI)
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
		if c.runs(g.op) {
			continue
		}
		for i, k := range g.keys {
			if g.set[i] {
				errs.Add(config.Errorf(k, "applies to operation %s, which %s does not list", g.op, KeyOperations))
			}
		}
	}
	return config.Flatten(errs).Err()
}

// spec is the plan of Maintain's DoFns for c (which must be valid).
func (c MaintainConfig) spec() maintain.Spec {
	s := maintain.Spec{Table: c.Table, CatalogName: c.CatalogName, CatalogProps: maps.Clone(c.CatalogProperties),
		Compact: c.runs(OpRewriteDataFiles), Expire: c.runs(OpExpireSnapshots),
		Orphans: c.runs(OpRemoveOrphanFiles), Filter: c.Filter,
		OrphanOlderThan: config.DefaultOrphanOlderThanSeconds * time.Second, DryRun: c.DryRun,
		Expiry: maintain.NewExpireOptions(c.ExpireOlderThanSeconds, c.RetainLast)}
	if c.OrphanOlderThanSeconds != nil {
		s.OrphanOlderThan = time.Duration(*c.OrphanOlderThanSeconds) * time.Second
	}
	s.Compaction.RewriteAll = c.RewriteAll
	if c.TargetFileSizeBytes != nil {
		s.Compaction.TargetFileSize = *c.TargetFileSizeBytes
	}
	if c.MinInputFiles != nil {
		s.Compaction.MinInputFiles = *c.MinInputFiles
	}
	if c.DeleteFileThreshold != nil {
		s.Compaction.DeleteFileThreshold = *c.DeleteFileThreshold
	}
	return s
}

// MaintainKeys returns the keys ParseMaintainConfig accepts, in MaintainConfig field
// order.
func MaintainKeys() []string { return maintainSchema.Keys() }

// ParseMaintainConfig builds a MaintainConfig from a managed-style map and validates
// it (see ParseReadConfig).
func ParseMaintainConfig(m map[string]any) (MaintainConfig, error) {
	return config.Parse[MaintainConfig](maintainSchema, m, writeSchema)
}

// ParseMaintainConfigJSON parses a JSON object of maintenance keys (see
// ParseMaintainConfig).
func ParseMaintainConfigJSON(b []byte) (MaintainConfig, error) {
	return config.ParseDoc(b, config.DecodeJSON, ParseMaintainConfig)
}

// ParseMaintainConfigYAML parses a YAML mapping of maintenance keys (see
// ParseMaintainConfig).
func ParseMaintainConfigYAML(b []byte) (MaintainConfig, error) {
	return config.ParseDoc(b, config.DecodeYAML, ParseMaintainConfig)
}

// Maintain maintains one table and returns a PCollection with one MaintenanceReport.
// In order, each operation Operations lists (all by default):
//
//   - rewrite_data_files: data files smaller than 75% of the target size, and files
//     whose deletes cover 30% of their rows (or that have DeleteFileThreshold delete
//     files), are bin-packed per partition (iceberg-go's planner) and rewritten with
//     their deletes applied, so the new files carry none. Groups are rewritten in
//     parallel across workers and each commits on its own (partial progress). A
//     group whose files get new deletes from a concurrent writer meanwhile is
//     rewritten again from the new state (a delete is never lost and a row never
//     comes back), and given up after three tries.
//   - expire_snapshots: removes the snapshots iceberg-go's ExpireSnapshots would
//     (ExpireOlderThanSeconds, RetainLast, or the table's history.expire.*
//     properties), except that the snapshot holding the newest exactly-once token of
//     each sink that committed in the last 7 days stays (not the snapshots after it:
//     the expiry records the token snapshot in a table property, and the sink finds it
//     across the gap): a sink restarted after expiry still finds its token (an older
//     sink's rerun still skips its windows through the table property every commit
//     keeps). Files only the expired snapshots referenced are deleted.
//   - remove_orphan_files: deletes files under the table location that no metadata
//     references and that are older than OrphanOlderThanSeconds (only lists them
//     with DryRun).
//
// Maintain panics on a problem found at construction (bad keys, a missing table, a
// filter naming unknown columns); use TryMaintain to get the error instead.
func Maintain(s beam.Scope, cfg MaintainConfig) beam.PCollection {
	return must(TryMaintain(s, cfg))
}

// TryMaintain is Maintain returning an error instead of panicking.
func TryMaintain(s beam.Scope, cfg MaintainConfig) (beam.PCollection, error) {
	if err := cfg.Validate(); err != nil {
		return beam.PCollection{}, err
	}
	ctx := context.Background()
	tbl, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0)
	if err != nil {
		return beam.PCollection{}, config.WrapOp("maintain", cfg.Table, err)
	}
	if cfg.Filter != "" {
		if _, err := read.ParseFilter(cfg.Filter, tbl.Schema()); err != nil {
			return beam.PCollection{}, &ConfigError{Key: KeyFilter, Err: err}
		}
	}
	reports := maintain.Maintain(s, cfg.spec())
	return beam.ParDo(s.Scope("iceberg.MaintenanceReport"), &maintenanceReportFn{}, reports), nil
}
