// Package write holds the machinery of icebeam's append write: projection of rows
// (keep, drop, only), destinations and table creation, streaming of rows as Arrow
// batches (built by package row) to Parquet data files written without a commit, the
// Beam transforms (per-bundle writers, or a shuffle of packed rows by partition for
// distribution_mode=hash), and the per-table committer with its exactly-once tokens.
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
