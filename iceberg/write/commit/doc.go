// Package commit makes every catalog commit of icebeam: [Committer.CommitTable] is
// the one loop of load, token check, staging, commit and retry (conflicts, lost
// responses), and each kind of commit is a named [Change] it runs: the window commit
// of a sink ([Committer.Commit]; a late pane is a window commit with a LateID, and a
// merge-on-read window adds its [Deletes]), the heartbeat ([RefreshToken]), the key
// index file's update ([Committer.AttachKeyIndex]), and, in their packages, the
// schema evolution (package schema) and the rewrite, expiry and manifest merge
// (package maintain).
//
// Its tokens (token.go) are the snapshot summary keys with which a sink records the
// windows it committed ([SummarySinkID], [CommittedThroughKey], runs, late panes,
// content ids): [CheckWindow] tells whether a branch holds a window and which token
// properties its commit carries, so that a retried bundle, a lost response or a
// rerun with the same sink id never commits twice. It imports neither package write
// nor cdc.
package commit
