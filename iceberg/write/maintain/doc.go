// Package maintain is table maintenance: compaction that folds deletes into
// rewritten files and keeps the sinks' deletes ([CompactGroup]), snapshot expiry that
// keeps the sinks' tokens ([ExpireSnapshots]), orphan file removal, the merge of a
// merge-on-read table's data manifests ([MergeManifests]), as plain Go, and their
// Beam shape: [Maintain] (the batch transform) and [AfterCommits] (the inline step
// after a write's commits). Every commit is a commit.Change (rewrite, expiry,
// manifestMerge) run by commit.Committer.CommitTable.
package maintain
