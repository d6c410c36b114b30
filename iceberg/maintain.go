package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
	"github.com/icebeam/icebeam/iceberg/write"
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
	// Table is the table identifier, e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Operations lists the operations to run, in their fixed order
	// (OpRewriteDataFiles, OpExpireSnapshots, OpRemoveOrphanFiles); default all three.
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
	// OrphanOlderThanSeconds removes only orphan files older than this (default 3
	// days: younger files may belong to a commit in flight).
	OrphanOlderThanSeconds *int `managed:"orphan_older_than_seconds"`
	// DryRun lists orphan files without deleting them.
	DryRun bool `managed:"dry_run"`
}

func (c MaintainConfig) internal() config.MaintainConfig { return config.MaintainConfig(c) }

// Map returns the managed-style map of the keys set in c: the inverse of
// ParseMaintainConfig.
func (c MaintainConfig) Map() map[string]any { return c.internal().Map() }

// Validate reports every problem of c at once, each a *ConfigError naming its key.
func (c MaintainConfig) Validate() error { return c.internal().Validate() }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c MaintainConfig) String() string { return c.internal().String() }

// GoString returns c as %#v prints it, with secrets redacted.
func (c MaintainConfig) GoString() string { return c.internal().GoString() }

// Format prints c for every fmt verb with secrets redacted.
func (c MaintainConfig) Format(f fmt.State, verb rune) { c.internal().Format(f, verb) }

// MarshalJSON encodes c's fields with secrets redacted (for logs; use Map for a
// configuration that parses back).
func (c MaintainConfig) MarshalJSON() ([]byte, error) { return c.internal().MarshalJSON() }

// MaintainKeys returns the keys ParseMaintainConfig accepts, in MaintainConfig field
// order.
func MaintainKeys() []string { return config.MaintainKeys() }

// ParseMaintainConfig builds a MaintainConfig from a managed-style map and validates
// it (see ParseReadConfig).
func ParseMaintainConfig(m map[string]any) (MaintainConfig, error) {
	c, err := config.ParseMaintainConfig(m)
	return MaintainConfig(c), err
}

// ParseMaintainConfigJSON parses a JSON object of maintenance keys (see
// ParseMaintainConfig).
func ParseMaintainConfigJSON(b []byte) (MaintainConfig, error) {
	c, err := config.ParseMaintainConfigJSON(b)
	return MaintainConfig(c), err
}

// ParseMaintainConfigYAML parses a YAML mapping of maintenance keys (see
// ParseMaintainConfig).
func ParseMaintainConfigYAML(b []byte) (MaintainConfig, error) {
	c, err := config.ParseMaintainConfigYAML(b)
	return MaintainConfig(c), err
}

// MaintenanceReport is what one Maintain run did to its table.
type MaintenanceReport struct {
	// Table is the table ("db.table").
	Table string
	// Live files before and after the run (a deletion vector counts one delete file).
	DataFilesBefore, DeleteFilesBefore, DataFilesAfter, DeleteFilesAfter int64
	// Compaction: groups planned, committed, and given up because concurrent writers
	// kept changing their files' deletes (left for the next run); data files
	// replaced and written, delete files dropped with them, and their sizes.
	GroupsPlanned, GroupsCommitted, GroupsStale    int
	FilesRewritten, FilesAdded, DeleteFilesRemoved int
	BytesBefore, BytesAfter                        int64
	// Expiry: snapshots removed, and kept only for the sinks' newest tokens.
	SnapshotsExpired, SnapshotsPinned int
	// Orphans: the files found (removed unless DryRun) and their size.
	OrphanFiles    []string
	OrphanBytes    int64
	OrphansRemoved int
	DryRun         bool
}

func toMaintenanceReport(r write.MaintenanceReport) MaintenanceReport { return MaintenanceReport(r) }

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
		return beam.PCollection{}, fmt.Errorf("iceberg: maintain %s: %w", cfg.Table, err)
	}
	if cfg.Filter != "" {
		if _, err := read.ParseFilter(cfg.Filter, tbl.Schema()); err != nil {
			return beam.PCollection{}, &ConfigError{Key: KeyFilter, Err: err}
		}
	}
	spec := write.NewMaintainSpec(cfg.internal())
	return beam.ParDo(s.Scope("MaintenanceReport"), toMaintenanceReport, write.Maintain(s, spec)), nil
}

func init() {
	register.Function1x1(toMaintenanceReport)
}
