package cdc

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write"
)

var rowType = reflect.TypeFor[row.Row]()

// MergeOnRead adds the merge-on-read write of change rows (a PCollection of row.Row
// or of one struct type, carrying the control columns) to s. Call PrepareTable on
// spec first. The pipeline:
//
//  1. Parse (parseFn): each row is validated (rejects go to the dead letter output
//     with the reason) and parsed; its key picks a shard (Sharder); parsed changes
//     travel in packets per (window, shard), not one element per row.
//  2. GroupByKey per shard and window, then per shard (shardFn): sort by (key,
//     sequence number, kind) within sorter_memory_mb, collapse each key to its net
//     effect, write new rows to data files, and resolve the keys to delete to row
//     positions (DV mode) or keep them as keys (equality mode).
//  3. GroupByKey by table in the global window, then commitFn commits each window,
//     oldest first, as one RowDelta through the Committer, exactly once per sink id
//     and window.
//
// It returns the PCollection of write.SnapshotInfo (one per table and window) and the
// PCollection of write.DeadLetter. Windows commit in order, in batch and streaming
// (see write.OrderPanes); late changes and restarts are handled as write.LateGate
// and shardFn describe.
func MergeOnRead(s beam.Scope, spec Spec, rows beam.PCollection) (snapshots, dead beam.PCollection, err error) {
	s = s.Scope("iceberg.MergeOnRead")
	fail := func(err error) (beam.PCollection, beam.PCollection, error) {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if _, err := spec.env(); err != nil {
		return fail(err)
	}
	if len(spec.EqualityColumns) == 0 {
		return fail(config.Errorf(config.KeyEqualityColumns, "merge-on-read needs at least one equality column"))
	}
	if spec.NumShards < 1 {
		return fail(config.Errorf(config.KeyNumShards, "must be at least 1, got %d", spec.NumShards))
	}
	if err := write.CheckWindows(spec.Table, rows); err != nil {
		return fail(err)
	}
	rows, structDead, err := write.ToRows(s, spec.Table, rows)
	if err != nil {
		return fail(err)
	}
	var deads []beam.PCollection
	if structDead.IsValid() {
		deads = append(deads, structDead)
	}
	outs, err := beam.TryParDo(s.Scope("Parse"), &parseFn{Spec: spec}, rows)
	if err != nil {
		return fail(err)
	}
	deads = append(deads, outs[1])
	shards := beam.GroupByKey(s.Scope("GroupByShard"), write.Rewindow(s, rows, outs[0]))
	results, err := beam.TryParDo(s.Scope("Shard"), &shardFn{Spec: spec}, shards)
	if err != nil {
		return fail(err)
	}
	deads = append(deads, results[1])
	commits, err := beam.TryParDo(s.Scope("Commit"), newCommitFn(spec), write.OrderPanes(s, results[0]))
	if err != nil {
		return fail(err)
	}
	dead = deads[0]
	if len(deads) > 1 {
		dead = beam.Flatten(s.Scope("DeadLetters"), deads...)
	}
	return commits[0], dead, nil
}
