package cdc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write"
)

// Spec is the serialized configuration of the merge-on-read write's DoFns. Maps
// travel as JSON strings (DoFn fields are JSON-encoded by Beam and must not be
// map-typed).
type Spec struct {
	// Table is the destination table ("db.table"; templates are not supported).
	Table string
	// CatalogName names the catalog.
	CatalogName string
	// CatalogProps is the catalog properties as a JSON object. It may hold secrets:
	// it is never logged.
	CatalogProps string
	// SinkID is the exactly-once sink id; RunID this run of it (see write.Spec).
	SinkID, RunID string
	// ChangeTypeColumn, ChangeTypeMap (a JSON object), SequenceNumberColumn and
	// EqualityColumns describe the change rows (see config.WriteConfig). EqualityColumns
	// is resolved: the table's identifier fields when the config has none.
	ChangeTypeColumn     string
	ChangeTypeMap        string
	SequenceNumberColumn string
	EqualityColumns      []string
	// Upsert deletes the committed row of every key that has a change.
	Upsert bool
	// DeleteFormat is config.DeleteFormatDV, config.DeleteFormatEquality, or empty
	// (DV on format-version 3 tables, equality deletes before).
	DeleteFormat string
	// NumShards is the number of key-hash shards; ShardsPerPartition bounds the
	// shards one partition's keys use (see Sharder).
	NumShards, ShardsPerPartition int
	// SorterMemoryMB bounds each shard's in-memory sort buffer.
	SorterMemoryMB int
	// PartitionFields, SortFields: of a table the write creates.
	PartitionFields, SortFields []string
	// TableProps, WriteProps, SnapshotProps are JSON objects.
	TableProps, WriteProps, SnapshotProps string
	// TargetFileSizeBytes overrides the table's target data file size when > 0.
	TargetFileSizeBytes int64
	// TableCacheRefreshSeconds is the table metadata cache age (0: default 60 s);
	// TableCacheSize bounds the process-wide table cache (maximum_table_cache_size,
	// 0: catalogs.DefaultTableCacheSize).
	TableCacheRefreshSeconds, TableCacheSize int
	// Windowed and LatenessMs: see write.Spec.
	Windowed   bool
	LatenessMs int64
}

// NewSpec builds the Spec of cfg (valid, merge-on-read) for sinkID. Equality columns
// are cfg's; PrepareTable fills them from the table when cfg has none.
func NewSpec(cfg config.WriteConfig, sinkID string) (Spec, error) {
	if sinkID == "" {
		return Spec{}, config.Errorf(config.KeySinkID, "empty sink id")
	}
	cfg = cfg.Resolved()
	enc := func(m map[string]string) (string, error) {
		if len(m) == 0 {
			return "", nil
		}
		b, err := json.Marshal(m)
		return string(b), err
	}
	s := Spec{Table: cfg.Table, CatalogName: cfg.CatalogName, SinkID: sinkID, RunID: uuid.NewString(),
		ChangeTypeColumn: cfg.ChangeTypeColumn, SequenceNumberColumn: cfg.SequenceNumberColumn,
		EqualityColumns: slices.Clone(cfg.EqualityColumns), Upsert: cfg.Upsert, DeleteFormat: string(cfg.DeleteFormat),
		NumShards: config.DefaultNumShards, SorterMemoryMB: config.DefaultSorterMemoryMB,
		PartitionFields: slices.Clone(cfg.PartitionFields), SortFields: slices.Clone(cfg.SortFields)}
	if cfg.NumShards != nil {
		s.NumShards = *cfg.NumShards
	}
	s.ShardsPerPartition = s.NumShards
	if cfg.ShardsPerPartition != nil {
		s.ShardsPerPartition = *cfg.ShardsPerPartition
	}
	if cfg.SorterMemoryMB != nil {
		s.SorterMemoryMB = *cfg.SorterMemoryMB
	}
	if cfg.TableCacheRefreshIntervalSeconds != nil {
		s.TableCacheRefreshSeconds = *cfg.TableCacheRefreshIntervalSeconds
	}
	if cfg.MaximumTableCacheSize != nil {
		s.TableCacheSize = *cfg.MaximumTableCacheSize
	}
	if cfg.TriggeringFrequencySeconds != nil {
		s.Windowed = true
		s.LatenessMs = cfg.Lateness().Milliseconds()
	}
	var errs config.Errors
	var err error
	s.CatalogProps, err = enc(cfg.CatalogProperties)
	errs.Add(err)
	s.ChangeTypeMap, err = enc(cfg.ChangeTypeMap)
	errs.Add(err)
	s.TableProps, err = enc(cfg.TableProperties)
	errs.Add(err)
	s.WriteProps, err = enc(cfg.WriteProperties)
	errs.Add(err)
	s.SnapshotProps, err = enc(cfg.SnapshotProperties)
	errs.Add(err)
	if v, ok := cfg.WriteProperties[table.WriteTargetFileSizeBytesKey]; ok {
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n <= 0 {
			errs.Add(config.Errorf(config.KeyWriteProperties+"."+table.WriteTargetFileSizeBytesKey, "%q is not a positive number of bytes", v))
		}
		s.TargetFileSizeBytes = n
	}
	if err := errs.Err(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// env is what a DoFn builds from its Spec in Setup.
type env struct {
	cfg           config.WriteConfig // the change-row keys, for NewParser
	catProps      map[string]string
	writeProps    map[string]string
	snapshotProps map[string]string
	create        write.CreateOptions
	refresh       time.Duration
}

func (s Spec) env() (*env, error) {
	rt := &env{refresh: 60 * time.Second}
	if s.TableCacheRefreshSeconds > 0 {
		rt.refresh = time.Duration(s.TableCacheRefreshSeconds) * time.Second
	}
	catalogs.SetTableCacheSize(s.TableCacheSize)
	var changeMap, tableProps map[string]string
	for _, p := range []struct {
		src string
		dst *map[string]string
	}{{s.CatalogProps, &rt.catProps}, {s.ChangeTypeMap, &changeMap}, {s.TableProps, &tableProps},
		{s.WriteProps, &rt.writeProps}, {s.SnapshotProps, &rt.snapshotProps}} {
		if p.src == "" {
			continue
		}
		if err := json.Unmarshal([]byte(p.src), p.dst); err != nil {
			return nil, fmt.Errorf("iceberg: write %s: bad serialized properties: %w", s.Table, err)
		}
	}
	rt.cfg = config.WriteConfig{Table: s.Table, Mode: config.MergeOnRead, ChangeTypeColumn: s.ChangeTypeColumn,
		ChangeTypeMap: changeMap, SequenceNumberColumn: s.SequenceNumberColumn,
		EqualityColumns: slices.Clone(s.EqualityColumns), Upsert: s.Upsert, DeleteFormat: config.DeleteFormat(s.DeleteFormat)}
	var err error
	if rt.create.PartitionFields, err = config.ParsePartitionFields(s.PartitionFields); err != nil {
		return nil, err
	}
	if rt.create.SortFields, err = config.ParseSortFields(s.SortFields); err != nil {
		return nil, err
	}
	rt.create.Properties = maps.Clone(tableProps)
	return rt, nil
}

// fileOptions are the options of the data files the shards write.
func (s Spec) fileOptions(rt *env) write.FileOptions {
	return write.FileOptions{TargetFileSizeBytes: s.TargetFileSizeBytes, WriteProperties: rt.writeProps}
}
