package iceberg

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
)

// Read reads an Iceberg table: the rows of its current snapshot (or of the snapshot,
// time or branch the config names) that match cfg.Filter, with cfg.Keep / cfg.Drop
// applied, deletion vectors, position deletes and equality deletes applied. It emits
// Row values, or values of the struct type given with WithOutputType.
//
// With streaming (WithStreaming) the read is continuous and its output unbounded: an
// incremental read of the rows appended to main. It emits its start, then polls the
// table every poll_interval_seconds (default 60) and emits the rows each new append
// snapshot adds, snapshot by snapshot in commit order, with filter, keep and drop
// applied as in batch. The start is the current snapshot's rows (deletes applied;
// starting_strategy earliest, the default), nothing (latest), or the rows appended
// after from_snapshot or by the snapshots committed at or after from_timestamp. As in
// Beam Java's IcebergIO and Iceberg's incremental append scans, only append snapshots
// are read: a replace (compaction) changes no rows, and an overwrite or delete snapshot
// is skipped with a warning and counted in the icebeam snapshots_skipped counter, so
// rows it deletes or replaces stay in what was emitted; use ReadChanges to see deletes
// and updates. Each row is timestamped at the commit time of the snapshot that
// appended it (the start snapshot's for the start's rows) and the watermark follows,
// as described for ReadChanges; the output is in the global window. The read ends
// after to_snapshot, or with the last snapshot committed at or before to_timestamp
// (when main has a later snapshot, or at the first poll starting 5 s after it);
// without them it runs until the pipeline is drained or cancelled. snapshot_id,
// as_of_timestamp and branch do not apply to a continuous read, and the range keys
// (from_snapshot, to_snapshot, from_timestamp, to_timestamp, starting_strategy) and
// poll_interval_seconds only to one.
//
// Read loads the table at construction to validate the config against its schema,
// unless the schema is given up front with WithSchema (then it builds without the
// catalog, for Dataflow's --dry_run or a CI job, and checks the table when the job
// plans the scan). WithReadAfter makes it wait for other steps of the pipeline, such
// as the commits of a Write. Read panics on any problem. Use TryRead to get the error
// instead.
func Read(s beam.Scope, cfg ReadConfig, opts ...ReadOption) beam.PCollection {
	return must(TryRead(s, cfg, opts...))
}

// TryRead is Read returning an error instead of panicking. Every problem found at
// construction is reported at once: unknown or contradictory keys, unknown columns in
// keep, drop or filter, a malformed filter (with its position), a wrong literal type,
// a missing table or an unreachable catalog.
func TryRead(s beam.Scope, cfg ReadConfig, opts ...ReadOption) (beam.PCollection, error) {
	cfg = cfg.With(opts...)
	rs, err := resolveRead(cfg)
	if err != nil {
		return beam.PCollection{}, err
	}
	if cfg.OutputType != nil {
		if err := read.CheckOutputType(cfg.OutputType, rs.schema, rs.spec.Columns); err != nil {
			return beam.PCollection{}, err
		}
	}
	if !cfg.Streaming {
		return read.Scan(s, rs.spec, cfg.OutputType, cfg.After...), nil
	}
	return read.ScanStream(s, rs.appends, cfg.OutputType), nil
}

// resolvedRead is a read config checked against its table at construction.
type resolvedRead struct {
	schema  *ibg.Schema      // the table's current schema
	spec    read.Spec        // the scan (the start of a continuous read)
	appends read.AppendsSpec // a continuous read's range (only with Streaming)
}

// resolveRead validates cfg (with its options applied), loads the table and resolves
// the scan: what Read and ReadBatches share.
func resolveRead(cfg ReadConfig) (resolvedRead, error) {
	if err := cfg.Validate(); err != nil {
		return resolvedRead{}, err
	}
	asOf, err := cfg.AsOfMillis()
	if err != nil {
		return resolvedRead{}, err
	}
	opts := read.Options{
		Filter:     cfg.Filter,
		Keep:       cfg.Keep,
		Drop:       cfg.Drop,
		SnapshotID: cfg.SnapshotIDValue(),
		AsOfMs:     asOf,
		Branch:     cfg.Branch,
	}
	if cfg.Schema != nil { // given up front: no catalog at construction
		if err := catalogs.CheckLinked(cfg.CatalogName, cfg.CatalogProperties); err != nil {
			return resolvedRead{}, config.WrapOp("read", cfg.Table, err)
		}
		spec, err := read.ResolveSchema(cfg.CatalogName, cfg.CatalogProperties, cfg.Table, cfg.Schema, opts)
		if err != nil {
			return resolvedRead{}, err
		}
		return resolvedRead{schema: cfg.Schema, spec: spec}, nil
	}
	ctx := context.Background()
	tbl, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0)
	if err != nil {
		return resolvedRead{}, config.WrapOp("read", cfg.Table, err)
	}
	spec, err := read.Resolve(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, tbl, opts)
	if err != nil {
		return resolvedRead{}, err
	}
	rs := resolvedRead{schema: tbl.Schema(), spec: spec}
	if !cfg.Streaming {
		return rs, nil
	}
	rs.appends, err = read.ResolveAppends(tbl, spec, read.StreamOptions{
		PollSeconds:   int(cfg.PollInterval() / time.Second),
		FromSnapshot:  cfg.FromSnapshot,
		ToSnapshot:    cfg.ToSnapshot,
		FromTimestamp: cfg.FromTimestamp,
		ToTimestamp:   cfg.ToTimestamp,
		Latest:        cfg.Strategy() == StartLatest,
	})
	if err != nil {
		return resolvedRead{}, err
	}
	return rs, nil
}

// must returns v, or panics with err: the panicking form of a Try function.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
