// Package iceberg is icebeam: a Go-native Apache Beam connector for Apache Iceberg, the
// Go counterpart of Dataflow's managed Iceberg I/O, built on the Beam Go SDK, iceberg-go
// and arrow-go, without cgo.
//
// # Reading
//
// Read (and TryRead, which returns the error instead of panicking) reads one table: the
// current snapshot, or the one named by snapshot_id, as_of_timestamp or branch. A SQL
// filter (Calcite syntax) is pushed into the scan, keep or drop project columns at the
// file read, and deletion vectors, position deletes and equality deletes are applied.
// It emits Row values, or a struct type given with WithOutputType.
//
//	rows := iceberg.Read(s, iceberg.ReadConfig{
//		Table: "shop.orders", CatalogName: "lake", CatalogProperties: props,
//		Filter: "state = 'NY' AND amount > 100", Keep: []string{"order_id", "amount"},
//	})
//
// ReadBatches is the same read emitting Arrow record batches (RecordBatch) instead of
// rows, for pipelines that process columns; WriteBatches appends such batches to a
// table without converting them to rows.
//
// ReadChanges reads a table's changelog: the rows each snapshot inserted, deleted or
// updated, with _change_type, _commit_snapshot_id and _commit_snapshot_sequence_number.
// Both reads can be continuous (streaming: true): they poll the table every
// poll_interval_seconds and emit what each new snapshot on main adds (ReadChanges: its
// changes; Read: the rows of append snapshots), as an unbounded PCollection
// timestamped at commit time, until to_snapshot or to_timestamp if set.
//
//	live := iceberg.ReadChanges(s, iceberg.ChangesConfig{
//		Table: "shop.orders", CatalogName: "lake", CatalogProperties: props,
//		Streaming: true,
//	}, iceberg.WithChangesPollInterval(10*time.Second))
//
// # Writing
//
// Write (and TryWrite) writes a PCollection of rows (Row or any struct type) in one of
// two modes. Append writes every row as new data files and commits them once per table
// and window. MergeOnRead treats every row as a change (INSERT, UPDATE_BEFORE,
// UPDATE_AFTER, DELETE) to the row with the same equality_columns: each key's changes in
// a window collapse to their net effect, new rows become data files and replaced rows are
// deleted with Iceberg V3 deletion vectors (or equality deletes on format-version 2).
// Every commit carries an idempotency token named by sink_id, so a retried bundle or a
// restarted job with the same sink_id never commits twice.
//
// Both modes stream: with triggering_frequency_seconds, rows go into fixed event-time
// windows and each table is committed once per window, in window order, when the
// watermark passes the window's end. Rows that arrive after their window was committed
// are committed in a late-pane commit of that window, or, when later than
// allowed_lateness_seconds, go to the dead letter output; a restart that replays the
// source writes only what the earlier run did not commit; token_heartbeat_seconds keeps
// an idle sink's token alive across snapshot expiry.
//
//	res := iceberg.Write(s, iceberg.WriteConfig{
//		Table: "shop.orders", CatalogName: "lake", CatalogProperties: props,
//		Mode: iceberg.MergeOnRead, ChangeTypeColumn: "op",
//		ChangeTypeMap:   map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"},
//		Upsert:          true, // Debezium updates carry only the after-image
//		EqualityColumns: []string{"order_id"}, SinkID: "orders-cdc",
//	}, changes)
//
// # Maintenance
//
// Maintain (and TryMaintain) compacts a table, folding deletion vectors and other
// deletes into the rewritten files, expires old snapshots (keeping the snapshot with
// each recent sink's newest token) and removes orphan files, with the keys of
// MaintainConfig. A write can maintain its tables itself after its commits
// (maintenance_every_commits, maintenance_interval_seconds). Compaction is safe next to
// running writers: it never loses a concurrent delete.
//
// # Configuration
//
// ReadConfig and WriteConfig have one field per managed key (the Key constants). The
// same configuration can come as a managed-style map, or as YAML or JSON, through
// ParseReadConfig and ParseWriteConfig and their JSON and YAML variants; Map is the inverse.
// Parsing is strict: an unknown key, a wrong type or a contradiction is a ConfigError
// naming the key, every problem is reported at once, and all errors wrap ErrInvalidConfig.
// Options (WithFilter, WithMode, ...) change a config; Validate judges the result, and Read
// and Write run it again. Secrets in catalog_properties are never logged or put in errors.
//
// # Catalogs and storage
//
// This package links the rest catalog (with Google credentials for BigLake) and local
// files. Other catalog types and storage schemes register by import, so that a worker
// binary links only what its pipeline uses:
//
//	import (
//		_ "github.com/icebeam/icebeam/iceberg/catalogs/sql" // type=sql (SQLite, MySQL)
//		_ "github.com/icebeam/icebeam/iceberg/storage/gcs"  // gs://
//	)
//
// and likewise catalogs/postgres, catalogs/hadoop, catalogs/glue, catalogs/hive,
// storage/s3, or catalogs/all for every one. A configuration naming a catalog type or
// storage scheme whose package was not imported fails at construction with a
// ConfigError, wrapping ErrUnsupported, that names the import.
//
// # Construction without the catalog
//
// Read, ReadChanges, Maintain and Write reach the catalog while the pipeline is built,
// to check the config against the table, so the launching machine needs the catalog's
// credentials. WithoutCatalogAtConstruction (Write) and WithSchema (Read, ReadBatches)
// build without it, for Dataflow's --dry_run or a CI job: what needs the table is
// checked when the job runs. WithReadAfter makes a read wait for a write of the same
// pipeline:
//
//	res := iceberg.Write(s, cfg, changes, iceberg.WithoutCatalogAtConstruction())
//	rows := iceberg.Read(s, readCfg, iceberg.WithSchema(sc), iceberg.WithReadAfter(res.Snapshots))
//
// To run a pipeline and read its counters, see package jobrun.
package iceberg
