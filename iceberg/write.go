package iceberg

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

// WriteResult holds the outputs of Write.
type WriteResult struct {
	// Snapshots is a PCollection of SnapshotInfo, in the global window: one per
	// table and window (and per late pane).
	Snapshots beam.PCollection
	// DeadLetter is a PCollection of DeadLetter, in the windows of the input rows:
	// every row that was not written.
	DeadLetter beam.PCollection
}

// Write appends rows (a PCollection of Row or of one struct type) to the table named by
// cfg.Table, a name or a template such as "db.events_{region}" filled from each row.
// Missing tables are created from the rows' schema with partition_fields, sort_fields
// and table_properties (format-version 3 unless set). keep, drop or only project each
// row first (dotted paths name nested fields; only writes one struct field as the row).
// With distribution_mode=hash, rows are shuffled in Arrow record batches by table and
// partition so that each partition is written by one writer; otherwise each bundle
// writes its own files. Each table gets one commit per window (in batch, one commit),
// made exactly once per sink_id. Rows that cannot be written go to
// WriteResult.DeadLetter with the reason.
//
// With mode merge-on-read, each row is a change (change_type_column,
// sequence_number_column) applied per key (equality_columns) to the table: prior rows
// are deleted with deletion vectors (equality deletes on format-version 2) and new
// rows written, one commit per window. A change stream without before-images, such
// as Debezium's with "u" mapped to UPDATE_AFTER, needs upsert: true. Change envelopes
// such as Debezium's are written as they are: only names the row image (after),
// before_field the image of deletes (before), and the control columns may be dotted
// paths (source.lsn); tombstones are skipped and counted.
//
// Streaming: with triggering_frequency_seconds, rows go into fixed event-time windows
// of that length and each table gets one commit per window, in window order (a
// stateful commit step holds each window until the watermark passes its end). Rows
// arriving after their window was committed are committed in a late-pane commit of
// that window (which never moves the sink's token) when within
// allowed_lateness_seconds of the newest committed window, and otherwise go to
// WriteResult.DeadLetter; in merge-on-read mode a late change also goes there unless
// its sequence number is above all the sink has committed. token_heartbeat_seconds
// keeps the sink's token alive while idle; direct_write_byte_limit writes small
// bundles directly and shuffles large ones. A restart with the same sink_id that
// replays its source writes only what the earlier run did not commit (see the
// README's streaming counters). Input that is already in fixed windows keeps them
// (one commit per window); sliding windows and sessions are rejected.
//
// With evolve_schema, rows the table's schema cannot take evolve it instead (new
// optional columns, int to long, float to double, wider decimals, required to
// optional), in one conflict-safe schema commit per change; see the README's "Schema
// evolution".
//
// Write panics on a construction error; use TryWrite to get it.
func Write(s beam.Scope, cfg WriteConfig, rows beam.PCollection, opts ...WriteOption) WriteResult {
	return must(TryWrite(s, cfg, rows, opts...))
}

// TryWrite is Write returning an error instead of panicking: an invalid config, a
// setting this version does not support (wrapping ErrUnsupported), an unreachable
// catalog, or an existing table whose schema the rows' struct type cannot match.
//
// Construction reaches the catalog (to check an existing table against the rows'
// struct type; merge-on-read also creates a missing table for a struct type and
// takes equality_columns from an existing one) unless WithoutCatalogAtConstruction
// is given: then only the config and the input's type are checked, and a pipeline
// builds with no catalog credentials, for Dataflow's --dry_run or a CI job.
func TryWrite(s beam.Scope, cfg WriteConfig, rows beam.PCollection, opts ...WriteOption) (WriteResult, error) {
	cfg = cfg.With(opts...)
	if err := cfg.Validate(); err != nil {
		return WriteResult{}, err
	}
	warnBigQueryTypes(cfg, rows.Type().Type())
	if cfg.IsMergeOnRead() {
		return tryWriteMergeOnRead(s, cfg, rows)
	}
	if err := checkAppendSupport(cfg); err != nil {
		return WriteResult{}, err
	}
	tpl, err := write.ParseTemplate(cfg.Table)
	if err != nil {
		return WriteResult{}, err
	}
	spec, err := newSpec(cfg)
	if err != nil {
		return WriteResult{}, err
	}
	if err := checkStructLayout(cfg, spec, rows); err != nil {
		return WriteResult{}, err
	}
	ctx := context.Background()
	if cfg.NoCatalogAtConstruction {
		if err := catalogs.CheckLinked(cfg.CatalogName, cfg.CatalogProperties); err != nil {
			return WriteResult{}, config.WrapOp("write", cfg.Table, err)
		}
		return streamingWrite(s, cfg, spec.SinkID, rows, func(rows beam.PCollection) (beam.PCollection, beam.PCollection, error) {
			return write.Append(s, spec, rows)
		})
	}
	cat, err := catalogs.Get(ctx, cfg.CatalogName, cfg.CatalogProperties)
	if err != nil {
		return WriteResult{}, config.WrapOp("write", cfg.Table, err)
	}
	if tpl.IsStatic() {
		if err := checkExistingTable(ctx, cfg, &spec, rows); err != nil {
			return WriteResult{}, err
		}
	} else if _, err := cat.ListNamespaces(ctx, nil); err != nil {
		return WriteResult{}, config.OpErrorf("write", cfg.Table, "catalog unreachable: %w", err)
	}
	return streamingWrite(s, cfg, spec.SinkID, rows, func(rows beam.PCollection) (beam.PCollection, beam.PCollection, error) {
		return write.Append(s, spec, rows)
	})
}

