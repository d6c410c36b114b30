package read

import "github.com/apache/beam/sdks/v2/go/pkg/beam"

// metricsNamespace is the Beam metrics namespace of every icebeam counter:
// files_planned, bytes_planned, files_read, row_groups_read, rows_emitted, bytes_read,
// and for continuous reads snapshots_read (snapshots followed after the start) and
// snapshots_skipped (overwrite and delete snapshots a continuous Read does not read).
const metricsNamespace = "icebeam"

// The counters of the read DoFns, in metricsNamespace.
var (
	filesPlanned     = beam.NewCounter(metricsNamespace, "files_planned")
	bytesPlanned     = beam.NewCounter(metricsNamespace, "bytes_planned")
	filesRead        = beam.NewCounter(metricsNamespace, "files_read")
	rowGroupsRead    = beam.NewCounter(metricsNamespace, "row_groups_read")
	rowsEmitted      = beam.NewCounter(metricsNamespace, "rows_emitted")
	bytesRead        = beam.NewCounter(metricsNamespace, "bytes_read")
	snapshotsRead    = beam.NewCounter(metricsNamespace, "snapshots_read")
	snapshotsSkipped = beam.NewCounter(metricsNamespace, "snapshots_skipped")
)
