package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// Event has a column of most Iceberg types.
type Event struct {
	ID      int64     `iceberg:"id"`
	Region  string    `iceberg:"region"`
	Small   int32     `iceberg:"small"`
	Ratio   float32   `iceberg:"ratio"`
	Amount  float64   `iceberg:"amount"`
	OK      bool      `iceberg:"ok"`
	At      time.Time `iceberg:"at"`
	Day     ibg.Date  `iceberg:"day"`
	Key     string    `iceberg:"key"` // uuid.UUID fields break beam.Create (array types)
	Blob    []byte    `iceberg:"blob"`
	Note    *string   `iceberg:"note"`
	Tags    []string  `iceberg:"tags"`
	Address Address   `iceberg:"address"`
}

// Address is a nested struct column.
type Address struct {
	City string `iceberg:"city"`
	Zip  *int32 `iceberg:"zip"`
}

var (
	snapMu  sync.Mutex
	snapOut = map[string][]iceberg.SnapshotInfo{}
	runN    int
)

type recordSnapshotsFn struct{ Key string }

func (f *recordSnapshotsFn) ProcessElement(si iceberg.SnapshotInfo) {
	snapMu.Lock()
	defer snapMu.Unlock()
	snapOut[f.Key] = append(snapOut[f.Key], si)
}

func init() {
	register.DoFn1x0[iceberg.SnapshotInfo](&recordSnapshotsFn{})
	// Struct element types must be registered, or workers decode them as anonymous
	// structs (ibg.Date fields become int32).
	beam.RegisterType(reflect.TypeFor[Event]())
	beam.RegisterType(reflect.TypeFor[Address]())
}

func events(n int) []Event {
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Event, n)
	for i := range n {
		note := fmt.Sprintf("note %d", i)
		zip := int32(10000 + i)
		e := Event{ID: int64(i), Region: []string{"eu", "us", "ap"}[i%3], Small: int32(i), Ratio: float32(i) / 2,
			Amount: float64(i) * 1.5, OK: i%2 == 0, At: base.Add(time.Duration(i) * time.Hour),
			Day: ibg.Date(19000 + i%10), Key: uuid.NewString(), Blob: []byte{byte(i)},
			Tags:    []string{"a", "b"},
			Address: Address{City: "c", Zip: &zip}}
		if i%4 != 0 {
			e.Note = &note
		}
		out[i] = e
	}
	return out
}

func runWrite(t *testing.T, cfg iceberg.WriteConfig, in []Event) []iceberg.SnapshotInfo {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, in))
	if err != nil {
		t.Fatal(err)
	}
	passert.Count(s, res.DeadLetter, "dead letters", 0)
	runN++
	key := fmt.Sprintf("%s#%d", t.Name(), runN)
	beam.ParDo0(s, &recordSnapshotsFn{Key: key}, res.Snapshots)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	snapMu.Lock()
	defer snapMu.Unlock()
	return snapOut[key]
}

func TestWriteRoundTrip(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		partitions []string
		table      string
		tables     []string
	}{
		{"unpartitioned", nil, "db.events", []string{"db.events"}},
		{"partitioned", []string{"region", "day(at)", "bucket[4](id)", "truncate[2](region)", "month(day)"}, "db.events", []string{"db.events"}},
		{"dynamic destinations", []string{"hour(at)"}, "db.events_{region}", []string{"db.events_eu", "db.events_us", "db.events_ap"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			cfg := iceberg.WriteConfig{Table: tc.table, CatalogName: lc.Name, CatalogProperties: lc.Props,
				PartitionFields: tc.partitions, SinkID: "rt-" + tc.name, SnapshotProperties: map[string]string{"job": "test"}}
			const n = 90
			snaps := runWrite(t, cfg, events(n))
			if len(snaps) != len(tc.tables) {
				t.Fatalf("snapshots = %+v, want %d", snaps, len(tc.tables))
			}
			var total int64
			for _, tn := range tc.tables {
				tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier(strings.Split(tn, ".")))
				if err != nil {
					t.Fatal(err)
				}
				if err := icebergtest.CheckTable(ctx, tbl); err != nil {
					t.Errorf("%s: %v", tn, err)
				}
				at, err := tbl.Scan().ToArrowTable(ctx)
				if err != nil {
					t.Fatal(err)
				}
				total += at.NumRows()
				if got := at.Schema().NumFields(); got != 13 {
					t.Errorf("%s has %d columns, want 13", tn, got)
				}
				at.Release()
				if snap := tbl.CurrentSnapshot(); snap == nil || snap.Summary.Properties["job"] != "test" {
					t.Errorf("%s: snapshot summary lacks the user property", tn)
				}
			}
			if total != n {
				t.Errorf("rows = %d, want %d", total, n)
			}

			// A rerun with the same sink id commits nothing.
			again := runWrite(t, cfg, events(n))
			for _, si := range again {
				if !si.Skipped {
					t.Errorf("rerun committed %+v", si)
				}
			}
		})
	}
}