// newSpec returns the write spec of cfg (valid) for its sink id, a fresh UUID when
// cfg has none.
func newSpec(cfg WriteConfig) (write.Spec, error) {
	sinkID := cfg.SinkID
	if sinkID == "" {
		sinkID = uuid.NewString()
	}
	spec, err := cfg.spec(sinkID)
	if err != nil {
		return write.Spec{}, config.WrapOp("write", cfg.Table, err)
	}
	return spec, nil
}

// streamingWrite runs build (either write mode) over rows in their commit windows
// (commitWindows), puts its dead letters back into the input's windows and adds the
// token heartbeat when token_heartbeat_seconds is set.
func streamingWrite(s beam.Scope, cfg WriteConfig, sinkID string, rows beam.PCollection,
	build func(beam.PCollection) (snaps, dead beam.PCollection, err error)) (WriteResult, error) {
	snaps, dead, err := build(commitWindows(s, cfg, rows))
	if err != nil {
		return WriteResult{}, err
	}
	res := writeResult(s, snaps, dead)
	res.DeadLetter = inputWindows(s, cfg, rows, res.DeadLetter)
	if err := addHeartbeat(s, cfg, sinkID); err != nil {
		return WriteResult{}, err
	}
	return res, nil
}

// checkAppendSupport rejects settings the append write does not implement yet, so
// that none is silently ignored.
func checkAppendSupport(cfg WriteConfig) error {
	var errs config.Errors
	if cfg.TokenHeartbeatSeconds != nil {
		if tpl, err := write.ParseTemplate(cfg.Table); err == nil && !tpl.IsStatic() {
			errs.Add(unsupported(config.KeyTokenHeartbeatSeconds, "token heartbeats need a single table, not a template"))
		}
	}
	refuseUnimplemented(&errs, cfg)
	return errs.Err()
}

// unsupported is the error for a key whose setting this version cannot honour.
func unsupported(key, why string) error {
	return &config.ConfigError{Key: key, Err: fmt.Errorf("%w: %s", ErrUnsupported, why)}
}

// refuseUnimplemented adds an error for each key that icebeam accepts for Dataflow
// config compatibility but does not implement (the side-input table cache, catalog
// pollers) when it is set to anything but the value that changes nothing.
func refuseUnimplemented(errs *config.Errors, cfg WriteConfig) {
	if cfg.UseSideInputTableCache {
		errs.Add(unsupported(config.KeyUseSideInputTableCache,
			"icebeam has no side-input table cache (each worker caches tables itself); the key is accepted for Dataflow config compatibility and only false works"))
	}
	if n := cfg.TableCachePollingBuckets; n != nil && *n != config.DefaultTableCachePollingBuckets {
		errs.Add(unsupported(config.KeyTableCachePollingBuckets, fmt.Sprintf(
			"icebeam has no catalog pollers: a worker reloads a table's metadata itself when its cache entry is older than %s; only %d is accepted",
			config.KeyTableCacheRefreshIntervalSeconds, config.DefaultTableCachePollingBuckets)))
	}
}

