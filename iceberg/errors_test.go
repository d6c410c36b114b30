package iceberg_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestErrorFormat: the errors Read, ReadChanges and Write return read
// "iceberg: <op> <table>: <cause>", with "iceberg: " once (the causes that catalogs,
// table creation and schema checks prefix themselves lose their prefix), and wrap
// their sentinel.
func TestErrorFormat(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, lc.Catalog, "db.strings", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.String, Required: true}))
	write := func(cfg iceberg.WriteConfig, rows any) error {
		_, s := beam.NewPipelineWithRoot()
		cfg.CatalogName, cfg.CatalogProperties = lc.Name, lc.Props
		_, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, rows))
		return err
	}
	tests := []struct {
		name string
		err  func() error
		want string // the start of the message
		is   error
	}{
		{"read a missing table", func() error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.missing", CatalogName: lc.Name, CatalogProperties: lc.Props})
			return err
		}, "iceberg: read db.missing: load table db.missing from catalog ", iceberg.ErrTableNotFound},
		{"read the changes of a missing table", func() error {
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{Table: "db.missing", CatalogName: lc.Name, CatalogProperties: lc.Props})
			return err
		}, "iceberg: read changes db.missing: load table db.missing from catalog ", iceberg.ErrTableNotFound},
		{"merge-on-read write to a missing table without equality columns", func() error {
			return write(iceberg.WriteConfig{Table: "db.missing", Mode: iceberg.MergeOnRead}, []DebeziumChange{{Op: "c", ID: 1, Seq: 1}})
		}, `iceberg: write db.missing: config key "equality_columns": table db.missing does not exist`, iceberg.ErrInvalidConfig},
		{"append rows that do not fit the table", func() error {
			return write(iceberg.WriteConfig{Table: "db.strings"}, events(1))
		}, `iceberg: write db.strings: invalid configuration: schema mismatch: column "id" is string in the table, long in the rows`, iceberg.ErrInvalidConfig},
		{"rows that are not structs", func() error {
			return write(iceberg.WriteConfig{Table: "db.strings", Mode: iceberg.MergeOnRead, EqualityColumns: []string{"id"}}, []int{1})
		}, "iceberg: write db.strings: invalid configuration: rows must be iceberg.Row or a struct, got int", iceberg.ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Count(msg, "iceberg: ") != 1 {
				t.Errorf("err = %q, want it to start with %q and say \"iceberg: \" once", msg, tc.want)
			}
		})
	}
}
