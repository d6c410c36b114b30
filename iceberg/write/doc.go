// Package write is the Beam shape of icebeam's two write modes. The concerns below
// it are packages of their own, each depending only on those listed after it:
// [github.com/icebeam/icebeam/iceberg/write/maintain] (compaction, expiry, orphan
// files, manifest merges, the inline maintenance step),
// [github.com/icebeam/icebeam/iceberg/write/schema] (table creation, schema checks
// and evolution, projection), [github.com/icebeam/icebeam/iceberg/write/late] (the
// late gate and restarts' replayed rows), [github.com/icebeam/icebeam/iceberg/write/commit]
// (the one committer, its tokens and the heartbeat's token refresh) and
// [github.com/icebeam/icebeam/iceberg/write/datafile] (Parquet data files, and their
// form between stages).
//
// Append: projection of rows (keep, drop, only), destinations and table creation,
// streaming of rows as Arrow batches (built by package row) to Parquet data files
// written without a commit, by per-bundle writers or after a shuffle of Arrow record
// batches by partition (distribution_mode=hash); [AppendBatches] writes Arrow record
// batches the same way without rows. Merge-on-read ([MergeOnRead]): rows are parsed
// and packed per (window, shard), each shard sorts, collapses and resolves its keys
// with package cdc, and commitWindowChanges commits each window's data files and
// deletion vectors. Both modes end in the ordered commit step (arrivePane, firePanes),
// which commits windows oldest first and late panes as they come.
//
// Every catalog commit (the windows of commit.Committer.Commit, heartbeats, schema
// updates, manifest merges, compaction and expiry, each a named commit.Change) goes
// through one loop, commit.Committer.CommitTable: load, token check, conflict, retry
// and the lost-response check. Every window snapshot carries, in its summary, the
// sink's token (commit.SummarySinkID and commit.CommittedThroughKey); before committing a window the committer walks the branch's
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
//   - shard result (shardResult): what one merge-on-read shard hands to the commit
//     step for a window besides its new rows: the keys to delete resolved to
//     (data file, position) (DV mode; the commit step turns them into deletion
//     vectors) or kept as keys (equality mode), and the sequence numbers it saw.
//   - [Part]: what one writer or shard hands to the commit step for one table and
//     window: its uncommitted data files and, for merge-on-read, its shard result.
//   - [Pane]: all the parts of one table for one pane of one window, as the ordered
//     commit step holds them until the window's turn; it commits as one snapshot.
//   - window token: the snapshot summary keys that record which windows a sink id has
//     committed (commit.WindowRef, commit.CheckWindow).
//
// Package iceberg re-exports what users need; most code imports that package instead.
package write
