// Package interop holds icebeam's cross-engine checks: tables written by
// other engines (Spark with Iceberg's Java library) are read by icebeam, and
// tables written from Go are read by Spark SQL, PyIceberg and DuckDB, all
// through one shared SQLite SQL catalog named "local"; plus PostgreSQL and
// Java REST catalog round trips.
//
// The tests are behind the build tag "interop" and need the engines that
// run.sh installs into testing/interop/.deps/; run them with `make interop`
// (or `make test`, which includes them). See README.md in this folder.
//
// Every writer (a Go test per writer, a Python script for Spark) describes
// its tables in an expected-results JSON file ([Expected]); every reader
// checks every table against it and records [Result]s; report.py prints the
// engine x scenario table and fails on any disagreement.
package interop
