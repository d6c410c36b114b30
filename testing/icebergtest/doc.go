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
// The fixtures and checks use iceberg-go only, never the connector they
// test, so a bug in the connector cannot hide itself in them. The package
// does import icebeam's sql catalog and gs:// storage packages, for their
// registration alone, so that the fixture catalogs' Props open through
// icebeam as they are.
//
// Helpers that take a testing.TB fail the test on error; the ones without
// (such as [NewLocalCatalogAt] and [CheckTable]) return errors instead and
// can be used in examples, benchmarks and tools.
package icebergtest