func TestTryWriteErrors(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	// An existing table whose "id" is a string: Event cannot be written to it.
	icebergtest.CreateTable(t, lc.Catalog, "db.strings", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.String, Required: true}))
	base := iceberg.WriteConfig{Table: "db.events", CatalogName: lc.Name, CatalogProperties: lc.Props}
	tests := []struct {
		name    string
		mutate  func(c *iceberg.WriteConfig)
		wantErr error
		wantMsg string
	}{
		{"no table", func(c *iceberg.WriteConfig) { c.Table = "" }, iceberg.ErrInvalidConfig, "table"},
		{"merge-on-read rows without control columns", func(c *iceberg.WriteConfig) { c.Mode = iceberg.MergeOnRead; c.EqualityColumns = []string{"id"} }, iceberg.ErrInvalidConfig, "_commit_snapshot_sequence_number"},
		{"heartbeat without streaming", func(c *iceberg.WriteConfig) { n := 10; c.TokenHeartbeatSeconds = &n }, iceberg.ErrInvalidConfig, "token_heartbeat_seconds"},
		{"heartbeat with a table template", func(c *iceberg.WriteConfig) {
			n := 10
			c.Table, c.TriggeringFrequencySeconds, c.TokenHeartbeatSeconds = "db.t_{region}", &n, &n
		}, iceberg.ErrUnsupported, "token_heartbeat_seconds"},
		{"keep names a missing field", func(c *iceberg.WriteConfig) { c.Keep = []string{"id", "nope"} }, iceberg.ErrInvalidConfig, `"nope"`},
		{"only names a non-struct field", func(c *iceberg.WriteConfig) { c.Only = "region" }, iceberg.ErrInvalidConfig, `"region"`},
		{"bad target file size", func(c *iceberg.WriteConfig) {
			c.WriteProperties = map[string]string{"write.target-file-size-bytes": "-1"}
		}, iceberg.ErrInvalidConfig, "write.target-file-size-bytes"},
		{"reserved snapshot property", func(c *iceberg.WriteConfig) { c.SnapshotProperties = map[string]string{"beam.cdc.x": "1"} }, iceberg.ErrInvalidConfig, "beam.cdc."},
		{"schema mismatch", func(c *iceberg.WriteConfig) { c.Table = "db.strings" }, iceberg.ErrInvalidConfig, `"id"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mutate(&cfg)
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, events(1)))
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v mentioning %s", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// TestTableCachePollingBuckets: icebeam has no catalog pollers, so any
// table_cache_polling_buckets but the default 1 is rejected at construction as
// unsupported, naming the key, in both write modes; 1 is accepted. Likewise
// use_side_input_table_cache: false is accepted, true rejected.
func TestTableCachePollingBuckets(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	for _, on := range []bool{false, true} {
		_, s := beam.NewPipelineWithRoot()
		cfg := iceberg.WriteConfig{Table: "db.poll", CatalogName: lc.Name, CatalogProperties: lc.Props}
		_, err := iceberg.TryWrite(s, cfg.With(iceberg.WithSideInputTableCache(on)), beam.Create(s, StreamRow{ID: 1}))
		var ce *iceberg.ConfigError
		if !on && err != nil {
			t.Errorf("side-input table cache off: %v", err)
		}
		if on && (!errors.Is(err, iceberg.ErrUnsupported) || !errors.As(err, &ce) || ce.Key != iceberg.KeyUseSideInputTableCache) {
			t.Errorf("side-input table cache on: err = %v, want ErrUnsupported naming %s", err, iceberg.KeyUseSideInputTableCache)
		}
	}
	for _, mode := range []iceberg.Mode{iceberg.Append, iceberg.MergeOnRead} {
		for _, n := range []int{1, 4} {
			_, s := beam.NewPipelineWithRoot()
			cfg := iceberg.WriteConfig{Table: "db.poll", CatalogName: lc.Name, CatalogProperties: lc.Props, Mode: mode}
			rows := beam.Create(s, StreamRow{ID: 1})
			if mode == iceberg.MergeOnRead {
				cfg.EqualityColumns, cfg.ChangeTypeColumn = []string{"id"}, "op"
				cfg.ChangeTypeMap = map[string]string{"c": iceberg.ChangeInsert}
				rows = beam.Create(s, StreamChange{ID: 1, Op: "c", Seq: 1})
			}
			cfg = cfg.With(iceberg.WithTableCachePollingBuckets(n))
			_, err := iceberg.TryWrite(s, cfg, rows)
			var ce *iceberg.ConfigError
			if n == 1 && err != nil {
				t.Errorf("%s, %d bucket: %v", mode, n, err)
			}
			if n != 1 && (!errors.Is(err, iceberg.ErrUnsupported) || !errors.As(err, &ce) || ce.Key != iceberg.KeyTableCachePollingBuckets) {
				t.Errorf("%s, %d buckets: err = %v, want ErrUnsupported naming %s", mode, n, err, iceberg.KeyTableCachePollingBuckets)
			}
		}
	}
}
