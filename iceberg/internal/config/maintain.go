package config

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
