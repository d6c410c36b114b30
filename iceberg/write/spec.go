package write

import (
	"context"
	"slices"
	"strconv"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/datafile"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
	"github.com/icebeam/icebeam/iceberg/write/schema"
)

// batchRows is the number of rows per Arrow batch handed to the Parquet writer.
const batchRows = 64 * 1024

// packetBytes is the size at which distribution_mode=hash ships a packed batch of rows
// of one partition to the shuffle (a variable so that tests can make packets small).
var packetBytes = 4 << 20

// Spec is the configuration of the write's DoFns, a field of each (Beam serializes a
// DoFn's exported fields with encoding/json).
type Spec struct {
	// Table is the table name or template.
	Table string
	// CatalogName names the catalog.
	CatalogName string
	// CatalogProps is the catalog properties. They may hold secrets: never logged.
	CatalogProps map[string]string
	// SinkID is the exactly-once sink id.
	SinkID string
	// RunID tells this run of the sink from earlier ones (a restart with the same sink
	// id): a fresh UUID per NewSpec, recorded in every snapshot (see RunKey).
	RunID string
	// PartitionFields, SortFields: of tables the write creates.
	PartitionFields, SortFields []string
	// TableProps, WriteProps, SnapshotProps are table_properties, write_properties
	// and snapshot_properties.
	TableProps, WriteProps, SnapshotProps map[string]string
	// TableCacheRefreshSeconds is the table metadata cache age (0: default 60 s);
	// TableCacheSize bounds the process-wide table cache (maximum_table_cache_size,
	// 0: catalogs.DefaultTableCacheSize).
	TableCacheRefreshSeconds, TableCacheSize int
	// Keep, Drop and Only (below) project rows before they are written (see
	// Projection). In merge-on-read mode Only (with BeforeField) names a change
	// envelope's row images (see cdc.Envelope) and Keep or Drop project the row image.
	Keep, Drop []string
	// Hash shuffles rows by table and partition before the writers
	// (distribution_mode=hash).
	Hash bool
	// TargetFileSizeBytes is write_properties' write.target-file-size-bytes; 0 means
	// the table's own property (which table_properties set on tables the write creates).
	TargetFileSizeBytes int64
	// Windowed is true for writes windowed by triggering_frequency_seconds: rows more
	// than LatenessMs late go to the dead letter output (see late.Gate).
	Windowed   bool
	LatenessMs int64
	// DirectLimit is direct_write_byte_limit: bundles up to this many bytes of rows
	// are written directly, larger ones through the partition shuffle (0: off).
	DirectLimit int64
	// AutoShard is auto_sharding: a partition's packets of one bundle go to
	// successive shuffle shards (distribution_mode=hash).
	AutoShard bool
	// EvolveSchema is evolve_schema: rows the table's schema cannot take evolve it
	// (see EvolveTable) instead of going to the dead letter output.
	EvolveSchema bool
	// NanoTimes are the columns (row.NanoTimes paths) of a struct element type's
	// time.Time fields whose existing table column is in nanoseconds: structs become
	// rows with those columns at nanosecond precision (row.WithNanoTimes). Set at
	// construction, from the table.
	NanoTimes []string

	// MergeOnRead is true for mode merge-on-read.
	MergeOnRead bool
	// ChangeTypeColumn, ChangeTypeMap, SequenceNumberColumn, EqualityColumns, Only
	// and BeforeField describe the change rows of a merge-on-read write (see
	// cdc.ChangeSpec; only Only is set for appends); PrepareTable sets EqualityColumns
	// to the table's identifier fields when the config has none. Upsert applies only
	// after-images; DeleteFormat is delete_format (empty: by the table's format
	// version).
	ChangeTypeColumn     string
	ChangeTypeMap        map[string]string
	SequenceNumberColumn string
	EqualityColumns      []string
	Only, BeforeField    string
	Upsert               bool
	DeleteFormat         string
	// NumShards is the number of key-hash shards; ShardsPerPartition bounds the
	// shards one partition's keys use (see cdc.Sharder); SorterMemoryMB bounds each
	// shard's in-memory sort buffer.
	NumShards, ShardsPerPartition, SorterMemoryMB int
	// KeyIndexMemoryMB bounds the worker's key index of the table (cdc.KeyIndex; 0: none).
	KeyIndexMemoryMB int
	// Maintenance is the inline maintenance after the commits (maintenance_* keys).
	Maintenance maintain.InlineMaintenance
}

// TargetFileSize returns props' write.target-file-size-bytes (0 when absent); key
// names props in the error of a value that is not a positive integer.
func TargetFileSize(key string, props map[string]string) (int64, error) {
	v, ok := props[table.WriteTargetFileSizeBytesKey]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, config.Errorf(key+"."+table.WriteTargetFileSizeBytesKey, "%q is not a positive number of bytes", v)
	}
	return n, nil
}

