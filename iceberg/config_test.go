package iceberg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func validRead() ReadConfig {
	return ReadConfig{Table: "shop.orders", CatalogName: "lake", CatalogProperties: map[string]string{"type": "sql"}}
}

func validWrite() WriteConfig {
	return WriteConfig{Table: "shop.orders", CatalogName: "lake", CatalogProperties: map[string]string{"type": "sql"}}
}

func TestReadOptionsSetTheirKey(t *testing.T) {
	ts := time.Date(2024, 5, 1, 12, 0, 0, 5, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		opt  ReadOption
		key  string
		want any
	}{
		{"WithFilter", WithFilter("a > 1"), KeyFilter, "a > 1"},
		{"WithKeep", WithKeep("a", "b"), KeyKeep, []string{"a", "b"}},
		{"WithDrop", WithDrop("c"), KeyDrop, []string{"c"}},
		{"WithSnapshotID", WithSnapshotID(77), KeySnapshotID, int64(77)},
		{"WithAsOfTimestamp", WithAsOfTimestamp(ts), KeyAsOfTimestamp, "2024-05-01T11:00:00.000000005Z"},
		{"WithBranch", WithBranch("audit"), KeyBranch, "audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validRead().With(tt.opt)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			m := c.Map()
			if !reflect.DeepEqual(m[tt.key], tt.want) {
				t.Errorf("Map()[%q] = %#v, want %#v", tt.key, m[tt.key], tt.want)
			}
			back, err := ParseReadConfig(m)
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("ParseReadConfig(Map()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
	t.Run("WithOutputType", func(t *testing.T) {
		type order struct{ ID int64 }
		c := validRead().With(WithOutputType(reflect.TypeFor[order]()))
		if c.OutputType != reflect.TypeFor[order]() || len(c.Map()) != 3 {
			t.Errorf("OutputType = %v, Map = %v", c.OutputType, c.Map())
		}
	})
}

func TestWriteOptionsSetTheirKey(t *testing.T) {
	mor := WithMode(MergeOnRead)
	tests := []struct {
		name string
		opts []WriteOption
		key  string
		want any
	}{
		{"WithMode", []WriteOption{mor}, KeyMode, "merge-on-read"},
		{"WithSinkID", []WriteOption{WithSinkID("s1")}, KeySinkID, "s1"},
		{"WithEqualityColumns", []WriteOption{mor, WithEqualityColumns("id")}, KeyEqualityColumns, []string{"id"}},
		{"WithChangeTypeColumn", []WriteOption{mor, WithChangeTypeColumn("op")}, KeyChangeTypeColumn, "op"},
		{"WithChangeTypeMap", []WriteOption{mor, WithChangeTypeColumn("op"), WithChangeTypeMap(map[string]string{"d": ChangeDelete})}, KeyChangeTypeMap, map[string]string{"d": "DELETE"}},
		{"WithSequenceNumberColumn", []WriteOption{mor, WithSequenceNumberColumn("seq")}, KeySequenceNumberColumn, "seq"},
		{"WithUpsert", []WriteOption{mor, WithUpsert(true)}, KeyUpsert, true},
		{"WithDeleteFormat", []WriteOption{mor, WithDeleteFormat(DeleteFormatEquality)}, KeyDeleteFormat, "equality"},
		{"WithNumShards", []WriteOption{mor, WithNumShards(4)}, KeyNumShards, 4},
		{"WithShardsPerPartition", []WriteOption{mor, WithShardsPerPartition(2)}, KeyShardsPerPartition, 2},
		{"WithAutoSharding", []WriteOption{WithDistributionMode(DistributionHash), WithAutoSharding(true)}, KeyAutoSharding, true},
		{"WithDistributionMode", []WriteOption{WithDistributionMode(DistributionHash)}, KeyDistributionMode, "hash"},
		{"WithSorterMemoryMB", []WriteOption{mor, WithSorterMemoryMB(64)}, KeySorterMemoryMB, 64},
		{"WithKeyIndexMemoryMB", []WriteOption{mor, WithKeyIndexMemoryMB(0)}, KeyKeyIndexMemoryMB, 0},
		{"WithDirectWriteByteLimit", []WriteOption{WithTriggeringFrequency(time.Minute), WithDirectWriteByteLimit(1024)}, KeyDirectWriteByteLimit, 1024},
		{"WithAllowedLateness", []WriteOption{WithAllowedLateness(90 * time.Minute)}, KeyAllowedLatenessSeconds, 5400},
		{"WithAllowedLateness zero", []WriteOption{WithAllowedLateness(0)}, KeyAllowedLatenessSeconds, 0},
		{"WithTokenHeartbeat", []WriteOption{WithTriggeringFrequency(time.Minute), WithTokenHeartbeat(time.Hour)}, KeyTokenHeartbeatSeconds, 3600},
		{"WithTriggeringFrequency rounds up", []WriteOption{WithTriggeringFrequency(1500 * time.Millisecond)}, KeyTriggeringFrequencySeconds, 2},
		{"WithMaintenanceInterval rounds up", []WriteOption{WithMaintenanceInterval(1500 * time.Millisecond)}, KeyMaintenanceIntervalSeconds, 2},
		{"WithMaintenanceInterval sub-second", []WriteOption{WithMaintenanceInterval(500 * time.Millisecond)}, KeyMaintenanceIntervalSeconds, 1},
		{"WithExpireSnapshots rounds up", []WriteOption{WithMaintenanceEveryCommits(5), WithExpireSnapshots(1500*time.Millisecond, 3)}, KeyExpireOlderThanSeconds, 2},
		{"WithExpireSnapshots sub-second", []WriteOption{WithMaintenanceEveryCommits(5), WithExpireSnapshots(500*time.Millisecond, 3)}, KeyExpireOlderThanSeconds, 1},
		{"WithExpireSnapshots zero", []WriteOption{WithMaintenanceEveryCommits(5), WithExpireSnapshots(0, 3)}, KeyExpireOlderThanSeconds, 0},
		{"WithSnapshotProperties", []WriteOption{WithSnapshotProperties(map[string]string{"app": "x"})}, KeySnapshotProperties, map[string]string{"app": "x"}},
		{"WithPartitionFields", []WriteOption{WithPartitionFields("bucket(16, id)", "day(ts)")}, KeyPartitionFields, []string{"bucket(16, id)", "day(ts)"}},
		{"WithSortFields", []WriteOption{WithSortFields("id desc")}, KeySortFields, []string{"id desc"}},
		{"WithTableProperties", []WriteOption{WithTableProperties(map[string]string{"format-version": "3"})}, KeyTableProperties, map[string]string{"format-version": "3"}},
		{"WithWriteProperties", []WriteOption{WithWriteProperties(map[string]string{"w": "v"})}, KeyWriteProperties, map[string]string{"w": "v"}},
		{"WithWriteKeep", []WriteOption{WithWriteKeep("a")}, KeyKeep, []string{"a"}},
		{"WithWriteDrop", []WriteOption{WithWriteDrop("a")}, KeyDrop, []string{"a"}},
		{"WithOnly", []WriteOption{WithOnly("payload")}, KeyOnly, "payload"},
		{"WithBeforeField", []WriteOption{mor, WithOnly("after"), WithBeforeField("before")}, KeyBeforeField, "before"},
		{"WithSchemaEvolution", []WriteOption{WithSchemaEvolution(true)}, KeyEvolveSchema, true},
		{"WithMaximumTableCacheSize", []WriteOption{WithMaximumTableCacheSize(5)}, KeyMaximumTableCacheSize, 5},
		{"WithTableCacheRefreshInterval", []WriteOption{WithTableCacheRefreshInterval(time.Minute)}, KeyTableCacheRefreshIntervalSeconds, 60},
		{"WithTableCachePollingBuckets", []WriteOption{WithTableCachePollingBuckets(3)}, KeyTableCachePollingBuckets, 3},
		{"WithSideInputTableCache", []WriteOption{WithSideInputTableCache(true)}, KeyUseSideInputTableCache, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validWrite().With(tt.opts...)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			m := c.Map()
			if !reflect.DeepEqual(m[tt.key], tt.want) {
				t.Errorf("Map()[%q] = %#v, want %#v", tt.key, m[tt.key], tt.want)
			}
			back, err := ParseWriteConfig(m)
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("ParseWriteConfig(Map()) = %+v, %v; want %+v", back, err, c)
			}
		})
	}
}

// TestOptionsNeverDropBadValues checks that a bad option value is stored and reported by
// Validate under its key, not silently ignored.
func TestOptionsNeverDropBadValues(t *testing.T) {
	tests := []struct {
		name string
		err  error
		key  string
	}{
		{"negative shards", validWrite().With(WithMode(MergeOnRead), WithNumShards(-1)).Validate(), KeyNumShards},
		{"zero shards", validWrite().With(WithMode(MergeOnRead), WithNumShards(0)).Validate(), KeyNumShards},
		{"negative lateness", validWrite().With(WithAllowedLateness(-time.Millisecond)).Validate(), KeyAllowedLatenessSeconds},
		{"zero triggering", validWrite().With(WithTriggeringFrequency(0)).Validate(), KeyTriggeringFrequencySeconds},
		{"negative maintenance interval", validWrite().With(WithMaintenanceInterval(-500 * time.Millisecond)).Validate(), KeyMaintenanceIntervalSeconds},
		{"negative snapshot expiry", validWrite().With(WithMaintenanceEveryCommits(5), WithExpireSnapshots(-500*time.Millisecond, 3)).Validate(), KeyExpireOlderThanSeconds},
		{"bad mode", validWrite().With(WithMode("upsert")).Validate(), KeyMode},
		{"mor option in append", validWrite().With(WithUpsert(true)).Validate(), KeyUpsert},
		{"before field without only", validWrite().With(WithMode(MergeOnRead), WithBeforeField("before")).Validate(), KeyBeforeField},
		{"negative snapshot", validRead().With(WithSnapshotID(-5)).Validate(), KeySnapshotID},
		{"zero time", validRead().With(WithAsOfTimestamp(time.Time{})).Validate(), KeyAsOfTimestamp},
		{"keep and drop", validRead().With(WithKeep("a"), WithDrop("b")).Validate(), KeyDrop},
		{"empty column", validRead().With(WithKeep("")).Validate(), KeyKeep},
		{"non-struct output", validRead().With(WithOutputType(reflect.TypeFor[string]())).Validate(), "OutputType"},
		{"bad partition", validWrite().With(WithPartitionFields("bucket(x)")).Validate(), KeyPartitionFields},
		{"reserved property", validWrite().With(WithSnapshotProperties(map[string]string{"beam.cdc.x": "1"})).Validate(), "snapshot_properties.beam.cdc.x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", tt.err)
			}
			var ce *ConfigError
			if !errors.As(tt.err, &ce) || ce.Key != tt.key {
				t.Errorf("ConfigError key = %v, want %q (error %v)", ce, tt.key, tt.err)
			}
		})
	}
}

