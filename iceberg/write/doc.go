// Package write holds the machinery of icebeam's append write: conversion of rows to
// Arrow batches, Parquet data files written without a commit, destinations and table
// creation, the Beam transforms, and the per-table committer with its exactly-once
// tokens.
//
// Nothing in this package commits a snapshot except [Committer.Commit]. Every snapshot
// it makes carries, in its summary, the sink's token ([SummarySinkID] and
// [CommittedThroughKey]); before committing a window the committer walks the branch's
// ancestry for the sink's newest token and skips a window already committed, so a
// retried bundle, a lost commit response or a rerun with the same sink id never commits
// twice.
//
// Package iceberg re-exports what users need; most code imports that package instead.
package write
