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
// deletion vectors. Both modes end in the ordered commit step ([arrivePane], [firePanes]),
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
// Words this package uses:
//
//   - packet: encoded rows (or parsed changes) travelling together through a shuffle,
//     one element per (window, shard or partition) rather than one per row; a
//     merge-on-read packet carries the id of the schema its changes were encoded
//     with.
//   - shard: a slice of a table's key space (merge-on-read, num_shards and
//     shards_per_partition; cdc.Sharder) or of its partitions (append with
//     distribution_mode=hash); one worker handles a shard's window at a time.
//   - shard result ([shardResult]): what one merge-on-read shard hands to the commit
//     step for a window besides its new rows: the keys to delete resolved to
//     (data file, position) (DV mode; the commit step turns them into deletion
//     vectors) or kept as keys (equality mode), and the sequence numbers it saw.
//   - [Part]: what one writer or shard hands to the commit step for one table and
//     window: its uncommitted data files and, for merge-on-read, its shard result.
//   - [Pane]: all the parts of one table for one pane of one window, as the ordered
//     commit step holds them until the window's turn; it commits as one snapshot.
//   - window token: the snapshot summary keys that record which windows a sink id has
//     committed ([WindowRef], [CheckWindow]).
//
// Package iceberg re-exports what users need; most code imports that package instead.
package write
