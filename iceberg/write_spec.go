package iceberg

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write"
	"github.com/icebeam/icebeam/iceberg/write/maintain"
)

// spec returns the plan of the write's DoFns for c (which must be valid) and sinkID
// (not empty): all that the code below the facade sees of the configuration. A
// write.target-file-size-bytes in table_properties or write_properties that is not a
// positive integer is an error naming the key.
func (c WriteConfig) spec(sinkID string) (write.Spec, error) {
	if sinkID == "" {
		return write.Spec{}, config.Errorf(KeySinkID, "empty sink id")
	}
	s := write.Spec{Table: c.Table, CatalogName: c.CatalogName, SinkID: sinkID, RunID: uuid.NewString(),
		PartitionFields: slices.Clone(c.PartitionFields), SortFields: slices.Clone(c.SortFields),
		Keep: slices.Clone(c.Keep), Drop: slices.Clone(c.Drop), Only: c.Only,
		Hash: c.DistributionMode == DistributionHash, AutoShard: c.AutoSharding, EvolveSchema: c.EvolveSchema,
		Maintenance: c.inlineMaintenance()}
	s.CatalogProps, s.TableProps = maps.Clone(c.CatalogProperties), maps.Clone(c.TableProperties)
	s.WriteProps, s.SnapshotProps = maps.Clone(c.WriteProperties), maps.Clone(c.SnapshotProperties)
	var errs [2]error
	_, errs[0] = write.TargetFileSize(KeyTableProperties, c.TableProperties)
	s.TargetFileSizeBytes, errs[1] = write.TargetFileSize(KeyWriteProperties, c.WriteProperties)
	if err := errors.Join(errs[:]...); err != nil {
		return write.Spec{}, err
	}
	if c.TableCacheRefreshIntervalSeconds != nil {
		s.TableCacheRefreshSeconds = *c.TableCacheRefreshIntervalSeconds
	}
	if c.MaximumTableCacheSize != nil {
		s.TableCacheSize = *c.MaximumTableCacheSize
	}
	if c.DirectWriteByteLimit != nil {
		s.DirectLimit = int64(*c.DirectWriteByteLimit)
	}
	if c.TriggeringFrequencySeconds != nil {
		s.Windowed = true
		s.LatenessMs = int64(c.Lateness() / time.Millisecond)
	}
	if c.Mode == MergeOnRead {
		r := c.Resolved()
		s.MergeOnRead = true
		s.ChangeTypeColumn, s.ChangeTypeMap = r.ChangeTypeColumn, maps.Clone(r.ChangeTypeMap)
		s.SequenceNumberColumn, s.EqualityColumns = r.SequenceNumberColumn, slices.Clone(r.EqualityColumns)
		s.Only, s.BeforeField = r.Only, r.BeforeField
		s.Upsert, s.DeleteFormat = r.Upsert, string(r.DeleteFormat)
		s.NumShards, s.ShardsPerPartition, s.SorterMemoryMB = *r.NumShards, *r.ShardsPerPartition, *r.SorterMemoryMB
		s.KeyIndexMemoryMB = *r.KeyIndexMemoryMB
	}
	return s, nil
}

// inlineMaintenance returns the maintenance after the write's commits (the
// maintenance_* keys, expire_older_than_seconds and retain_last).
func (c WriteConfig) inlineMaintenance() maintain.InlineMaintenance {
	var m maintain.InlineMaintenance
	if c.MaintenanceEveryCommits != nil {
		m.EveryCommits = *c.MaintenanceEveryCommits
	}
	if c.MaintenanceIntervalSeconds != nil {
		m.Interval = time.Duration(*c.MaintenanceIntervalSeconds) * time.Second
	}
	m.Expire = c.ExpireOlderThanSeconds != nil || c.RetainLast != nil
	m.Expiry = maintain.NewExpireOptions(c.ExpireOlderThanSeconds, c.RetainLast)
	return m
}