// runtime is what a DoFn builds from its Spec in Setup.
type runtime struct {
	tpl           Template
	catProps      map[string]string
	tableProps    map[string]string
	writeProps    map[string]string
	snapshotProps map[string]string
	create        schema.CreateOptions
	refresh       time.Duration
	proj          *schema.Projection
	// changes describes the change rows of a merge-on-read write (for cdc.NewParser).
	changes cdc.ChangeSpec
}

func (s Spec) runtime() (*runtime, error) {
	rt := &runtime{refresh: 60 * time.Second}
	if s.TableCacheRefreshSeconds > 0 {
		rt.refresh = time.Duration(s.TableCacheRefreshSeconds) * time.Second
	}
	catalogs.SetTableCacheSize(s.TableCacheSize)
	var err error
	if rt.tpl, err = ParseTemplate(s.Table); err != nil {
		return nil, err
	}
	rt.catProps, rt.tableProps, rt.writeProps, rt.snapshotProps = s.CatalogProps, s.TableProps, s.WriteProps, s.SnapshotProps
	if rt.create.PartitionFields, err = config.ParsePartitionFields(s.PartitionFields); err != nil {
		return nil, err
	}
	if rt.create.SortFields, err = config.ParseSortFields(s.SortFields); err != nil {
		return nil, err
	}
	rt.create.Properties = rt.tableProps
	if rt.proj, err = schema.NewProjection(s.Keep, s.Drop, s.Only); err != nil {
		return nil, err
	}
	rt.changes = s.changeSpec()
	if !s.MergeOnRead {
		rt.changes.Only, rt.changes.BeforeField = "", "" // only is a projection of appends
	}
	return rt, nil
}

// inlineMaintenance is the configuration of the write's inline maintenance.
func (s Spec) inlineMaintenance() maintain.InlineSpec {
	return maintain.InlineSpec{CatalogName: s.CatalogName, CatalogProps: s.CatalogProps, TableCacheSize: s.TableCacheSize,
		TargetFileSizeBytes: s.TargetFileSizeBytes, KeyColumns: s.EqualityColumns, Maintenance: s.Maintenance}
}

// changeSpec returns the change rows' description for cdc (EqualityColumns cloned).
func (s Spec) changeSpec() cdc.ChangeSpec {
	return cdc.ChangeSpec{ChangeTypeColumn: s.ChangeTypeColumn, ChangeTypeMap: s.ChangeTypeMap,
		SequenceNumberColumn: s.SequenceNumberColumn, EqualityColumns: slices.Clone(s.EqualityColumns),
		Only: s.Only, BeforeField: s.BeforeField}
}

// imageProjection returns the keep or drop projection a merge-on-read write applies
// to each change's row image, or nil for none (only is not a projection there: it
// names the envelope's row image, see cdc.Envelope).
func (rt *runtime) imageProjection() func(row.Row) (row.Row, error) {
	if rt.changes.Only != "" || rt.proj.IsZero() {
		return nil
	}
	return rt.proj.Apply
}

// envelope returns the change envelope of a merge-on-read write, with its keep or
// drop projection.
func (s Spec) envelope(rt *runtime) (*cdc.Envelope, error) {
	env, err := cdc.NewEnvelope(s.Table, rt.changes)
	if err != nil {
		return nil, err
	}
	if f := rt.imageProjection(); f != nil {
		env.SetProjection(f)
	}
	return env, nil
}

// parser returns the change parser of table schema sc, with the image projection.
func (s Spec) parser(rt *runtime, sc *ibg.Schema) (*cdc.Parser, error) {
	p, err := cdc.NewParser(s.Table, sc, rt.changes)
	if err != nil {
		return nil, err
	}
	if f := rt.imageProjection(); f != nil {
		p.SetProjection(f)
	}
	return p, nil
}

// fileOptions are the options of the files the writers write.
func (s Spec) fileOptions(rt *runtime) datafile.Options {
	return datafile.Options{TargetFileSizeBytes: s.TargetFileSizeBytes, WriteProperties: rt.writeProps}
}

func (s Spec) catalog(ctx context.Context, rt *runtime) (catalog.Catalog, error) {
	return catalogs.Get(ctx, s.CatalogName, rt.catProps)
}

// resolver is the key resolver of the merge-on-read shards and commits: the
// worker's key index within key_index_memory_mb, partitioned like the shards when
// a key's shard is its hash alone (cdc.Sharder: shards_per_partition at or above
// num_shards, or unset), so that a worker holds in memory the index of the
// shards it processes.
func (s Spec) resolver() cdc.Resolver {
	parts := 1
	if s.ShardsPerPartition <= 0 || s.ShardsPerPartition >= s.NumShards {
		parts = s.NumShards
	}
	return cdc.Resolver{KeyColumns: s.EqualityColumns, IndexBytes: int64(s.KeyIndexMemoryMB) << 20, IndexParts: parts}
}