func TestOptionsCopyTheirArguments(t *testing.T) {
	cols := []string{"a"}
	props := map[string]string{"k": "v"}
	keep, tp := WithKeep(cols...), WithTableProperties(props)
	cols[0], props["k"] = "changed", "changed"
	if c := validRead().With(keep); c.Keep[0] != "a" {
		t.Errorf("Keep = %v, want [a]", c.Keep)
	}
	if c := validWrite().With(tp); c.TableProperties["k"] != "v" {
		t.Errorf("TableProperties = %v", c.TableProperties)
	}
}

func TestFacadeParsers(t *testing.T) {
	const secret = "s3cr3t-value"
	tests := []struct {
		name  string
		parse func() error
		keys  []string
	}{
		{"json read ok", func() error {
			c, err := ParseReadConfigJSON([]byte(`{"table":"t","catalog_name":"c","catalog_properties":{"type":"rest"},"snapshot_id":8744736658442914487}`))
			if err == nil && *c.SnapshotID != 8744736658442914487 {
				return errors.New("snapshot id lost precision")
			}
			return err
		}, nil},
		{"yaml write ok", func() error {
			c, err := ParseWriteConfigYAML([]byte("table: t\ncatalog_name: c\ncatalog_properties: {type: sql}\nmode: merge-on-read\nnum_shards: 8\nequality_columns: [id]\n"))
			if err == nil && (c.Mode != MergeOnRead || *c.NumShards != 8) {
				return errors.New("wrong config")
			}
			return err
		}, nil},
		{"yaml read timestamp", func() error {
			c, err := ParseReadConfigYAML([]byte("table: t\ncatalog_name: c\ncatalog_properties: {type: sql}\nas_of_timestamp: 2024-05-01T10:00:00Z\n"))
			if err == nil && c.AsOfTimestamp != "2024-05-01T10:00:00Z" {
				return errors.New("timestamp " + c.AsOfTimestamp)
			}
			return err
		}, nil},
		{"json syntax", func() error { _, err := ParseWriteConfigJSON([]byte(`{"table":`)); return err }, []string{}},
		{"json trailing data", func() error { _, err := ParseReadConfigJSON([]byte(`{} {}`)); return err }, []string{}},
		{"yaml not a mapping", func() error { _, err := ParseReadConfigYAML([]byte("- a\n- b\n")); return err }, []string{}},
		{"yaml problems", func() error {
			_, err := ParseWriteConfigYAML([]byte("table: t\ncatalog_name: c\ncatalog_properties: {type: rest, token: " + secret + ", x: 1}\nnum_shards: 1.5\nmod: append\n"))
			return err
		}, []string{"catalog_properties.x", KeyNumShards, "mod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse()
			if tt.keys == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks a secret: %v", err)
			}
			for _, k := range tt.keys {
				if !strings.Contains(err.Error(), `"`+k+`"`) {
					t.Errorf("error does not name %q: %v", k, err)
				}
			}
		})
	}
}

func TestFacadeTermParsers(t *testing.T) {
	p, err := ParsePartitionField("bucket(16, id)")
	if err != nil || p != (PartitionField{Source: "id", Transform: "bucket", Param: 16}) {
		t.Errorf("ParsePartitionField = %+v, %v", p, err)
	}
	s, err := ParseSortField("day(ts) desc")
	if err != nil || s != (SortField{Source: "ts", Transform: "day", Descending: true}) {
		t.Errorf("ParseSortField = %+v, %v", s, err)
	}
	if !IsSecretKey("rest.auth.token") || IsSecretKey("uri") {
		t.Error("IsSecretKey")
	}
}
