package write

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/keyjoin"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// MergeOnRead adds the merge-on-read write of change rows (a PCollection of row.Row
// or of one struct type, carrying the control columns) to s. Call PrepareTable on
// spec first. The pipeline:
//
//  1. Parse (changeParseFn, which also turns structs into Rows): each row is
//     validated (rejects go to the dead letter output with the reason; tombstones
//     are skipped and counted) and parsed, its row image
//     taken from the change envelope (cdc.Envelope) and projected by keep or drop;
//     its key picks a shard (cdc.Sharder); parsed changes
//     travel in packets per (window, shard), not one element per row.
//     A batch pipeline in the global window (DV mode) also resolves every
//     parsed key with one read of each candidate data file's key columns,
//     spread over the workers: the key join (package keyjoin), whose results
//     join the packets as join packets of their keys' shards.
//  2. GroupByKey per shard and window, then per shard (changeShardFn, which runs
//     cdc.ShardWindow): sort by (key, sequence number, kind) within
//     sorter_memory_mb, collapse each key to its net effect, pack new rows, and
//     resolve the keys to delete to row positions (DV mode: from the key join's
//     hits, or through the worker's cdc.KeyIndex) or keep them as keys
//     (equality mode). In DV mode on format version 3 the new rows that replace
//     a committed row wait until the keys are resolved and keep that row's
//     _row_id (row lineage, see cdc.RowLineage and cdc.ShardOutput.Update).
//  3. GroupByKey by table per window, then morWriteFn writes the new rows of a
//     pane, from every shard, to as few data files as their size and partitions
//     need (a shard with more than shardRowsToWriters of new rows writes the rest
//     itself), and passes on the shards' results with those files, in one pane.
//  4. GroupByKey by table in the global window, then commitFn commits each window,
//     oldest first, as one RowDelta through the Committer, exactly once per sink id
//     and window.
//
// It returns the PCollection of SnapshotInfo (one per table and window) and the
// PCollection of DeadLetter. Windows commit in order, in batch and streaming
// (see orderPanes); late changes and restarts are handled as late.Gate
// and changeShardFn describe.
func MergeOnRead(s beam.Scope, spec Spec, rows beam.PCollection) (snapshots, dead beam.PCollection, err error) {
	s = s.Scope("iceberg.MergeOnRead")
	fail := func(err error) (beam.PCollection, beam.PCollection, error) {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if _, err := spec.runtime(); err != nil {
		return fail(err)
	}
	if len(spec.EqualityColumns) == 0 {
		return fail(config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column"))
	}
	if spec.NumShards < 1 {
		return fail(config.Errorf(config.KeyNumShards, "must be at least 1, got %d", spec.NumShards))
	}
	if err := checkWindows(spec.Table, rows); err != nil {
		return fail(err)
	}
	// Structs become Rows inside changeParseFn.
	if rows.Type().Type() != rowType {
		if err := checkStructs(spec.Table, rows); err != nil {
			return fail(err)
		}
	}
	// A batch in the global window resolves its keys by the key join; a windowed
	// write by each worker's key index.
	join := !spec.Windowed && rows.WindowingStrategy().Fn.Kind == window.GlobalWindows && spec.KeyIndexMemoryMB > 0
	outs, err := beam.TryParDo(s.Scope("ParseChangesIntoShardPackets"), &changeParseFn{Spec: spec, Join: join}, rows)
	if err != nil {
		return fail(err)
	}
	deads := []beam.PCollection{outs[1]}
	packets := outs[0]
	if join {
		rt, _ := spec.runtime()
		hits := keyjoin.Resolve(s, keyjoin.Config{Catalog: spec.CatalogName, CatalogProps: spec.CatalogProps, Table: spec.Table,
			Refresh: rt.refresh, DeleteFormat: spec.DeleteFormat, Resolver: spec.resolver()}, packets)
		packets = beam.Flatten(s.Scope("ChangesAndKeyHits"), packets, hits)
	}
	shards := beam.GroupByKey(s.Scope("GroupPacketsByShard"), rewindow(s, rows, packets))
	results, err := beam.TryParDo(s.Scope("CollapseAndResolveShardKeys"), &changeShardFn{Spec: spec}, shards)
	if err != nil {
		return fail(err)
	}
	deads = append(deads, results[1])
	written, err := beam.TryParDo(s.Scope("WriteNewRowsToFiles"), &morWriteFn{Spec: spec}, beam.GroupByKey(s.Scope("GroupShardResultsByTable"), results[0]))
	if err != nil {
		return fail(err)
	}
	deads = append(deads, written[1])
	commits, err := beam.TryParDo(s.Scope("CommitWindowsInOrder"), newCommitFn(spec), orderPanes(s, written[0]))
	if err != nil {
		return fail(err)
	}
	dead = deads[0]
	if len(deads) > 1 {
		dead = beam.Flatten(s.Scope("DeadLetters"), deads...)
	}
	maintain.AfterCommits(s, spec.inlineMaintenance(), commits[0])
	return commits[0], dead, nil
}
