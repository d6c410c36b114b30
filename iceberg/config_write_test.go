package iceberg

import (
	"reflect"
	"testing"
)

func mor(kv ...any) map[string]any {
	return withKeys(withKeys(baseWrite(), KeyMode, "merge-on-read"), kv...)
}

func TestParseWriteConfigAccepts(t *testing.T) {
	tests := []struct {
		name string
		m    map[string]any
		want func(c WriteConfig) bool
	}{
		{"minimal append", baseWrite(), func(c WriteConfig) bool { return c.Mode == "" && !c.IsMergeOnRead() }},
		{"template table", withKeys(baseWrite(), KeyTable, "db.events_{region}_{a.b}"), func(c WriteConfig) bool { return c.Table == "db.events_{region}_{a.b}" }},
		{"cdc", mor(
			KeyChangeTypeColumn, "op",
			KeyChangeTypeMap, map[string]any{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE", "b": "UPDATE_BEFORE"},
			KeyEqualityColumns, []any{"order_id"},
			KeyNumShards, 4, KeyShardsPerPartition, 2, KeySorterMemoryMB, 64.0, KeyKeyIndexMemoryMB, 32,
			KeyUpsert, true, KeyDeleteFormat, "dv", KeySinkID, "orders-cdc",
			KeySequenceNumberColumn, "seq",
		), func(c WriteConfig) bool {
			return c.Mode == MergeOnRead && c.ChangeTypeMap["u"] == "UPDATE_AFTER" && *c.NumShards == 4 &&
				*c.ShardsPerPartition == 2 && *c.SorterMemoryMB == 64 && *c.KeyIndexMemoryMB == 32 && c.Upsert && c.DeleteFormat == DeleteFormatDV
		}},
		{"debezium envelope", mor(
			KeyOnly, "after", KeyBeforeField, "before", KeyChangeTypeColumn, "op",
			KeyChangeTypeMap, map[string]any{"r": "INSERT", "c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"},
			KeySequenceNumberColumn, "source.lsn", KeyUpsert, true, KeyEqualityColumns, []any{"op"},
		), func(c WriteConfig) bool {
			// With only, equality columns name fields of the row image: "op" there is
			// not the envelope's change type column.
			return c.Only == "after" && c.BeforeField == "before" && c.SequenceNumberColumn == "source.lsn"
		}},
		{"merge-on-read drop", mor(KeyDrop, []any{"source", "ts_ms"}, KeySequenceNumberColumn, "source.lsn"), func(c WriteConfig) bool {
			return len(c.Drop) == 2
		}},
		{"allowed lateness zero", withKeys(baseWrite(), KeyAllowedLatenessSeconds, 0), func(c WriteConfig) bool {
			return c.AllowedLatenessSeconds != nil && *c.AllowedLatenessSeconds == 0
		}},
		{"upsert false in append", withKeys(baseWrite(), KeyUpsert, false), func(c WriteConfig) bool { return !c.Upsert }},
		{"hash with auto sharding", withKeys(baseWrite(), KeyDistributionMode, "hash", KeyAutoSharding, true), func(c WriteConfig) bool {
			return c.AutoSharding && c.DistributionMode == DistributionHash
		}},
		{"layout", withKeys(baseWrite(),
			KeyPartitionFields, []any{"region", "bucket(16, id)", "truncate(name, 4)", "bucket[8](k)", "day(ts)", "void(x)"},
			KeySortFields, []any{"id desc nulls first", "bucket(id, 4)", "ts"},
			KeyTableProperties, map[string]any{"format-version": "3"},
			KeyWriteProperties, map[string]any{"write.parquet.compression-codec": "zstd"},
		), func(c WriteConfig) bool {
			ps, err1 := c.PartitionSpec()
			ss, err2 := c.SortOrder()
			return err1 == nil && err2 == nil && len(ps) == 6 && len(ss) == 3 && ss[0].Descending && ss[0].NullsFirst
		}},
		{"streaming", withKeys(baseWrite(), KeyTriggeringFrequencySeconds, 60, KeyTokenHeartbeatSeconds, 3600,
			KeyDirectWriteByteLimit, 1<<20, KeyMaximumTableCacheSize, 10, KeyTableCacheRefreshIntervalSeconds, 30,
			KeyTableCachePollingBuckets, 2, KeyUseSideInputTableCache, true,
			KeySnapshotProperties, map[string]any{"app": "x"}, KeyOnly, "payload", KeyEvolveSchema, true), func(c WriteConfig) bool {
			return *c.TriggeringFrequencySeconds == 60 && c.UseSideInputTableCache && c.Only == "payload" && c.EvolveSchema
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseWriteConfig(tt.m)
			if err != nil {
				t.Fatalf("ParseWriteConfig: %v", err)
			}
			if !tt.want(c) {
				t.Errorf("unexpected config %+v", c)
			}
			back, err := ParseWriteConfig(c.Map())
			if err != nil {
				t.Fatalf("ParseWriteConfig(Map()): %v", err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Errorf("round trip: got %+v, want %+v", back, c)
			}
			if err := c.Resolved().Validate(); err != nil {
				t.Errorf("Resolved().Validate(): %v", err)
			}
		})
	}
}

func TestParseWriteConfigRejects(t *testing.T) {
	tests := []struct {
		name   string
		m      map[string]any
		substr string
		keys   []string
	}{
		{"bad mode", withKeys(baseWrite(), KeyMode, "upsert"), "unknown mode", []string{KeyMode}},
		{"read key on write", withKeys(baseWrite(), KeyFilter, "a = 1"), "is a read key", []string{KeyFilter}},
		{"typo hint", withKeys(baseWrite(), "num_shard", 3), `did you mean "num_shards"`, []string{"num_shard"}},
		{"mor keys in append", withKeys(baseWrite(), KeyEqualityColumns, []any{"id"}, KeyNumShards, 4, KeyUpsert, true, KeyDeleteFormat, "dv"),
			"applies only to mode", []string{KeyEqualityColumns, KeyNumShards, KeyUpsert, KeyDeleteFormat}},
		{"mor key in explicit append", withKeys(baseWrite(), KeyMode, "append", KeySorterMemoryMB, 10), "applies only", []string{KeySorterMemoryMB}},
		{"bad change type", mor(KeyChangeTypeColumn, "op", KeyChangeTypeMap, map[string]any{"c": "CREATE"}), "unknown change type", []string{"change_type_map.c"}},
		{"map without column", mor(KeyChangeTypeMap, map[string]any{"c": "INSERT"}), "needs change_type_column", []string{KeyChangeTypeMap}},
		{"same control columns", mor(KeyChangeTypeColumn, "x", KeySequenceNumberColumn, "x"), "same column", []string{KeyChangeTypeColumn}},
		{"equality is control", mor(KeyChangeTypeColumn, "op", KeyEqualityColumns, []any{"op"}), "control column", []string{KeyEqualityColumns}},
		{"equality duplicate", mor(KeyEqualityColumns, []any{"id", "id"}), "duplicate", []string{KeyEqualityColumns}},
		{"drop equality column", mor(KeyEqualityColumns, []any{"id"}, KeyDrop, []any{"id"}), "drops equality", []string{KeyDrop}},
		{"keep misses equality column", mor(KeyEqualityColumns, []any{"id"}, KeyKeep, []any{"v"}), "does not keep", []string{KeyKeep}},
		{"keep drop only", withKeys(baseWrite(), KeyKeep, []any{"a"}, KeyOnly, "b"), "mutually exclusive", []string{KeyOnly}},
		{"before field in append", withKeys(baseWrite(), KeyOnly, "after", KeyBeforeField, "before"), "applies only", []string{KeyBeforeField}},
		{"before field without only", mor(KeyBeforeField, "before"), "needs only", []string{KeyBeforeField}},
		{"before field is only", mor(KeyOnly, "after", KeyBeforeField, "after"), "same field", []string{KeyBeforeField}},
		{"empty path parts", mor(KeySequenceNumberColumn, "source..lsn", KeyChangeTypeColumn, ".op", KeyOnly, "after."),
			"empty part", []string{KeyChangeTypeColumn, KeySequenceNumberColumn, KeyOnly}},
		{"keep lists a control column", mor(KeyChangeTypeColumn, "op", KeyKeep, []any{"id", "op"}), "control column", []string{KeyKeep}},
		{"drop lists a control column", mor(KeyDrop, []any{"_commit_snapshot_sequence_number"}), "control column", []string{KeyDrop}},
		{"only names a control column", mor(KeyChangeTypeColumn, "op", KeyOnly, "op"), "control column", []string{KeyOnly}},
		{"reserved snapshot property", withKeys(baseWrite(), KeySnapshotProperties, map[string]any{"beam.cdc.sink-id": "x", "ok": "y"}), "reserved", []string{"snapshot_properties.beam.cdc.sink-id"}},
		{"negative shards", mor(KeyNumShards, -1), "negative", []string{KeyNumShards}},
		{"zero shards", mor(KeyNumShards, 0), "at least 1", []string{KeyNumShards}},
		{"shards per partition above num shards", mor(KeyNumShards, 4, KeyShardsPerPartition, 5), "at most 4", []string{KeyShardsPerPartition}},
		{"shards per partition above default", mor(KeyShardsPerPartition, 17), "at most 16", []string{KeyShardsPerPartition}},
		{"negative lateness", withKeys(baseWrite(), KeyAllowedLatenessSeconds, -1), "negative", []string{KeyAllowedLatenessSeconds}},
		{"int32 overflow", withKeys(baseWrite(), KeyTriggeringFrequencySeconds, int64(1)<<40), "out of range", []string{KeyTriggeringFrequencySeconds}},
		{"zero heartbeat", withKeys(baseWrite(), KeyTokenHeartbeatSeconds, 0), "at least 1", []string{KeyTokenHeartbeatSeconds}},
		{"every int key negative", withKeys(baseWrite(),
			KeyDirectWriteByteLimit, -1, KeyMaximumTableCacheSize, -1, KeyTableCacheRefreshIntervalSeconds, -1,
			KeyTableCachePollingBuckets, -1, KeyTriggeringFrequencySeconds, -1, KeyTokenHeartbeatSeconds, -1),
			"negative", []string{KeyDirectWriteByteLimit, KeyMaximumTableCacheSize, KeyTableCacheRefreshIntervalSeconds,
				KeyTableCachePollingBuckets, KeyTriggeringFrequencySeconds, KeyTokenHeartbeatSeconds}},
		{"bad delete format", mor(KeyDeleteFormat, "position"), "unknown delete format", []string{KeyDeleteFormat}},
		{"dv on v2", mor(KeyDeleteFormat, "dv", KeyTableProperties, map[string]any{"format-version": "2"}), "format-version 3", []string{KeyDeleteFormat}},
		{"bad format version", withKeys(baseWrite(), KeyTableProperties, map[string]any{"format-version": "4"}), "want 1, 2 or 3", []string{"table_properties.format-version"}},
		{"bad distribution", withKeys(baseWrite(), KeyDistributionMode, "range"), "unknown distribution", []string{KeyDistributionMode}},
		{"auto sharding without hash", withKeys(baseWrite(), KeyAutoSharding, true), "needs distribution_mode", []string{KeyAutoSharding}},
		{"bool as string", withKeys(baseWrite(), KeyUseSideInputTableCache, "true"), "want a boolean", []string{KeyUseSideInputTableCache}},
		{"bad partition", withKeys(baseWrite(), KeyPartitionFields, []any{"bucket(id)", "week(ts)"}), "bucket", []string{KeyPartitionFields, KeyPartitionFields}},
		{"redundant partition", withKeys(baseWrite(), KeyPartitionFields, []any{"day(ts)", "hour(ts)"}), "redundant", []string{KeyPartitionFields}},
		{"bad sort", withKeys(baseWrite(), KeySortFields, []any{"id sideways"}), "unexpected", []string{KeySortFields}},
		{"unbalanced template", withKeys(baseWrite(), KeyTable, "db.t_{region"), "unclosed", []string{KeyTable}},
		{"empty placeholder", withKeys(baseWrite(), KeyTable, "db.t_{}"), "empty", []string{KeyTable}},
		{"blank sink id", withKeys(baseWrite(), KeySinkID, " "), "blank", []string{KeySinkID}},
		{"many problems", map[string]any{KeyMode: "x", KeyNumShards: "4", KeyCatalogName: "c", KeyCatalogProperties: map[string]any{"type": "sql"}, KeyUpsert: 1},
			"configuration problems", []string{KeyTable, KeyMode, KeyNumShards, KeyUpsert}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseWriteConfig(tt.m)
			wantErrorKeys(t, err, tt.substr, tt.keys...)
			if !reflect.DeepEqual(c, WriteConfig{}) {
				t.Errorf("config on error = %+v, want zero", c)
			}
		})
	}
}

func TestWriteResolved(t *testing.T) {
	base := WriteConfig{Table: "t", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"}}
	t.Run("append", func(t *testing.T) {
		r := base.Resolved()
		if r.Mode != Append || r.DistributionMode != DistributionNone || *r.AllowedLatenessSeconds != 21600 ||
			*r.TableCachePollingBuckets != 1 || r.NumShards != nil || r.SequenceNumberColumn != "" || r.SinkID != "" {
			t.Errorf("Resolved() = %+v", r)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
		if base.Mode != "" || base.AllowedLatenessSeconds != nil {
			t.Error("Resolved changed its receiver")
		}
	})
	t.Run("merge-on-read", func(t *testing.T) {
		n := 8
		c := changed(base, func(c *WriteConfig) { c.Mode = MergeOnRead; c.NumShards = &n })
		r := c.Resolved()
		if *r.NumShards != 8 || *r.ShardsPerPartition != 8 || *r.SorterMemoryMB != 100 || *r.KeyIndexMemoryMB != DefaultKeyIndexMemoryMB ||
			r.SequenceNumberColumn != DefaultSequenceNumberColumn || r.DeleteFormat != "" {
			t.Errorf("Resolved() = %+v", r)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
		r2 := changed(base, func(c *WriteConfig) { c.Mode = MergeOnRead }).Resolved()
		if *r2.NumShards != DefaultNumShards || *r2.ShardsPerPartition != DefaultNumShards {
			t.Errorf("default shards: %+v", r2)
		}
	})
	t.Run("explicit value kept", func(t *testing.T) {
		zero := 0
		r := changed(base, func(c *WriteConfig) { c.AllowedLatenessSeconds = &zero }).Resolved()
		if *r.AllowedLatenessSeconds != 0 {
			t.Errorf("lateness = %d, want 0", *r.AllowedLatenessSeconds)
		}
	})
	t.Run("defaults table", func(t *testing.T) {
		d := WriteDefaults()
		d[KeyNumShards] = 1
		if WriteDefaults()[KeyNumShards] != DefaultNumShards {
			t.Error("WriteDefaults returned shared state")
		}
		for k := range d {
			if !writeSchema.Has(k) {
				t.Errorf("default for unknown key %q", k)
			}
		}
	})
}
