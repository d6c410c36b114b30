package iceberg

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/catalogs"
	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write"
)

// tryWriteMergeOnRead is TryWrite for mode merge-on-read; cfg is valid.
//
// Each row is a change of the table row with the same equality columns: its change
// type comes from change_type_column (mapped by change_type_map; without the column
// every row is an INSERT) and its order among the key's changes from
// sequence_number_column (a long). Per window, each key's changes collapse to their
// net effect: the committed row is deleted when upsert is on or when an
// UPDATE_BEFORE or DELETE appears, and the last INSERT or UPDATE_AFTER is written.
// A change stream without before-images (Debezium's "u" mapped to UPDATE_AFTER
// alone) therefore needs upsert: true, or updated keys would keep their old row too.
// Control columns may be dotted paths into struct fields ("source.lsn"). With only,
// each row is a change envelope (Debezium's before, after, op, source): the row
// image is the only field, or before_field for DELETE and UPDATE_BEFORE changes when
// it is not null, and the control columns are read from the envelope; an envelope
// whose change type and images are all null (a tombstone) is skipped and counted
// (tombstones_skipped). keep and drop project the row image. An INSERT without a
// sequence number (a snapshot read) orders before the key's numbered changes.
// Prior rows are deleted with deletion vectors on format-version 3 tables and with
// equality deletes on format-version 2 (delete_format overrides). A missing table is
// created with the equality columns as its identifier fields; equality_columns
// default to an existing table's identifier fields. Control columns are not written.
func tryWriteMergeOnRead(s beam.Scope, cfg WriteConfig, rows beam.PCollection) (WriteResult, error) {
	if err := checkMergeOnReadSupport(cfg); err != nil {
		return WriteResult{}, err
	}
	spec, err := newSpec(cfg)
	if err != nil {
		return WriteResult{}, err
	}
	var rowSchema *ibg.Schema
	if t := rows.Type().Type(); t != reflect.TypeFor[row.Row]() {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return WriteResult{}, config.OpErrorf("write", cfg.Table, "%w: rows must be iceberg.Row or a struct, got %s",
				ErrInvalidConfig, rows.Type())
		}
		if rowSchema, err = row.InferStructSchema(t); err != nil {
			return WriteResult{}, config.OpErrorf("write", cfg.Table, "%w: %w", ErrInvalidConfig, err)
		}
	}
	if cfg.NoCatalogAtConstruction {
		if err := catalogs.CheckLinked(cfg.CatalogName, cfg.CatalogProperties); err != nil {
			return WriteResult{}, config.WrapOp("write", cfg.Table, err)
		}
	}
	if err := write.PrepareTable(context.Background(), &spec, rowSchema, cfg.NoCatalogAtConstruction); err != nil {
		return WriteResult{}, err
	}
	return streamingWrite(s, cfg, spec.SinkID, rows, func(rows beam.PCollection) (beam.PCollection, beam.PCollection, error) {
		return write.MergeOnRead(s, spec, rows)
	})
}

// checkMergeOnReadSupport rejects settings the merge-on-read write does not
// implement, so that none is silently ignored.
func checkMergeOnReadSupport(cfg WriteConfig) error {
	var errs config.Errors
	if tpl, err := write.ParseTemplate(cfg.Table); err != nil {
		errs.Add(err)
	} else if !tpl.IsStatic() {
		errs.Add(unsupported(config.KeyTable, "merge-on-read writes need a single table, not a template"))
	}
	if cfg.AutoSharding {
		errs.Add(unsupported(config.KeyAutoSharding, "merge-on-read writes shard by key hash: set num_shards"))
	}
	if cfg.DirectWriteByteLimit != nil {
		errs.Add(unsupported(config.KeyDirectWriteByteLimit, "merge-on-read writes always shuffle changes by key"))
	}
	refuseUnimplemented(&errs, cfg)
	return errs.Err()
}
