package iceberg

import (
	"context"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/read"
)

// StartingStrategy is where a changelog read without from_snapshot or from_timestamp
// starts (the starting_strategy key).
type StartingStrategy = config.StartingStrategy

// Starting strategies.
const (
	// StartEarliest reads the whole history of the end snapshot. The default.
	StartEarliest = config.StartEarliest
	// StartLatest reads only the changes the end snapshot itself committed.
	StartLatest = config.StartLatest
)

// Columns ReadChanges adds to every row, after the table's columns. They are the
// columns a merge-on-read Write of the rows expects: change_type_column
// ChangeTypeColumn and the default sequence_number_column.
const (
	// ChangeTypeColumn holds the change: INSERT, DELETE, UPDATE_BEFORE or UPDATE_AFTER.
	ChangeTypeColumn = read.ChangeTypeColumn
	// CommitSnapshotIDColumn holds the id (long) of the snapshot that committed the change.
	CommitSnapshotIDColumn = read.CommitSnapshotIDColumn
	// CommitSequenceNumberColumn holds that snapshot's sequence number (long).
	CommitSequenceNumberColumn = read.CommitSequenceNumberColumn
)

// ChangesKeys returns the keys ParseChangesConfig accepts, in ChangesConfig field order.
func ChangesKeys() []string { return changesSchema.Keys() }

// ParseChangesConfig builds a ChangesConfig from a managed-style map and validates it
// (see ParseReadConfig).
func ParseChangesConfig(m map[string]any) (ChangesConfig, error) {
	return config.Parse[ChangesConfig](changesSchema, m, readSchema)
}

// ParseChangesConfigJSON parses a JSON object of changelog keys (see ParseChangesConfig).
func ParseChangesConfigJSON(b []byte) (ChangesConfig, error) {
	return config.ParseDoc(b, config.DecodeJSON, ParseChangesConfig)
}

// ParseChangesConfigYAML parses a YAML mapping of changelog keys (see ParseChangesConfig).
func ParseChangesConfigYAML(b []byte) (ChangesConfig, error) {
	return config.ParseDoc(b, config.DecodeYAML, ParseChangesConfig)
}

// ReadChanges reads the changelog of an Iceberg table: in batch, the rows changed by
// the snapshots after from_snapshot (exclusive) up to to_snapshot (inclusive; by
// default the current snapshot), or the range given by from_timestamp, to_timestamp
// or starting_strategy. It emits a Row per changed row: the table's columns (keep /
// drop applied), then ChangeTypeColumn (INSERT for appended rows, DELETE for rows
// removed by deletion vectors, position or equality deletes or with their data file),
// CommitSnapshotIDColumn and CommitSequenceNumberColumn. On a table with identifier
// fields, a DELETE and an INSERT of one key in one snapshot become UPDATE_BEFORE and
// UPDATE_AFTER, and an identical DELETE and INSERT cancel out. Replace snapshots
// (compactions) change no rows and add nothing.
//
// The snapshot range is pinned at construction. Rows removed by row-level deletes are
// found through row lineage (_row_id), so that part needs a format-version 3 table.
//
// With streaming (WithChangesStreaming) the read is continuous and its output
// unbounded: it emits the range above (by default up to the current snapshot), then
// polls the table every poll_interval_seconds (default 60) and emits the changes of
// each new snapshot on main, one snapshot at a time in commit order, with the same
// columns and the same UPDATE_BEFORE / UPDATE_AFTER pairing. Each row is timestamped
// at its snapshot's commit time (the snapshot's timestamp; the read's watermark
// instead when that is later, for a writer whose clock lags or a snapshot that became
// visible late), and the watermark moves past each snapshot once its tasks are out, and
// with the wall clock (5 s behind the poll) while the table is idle, so downstream
// event-time windows close. The output is in the global window. The read ends after
// to_snapshot, or with the last snapshot committed at or before to_timestamp (when main
// has a later snapshot, or at the first poll starting 5 s after to_timestamp); without
// them it runs until the pipeline is drained or cancelled. A from_timestamp in the
// future starts with the first snapshot committed at or after it. A continuous read
// follows snapshots by sequence number (format version 2 or later) and fails, rather
// than skip changes, when main no longer descends from the snapshot it read last (a
// rollback, or that snapshot expired before the read reached its children).
//
// ReadChanges panics on any problem found at construction; use TryReadChanges to get
// the error instead.
func ReadChanges(s beam.Scope, cfg ChangesConfig, opts ...ChangesOption) beam.PCollection {
	return must(TryReadChanges(s, cfg, opts...))
}

// TryReadChanges is ReadChanges returning an error instead of panicking. Every problem
// found at construction is reported at once: unknown or contradictory keys, unknown
// columns in keep, drop or filter, snapshots the table does not have, a start that is
// not an ancestor of the end or comes after it, a poll interval without streaming or
// below one second, streaming on a format-version 1 table, a missing table or an
// unreachable catalog.
func TryReadChanges(s beam.Scope, cfg ChangesConfig, opts ...ChangesOption) (beam.PCollection, error) {
	cfg = cfg.With(opts...)
	invalid := cfg.Validate()
	if blocksTableLoad(invalid) {
		return beam.PCollection{}, invalid
	}
	ctx := context.Background()
	tbl, err := catalogs.LoadTable(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, 0)
	if err != nil {
		return beam.PCollection{}, withTableProblems(invalid, config.WrapOp("read changes", cfg.Table, err))
	}
	spec, err := read.ResolveChanges(ctx, cfg.CatalogName, cfg.CatalogProperties, cfg.Table, tbl, read.ChangesOptions{
		Filter:        cfg.Filter,
		Keep:          cfg.Keep,
		Drop:          cfg.Drop,
		FromSnapshot:  cfg.FromSnapshot,
		ToSnapshot:    cfg.ToSnapshot,
		FromTimestamp: cfg.FromTimestamp,
		ToTimestamp:   cfg.ToTimestamp,
		Latest:        cfg.Strategy() == StartLatest,
		Streaming:     cfg.Streaming,
		PollSeconds:   int(cfg.PollInterval() / time.Second),
	})
	if err := withTableProblems(invalid, err); err != nil {
		return beam.PCollection{}, err
	}
	return read.Changes(s, spec), nil
}

// blocksTableLoad reports whether invalid (a config's Validate error) has a problem
// with a key the table is loaded by: table, catalog_name, catalog_properties.
func blocksTableLoad(invalid error) bool {
	for _, e := range config.Flatten(config.Errors{invalid}) {
		if ce, ok := e.(*config.ConfigError); ok {
			root, _, _ := strings.Cut(ce.Key, ".")
			if root == KeyTable || root == KeyCatalogName || root == KeyCatalogProperties {
				return true
			}
		}
	}
	return false
}

// withTableProblems returns the problems of invalid (a config's Validate error)
// and of found (those found against the table) at once, leaving out a problem of
// found on a key invalid already names.
func withTableProblems(invalid, found error) error {
	if found == nil {
		return invalid
	}
	if invalid == nil {
		return found
	}
	out := config.Flatten(config.Errors{invalid})
	named := map[string]bool{}
	for _, e := range out {
		if ce, ok := e.(*config.ConfigError); ok {
			named[ce.Key] = true
		}
	}
	for _, e := range config.Flatten(config.Errors{found}) {
		if ce, ok := e.(*config.ConfigError); ok && named[ce.Key] {
			continue
		}
		out = append(out, e)
	}
	return out.Err()
}
