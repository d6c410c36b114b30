// Package datafile writes Arrow record batches to Parquet data files of a table
// without committing them ([Writer]), and gives data files the form in which they
// travel between Beam stages ([Encoded]).
package datafile