// addHeartbeat adds the token heartbeat of token_heartbeat_seconds, if set: a
// periodic impulse lasting as long as the pipeline whose ticks refresh the sink's
// token when it is older than the interval (see commit.RefreshToken).
func addHeartbeat(s beam.Scope, cfg WriteConfig, sinkID string) error {
	if cfg.TokenHeartbeatSeconds == nil {
		return nil
	}
	// Both modes have rejected templates with a heartbeat (checkAppendSupport,
	// checkMergeOnReadSupport) before building anything.
	spec, err := cfg.spec(sinkID)
	if err != nil {
		return err
	}
	interval := time.Duration(*cfg.TokenHeartbeatSeconds) * time.Second
	write.Heartbeat(s, spec, time.Now(), mtime.MaxTimestamp.ToTime(), interval)
	return nil
}

// inputWindows returns dead, windowed by commitWindows, back in the windows of the
// write's input rows (with the default trigger), so that it can be flattened with
// other outputs of the input's windowing.
func inputWindows(s beam.Scope, cfg WriteConfig, rows, dead beam.PCollection) beam.PCollection {
	if cfg.TriggeringFrequencySeconds == nil {
		return dead
	}
	return beam.WindowInto(s.Scope("DeadLetterWindows"), rows.WindowingStrategy().Fn, dead)
}

// runnerLatenessSlack is how much longer than allowed_lateness_seconds the runner keeps
// a window open: the late-row gate (write.LateGate) compares rows with the sink's
// newest committed window, which trails the watermark by the commit latency, so the
// runner must not drop a row the gate let through.
func runnerLatenessSlack(freq time.Duration) time.Duration {
	return max(10*freq, 10*time.Minute)
}

// commitWindows puts rows into the windows a streaming write commits: fixed event-time
// windows of triggering_frequency_seconds, fired when the watermark passes their end
// and again, for late rows, every triggering_frequency_seconds of processing time
// while the window accepts them. Without triggering_frequency_seconds rows keep their
// windows (one commit per window; the global window in batch).
func commitWindows(s beam.Scope, cfg WriteConfig, rows beam.PCollection) beam.PCollection {
	if cfg.TriggeringFrequencySeconds == nil {
		return rows
	}
	freq := time.Duration(*cfg.TriggeringFrequencySeconds) * time.Second
	return beam.WindowInto(s.Scope("CommitWindows"), window.NewFixedWindows(freq), rows,
		beam.Trigger(trigger.AfterEndOfWindow().LateFiring(trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(freq)))),
		beam.AllowedLateness(cfg.Lateness()+runnerLatenessSlack(freq)),
		beam.PanesDiscard())
}

// checkStructLayout checks partition_fields and sort_fields against the schema of the
// rows' struct type after keep, drop or only, the schema a missing table is created
// from, without the catalog. Row collections have no schema before run time, where a
// table their first row cannot create fails the job.
func checkStructLayout(cfg WriteConfig, spec write.Spec, rows beam.PCollection) error {
	if len(spec.PartitionFields) == 0 && len(spec.SortFields) == 0 {
		return nil
	}
	t := rows.Type().Type()
	if t == reflect.TypeFor[row.Row]() {
		return nil
	}
	sc, err := write.StructSchema(spec, t)
	if err != nil {
		return nil // not a struct the write takes: ToRows reports it
	}
	return config.WrapOp("write", cfg.Table, write.CheckLayout(spec, sc))
}

// checkExistingTable checks a static destination that already exists against the rows'
// struct type after keep, drop or only (Row collections are checked per row at run
// time), and sets spec's NanoTimes: the struct's time.Time fields that go to
// nanosecond columns.
func checkExistingTable(ctx context.Context, cfg WriteConfig, spec *write.Spec, rows beam.PCollection) error {
	tbl, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0)
	if errors.Is(err, config.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return config.WrapOp("write", cfg.Table, err)
	}
	t := rows.Type().Type()
	if t == reflect.TypeFor[row.Row]() {
		return nil
	}
	sc, err := write.StructSchema(*spec, t)
	if err != nil {
		return config.OpErrorf("write", cfg.Table, "%w: %w", ErrInvalidConfig, err)
	}
	spec.NanoTimes = row.NanoTimes("", sc, tbl.Schema())
	check := schema.CheckSchema
	if cfg.EvolveSchema {
		check = func(tbl, rows *ibg.Schema) error { return schema.CheckEvolvable(tbl, rows, nil) }
	}
	if err := check(tbl.Schema(), sc); err != nil {
		return config.OpErrorf("write", cfg.Table, "%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
