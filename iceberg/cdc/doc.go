// Package cdc is the library core of icebeam's merge-on-read CDC write: plain Go
// (no Beam, no package write) that turns change rows into what one RowDelta per
// table and window adds and removes. Package write's merge-on-read DoFns call it.
//
// The pieces, in pipeline order:
//
//   - [Envelope] finds what a change row carries: its change type (change_type_column,
//     change_type_map), its sequence number and its row image (the row, or with only
//     a record field such as a Debezium envelope's after, before_field for deletes);
//     control columns may be dotted paths, and tombstones are recognized
//     ([ErrTombstone]). [Parser] validates a change row (through its Envelope, then the
//     image against the table and the key columns), extracts its [Kind], sequence
//     number and key, and strips the control columns ([Change]). [Sharder] picks the
//     key's shard; [NewPacket] and [AppendChange] pack parsed changes per (window,
//     shard) for the shuffle, [ReadPacket] unpacks them.
//   - [Sorter] sorts one shard's changes by (key, sequence number, kind) with a
//     bounded amount of memory, spilling sorted runs to local temp files.
//   - [CollapseChecked] reduces each key's sorted changes to its net effect ([Net]):
//     whether the committed row must go and which row, if any, is written. It holds
//     back a key whose last sequence number carries two different after-images
//     ([Ambiguous]): their order, hence the key's final row, is unknown, so those
//     changes go to the dead letter output.
//   - [Resolve] turns keys whose committed row must go into row positions in the
//     table's data files ([Resolution]), planning with the key predicate and reading
//     only the key columns. Resolutions cross the shuffle as [EncodedResolution] and
//     merge with [MergeResolutions]. [Resolution.RowIDs] gives the resolved rows'
//     _row_id, which an update's new row keeps.
//   - [Deletes.Prepare], called by the committer on each attempt with the freshly
//     loaded table, brings the resolutions up to it (re-reading data files that
//     changed), merges positions per data file with the file's live deletion vector
//     ([MergeDVs]: never two live DVs) into new Puffin files, and returns the [Delta]:
//     DVs to add and the DVs they replace. With delete_format=equality it writes
//     key-only equality delete files instead ([ResolveFormat] picks the format).
//
// [ShardWindow] is the merge-on-read algorithm of one shard's window, from packets
// to new rows and resolved deletes: it skips replayed changes and dead-letters late
// ones it cannot apply ([Committed]), sorts, collapses, resolves, and gives updated
// rows the _row_id of the row they replace ([RowLineage]). Package write's shard
// DoFn wraps it: it finds what the sink has committed, writes the new rows and
// counts [ShardStats].
//
// Package write wires these into the pipeline and commits the Delta with the window's
// data files through its one committer (write.Committer.CommitChanges), exactly once
// per sink and window.
package cdc
