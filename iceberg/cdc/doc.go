// Package cdc is the library core of icebeam's merge-on-read CDC write: plain Go
// pieces, called from the Beam DoFns of the write transform, that turn change rows
// into one RowDelta per table and window.
//
// The pieces, in pipeline order:
//
//   - [Parser] validates a change row (change type through change_type_column and
//     change_type_map, sequence number, key columns), extracts its [Kind], sequence
//     number and key, and strips the control columns ([Change]). [Shard] picks the
//     key's shard.
//   - [Sorter] sorts one shard's changes by (key, sequence number, kind) with a
//     bounded amount of memory, spilling sorted runs to local temp files.
//   - [Collapse] reduces each key's sorted changes to its net effect ([Net]):
//     whether the committed row must go and which row, if any, is written.
//     [CollapseChecked] also holds back a key whose last sequence number carries two
//     different after-images ([Ambiguous]): their order, hence the key's final row,
//     is unknown, so those changes go to the dead letter output.
//   - [Resolve] turns keys whose committed row must go into row positions in the
//     table's data files ([Resolution]), planning with the key predicate and reading
//     only the key columns.
//   - [Commit] merges positions per data file with the file's live deletion vector,
//     writes Puffin files and commits one RowDelta with the new data files, the new
//     DVs and the removal of the DVs they replace, exactly once per sink and
//     window, re-resolving keys whose data files changed concurrently. With
//     delete_format=equality it writes key-only equality delete files instead.
//
// [MergeOnRead] wires them into a Beam pipeline (iceberg.Write with mode
// merge-on-read calls it after [PrepareTable]): a parsing DoFn packs changes per
// (window, shard) into packets, a GroupByKey brings each shard's packets to one
// DoFn that sorts, collapses, writes data files and resolves keys (results cross the
// shuffle as [EncodedResolution]), and a GroupByKey by table brings every shard's
// results to the commit DoFn, which merges them ([MergeResolutions]) and commits
// each window, oldest first.
package cdc
