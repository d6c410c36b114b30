package iceberg

import (
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"
)

// Options.
//
// Read and Write take a whole config and, optionally, options that change it; a config's
// With method applies options too. Each option sets one key. Options only store values:
// Validate (run by Read and Write) judges them, so a bad value is reported, never dropped.
// Options copy the slices and maps they are given.
//
// Naming: an option is named after its key (WithFilter for filter, WithNumShards for
// num_shards). The three keys both transforms have (keep, drop) are WithKeep / WithDrop
// for reads and WithWriteKeep / WithWriteDrop for writes. Keys ReadChanges shares with
// Read are WithChanges... for ReadChanges (WithChangesFilter, WithChangesStreaming), and
// the range keys ReadChanges had first are WithRead... for a continuous Read
// (WithReadFromSnapshot, WithReadToTimestamp). Keys counted in seconds take a
// time.Duration, rounded up to whole seconds (negative durations stay negative and are
// rejected by Validate).
//
// An option that only sets its field is generated (options_gen.go) from the field's
// option tag, with the field's doc; the options here do more.

// ReadOption changes a ReadConfig.
type ReadOption func(*ReadConfig)

// WriteOption changes a WriteConfig.
type WriteOption func(*WriteConfig)

// ChangesOption changes a ChangesConfig.
type ChangesOption func(*ChangesConfig)

// WithAsOfTimestamp sets as_of_timestamp: read the snapshot current at t (stored as
// RFC 3339 in UTC, nanosecond precision).
func WithAsOfTimestamp(t time.Time) ReadOption {
	s := t.UTC().Format(time.RFC3339Nano)
	return func(c *ReadConfig) { c.AsOfTimestamp = s }
}

// WithOutputType makes Read emit values of struct type t instead of Row; columns match
// fields by `iceberg:"name"` tag, then `beam:"name"` tag, then name.
func WithOutputType(t reflect.Type) ReadOption {
	return func(c *ReadConfig) { c.OutputType = t }
}

// WithExpireSnapshots sets expire_older_than_seconds (olderThan rounded up to whole
// seconds) and retain_last: inline maintenance also expires snapshots older than
// olderThan beyond the newest retainLast of each branch, keeping the sinks' newest
// tokens.
func WithExpireSnapshots(olderThan time.Duration, retainLast int) WriteOption {
	return func(c *WriteConfig) {
		s := seconds(olderThan)
		c.ExpireOlderThanSeconds, c.RetainLast = &s, &retainLast
	}
}

// seconds rounds d up to whole seconds. A negative d stays negative (at most -1) and a
// count beyond the int32 range is stored as is, so that Validate rejects both.
func seconds(d time.Duration) int {
	if d < 0 {
		return min(-1, int(d/time.Second))
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int(s)
}

// WithoutCatalogAtConstruction builds the write without reaching the catalog, so that
// a pipeline can be translated where the catalog or its credentials are not available
// (Dataflow's --dry_run, a CI job). Construction then checks the config and the
// input's type only; what needs the table runs when the job does: a missing table is
// created from the first row (for a struct type too), a struct field that does not fit
// an existing table's column dead-letters its rows instead of failing construction,
// and a merge-on-read write needs equality_columns (it cannot default them to the
// table's identifier fields) and fails the job when the table cannot take its deletes.
// A struct's time.Time fields are written as microsecond timestamps.
func WithoutCatalogAtConstruction() WriteOption {
	return func(c *WriteConfig) { c.NoCatalogAtConstruction = true }
}

// WithSchema gives Read the table's schema up front, so that it builds without
// reaching the catalog (Dataflow's --dry_run, a CI job, or a read of a table that a
// write of the same pipeline creates: see WithReadAfter). filter, keep, drop and the
// output type are checked against sc at construction; when the job runs, the read
// fails if a column it reads is missing from the table or has another type than in
// sc, and snapshot_id, as_of_timestamp and branch are checked then. Field ids and
// required flags of sc are not compared. Not with streaming.
func WithSchema(sc *ibg.Schema) ReadOption {
	return func(c *ReadConfig) { c.Schema = sc }
}

// WithReadAfter makes Read plan its scan only when every PCollection of signals is
// complete, as Beam Java's Wait.on does: a read of what a Write of the same pipeline
// commits waits for WriteResult.Snapshots. The signals are taken in the global
// window: in a batch pipeline a signal is complete when the steps producing it
// finished; an unbounded signal holds the read back until it ends. Combine it with
// WithSchema when the table may not exist when the pipeline is built. Not with
// streaming.
func WithReadAfter(signals ...beam.PCollection) ReadOption {
	return func(c *ReadConfig) { c.After = append(slices.Clone(c.After), signals...) }
}
