// Package row holds Row, the dynamic row type of icebeam, its deterministic Beam coder,
// conversions between Arrow record batches and rows or user structs, and the mapping of
// struct fields to Iceberg columns. Package iceberg re-exports Row.
package row
