// Package write is the Beam shape of icebeam's two write modes, and the one
// committer they share.
//
// Append: projection of rows (keep, drop, only), destinations and table creation,
// streaming of rows as Arrow batches (built by package row) to Parquet data files
// written without a commit, by per-bundle writers or after a shuffle of Arrow record
// batches by partition (distribution_mode=hash); [AppendBatches] writes Arrow record
// batches the same way without rows. Merge-on-read ([MergeOnRead]): rows are parsed
// and packed per (window, shard), each shard sorts, collapses and resolves its keys
// with package cdc, and [Committer.CommitChanges] commits each window's data files and
// deletion vectors. Both modes end in the ordered commit step ([Arrive], [Fire]),
// which commits windows oldest first and late panes as they come.
//
// Every catalog commit of this package (the windows of [Committer.Commit], heartbeats,
// schema updates, manifest merges, compaction and expiry) goes through one loop of
// the Committer: load, token check, conflict, retry and the lost-response check. Every
// window snapshot carries, in its summary, the sink's token ([SummarySinkID] and
// [CommittedThroughKey]); before committing a window the committer walks the branch's
// ancestry for the sink's newest token and skips a window already committed, so a
// retried bundle, a lost commit response or a rerun with the same sink id never commits
// twice.
//
// Package iceberg re-exports what users need; most code imports that package instead.
package write
