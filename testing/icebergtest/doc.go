// Package icebergtest holds fixtures and checks for tests of icebeam and of
// pipelines that use it: an embedded SQLite catalog with a local warehouse
// ([NewLocalCatalog]), an in-process fake GCS server ([NewFakeGCS]), helpers
// that create tables, append rows and write deletes directly through
// iceberg-go ([CreateTable], [AppendRecords], [DeleteRowsDV],
// [DeletePositionsV2], [DeleteEquality]), a reference read through
// iceberg-go's own scan ([ReadAll]), an order-insensitive comparison of
// results ([EqualRows]) and a checker of table invariants ([CheckTable],
// [RequireValid]) such as "at most one live deletion vector per data file".
//
// The package depends on iceberg-go only, never on the connector it tests,
// so a bug in the connector cannot hide itself in the fixtures.
//
// Helpers that take a testing.TB fail the test on error; the ones without
// (such as [NewLocalCatalogAt] and [CheckTable]) return errors instead and
// can be used in examples, benchmarks and tools.
package icebergtest
