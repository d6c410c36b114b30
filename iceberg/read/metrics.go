package read

// metricsNamespace is the Beam metrics namespace of every icebeam counter:
// files_planned, bytes_planned, files_read, row_groups_read, rows_emitted, bytes_read.
const metricsNamespace = "icebeam"
