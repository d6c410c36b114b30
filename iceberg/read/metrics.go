package read

// metricsNamespace is the Beam metrics namespace of every icebeam counter:
// files_planned, bytes_planned, files_read, row_groups_read, rows_emitted, bytes_read,
// and for continuous reads snapshots_read (snapshots followed after the start) and
// snapshots_skipped (overwrite and delete snapshots a continuous Read does not read).
const metricsNamespace = "icebeam"
