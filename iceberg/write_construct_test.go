package iceberg_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestWriteConfigMistakesAtConstruction: each configuration mistake the config and
// the rows' struct type can tell fails TryWrite with a ConfigError on its key that
// names the term and the closest column or property, and no table is created.
func TestWriteConfigMistakesAtConstruction(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	base := iceberg.WriteConfig{Table: "db.events", CatalogName: lc.Name, CatalogProperties: lc.Props}
	withProps := func(kv ...string) map[string]string {
		p := maps.Clone(lc.Props)
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	for _, tc := range []struct {
		name string
		cfg  func(c *iceberg.WriteConfig)
		elem any
		key  string
		want []string
	}{
		{"partition on a missing column", func(c *iceberg.WriteConfig) { c.PartitionFields = []string{"day(tss)"} }, Event{},
			iceberg.KeyPartitionFields, []string{`day(tss): no column "tss" in the rows`, "columns: id, region,"}},
		{"partition near a column", func(c *iceberg.WriteConfig) { c.PartitionFields = []string{"regoin"} }, Event{},
			iceberg.KeyPartitionFields, []string{`did you mean "region"?`}},
		{"partition transform on a wrong type", func(c *iceberg.WriteConfig) { c.PartitionFields = []string{"day(region)"} }, Event{},
			iceberg.KeyPartitionFields, []string{`day(region): transform day cannot apply to column "region" of type string`, "takes date and timestamp columns"}},
		{"sort on a missing column", func(c *iceberg.WriteConfig) { c.SortFields = []string{"amout desc"} }, Event{},
			iceberg.KeySortFields, []string{`no column "amout"`, `did you mean "amount"?`}},
		{"partition after keep", func(c *iceberg.WriteConfig) {
			c.Keep = []string{"id", "region"}
			c.PartitionFields = []string{"day(at)"}
		}, Event{}, iceberg.KeyPartitionFields, []string{`no column "at"`, "columns: id, region"}},
		{"misspelled catalog property", func(c *iceberg.WriteConfig) { c.CatalogProperties = withProps("warehose", "file:///x") }, Event{},
			iceberg.KeyCatalogProperties + ".warehose", []string{"unknown property for catalog type sql", `did you mean "warehouse"?`}},
		{"REST property on a SQL catalog", func(c *iceberg.WriteConfig) { c.CatalogProperties = withProps("header.x-goog-user-project", "p") }, Event{},
			iceberg.KeyCatalogProperties + ".header.x-goog-user-project", []string{"unknown property for catalog type sql"}},
		{"merge-on-read sequence path", func(c *iceberg.WriteConfig) {
			*c = debeziumEnvelopeConfig(lc, "db.events", "s")
			c.SequenceNumberColumn = "source.lsm"
			c.PartitionFields = nil
		}, CityEnvelope{}, iceberg.KeySequenceNumberColumn, []string{`did you mean "source.lsn"?`, `fields of "source": db, lsn`}},
		{"merge-on-read partition", func(c *iceberg.WriteConfig) {
			*c = debeziumEnvelopeConfig(lc, "db.events", "s")
			c.PartitionFields = []string{"bucket[4](cty)"}
		}, CityEnvelope{}, iceberg.KeyPartitionFields, []string{`no column "cty"`, `did you mean "city"?`, "columns: id, city, state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.cfg(&cfg)
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryWrite(s, cfg, beam.Create(s, tc.elem))
			var ce *iceberg.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !errors.Is(err, iceberg.ErrInvalidConfig) {
				t.Fatalf("TryWrite: %v, want a ConfigError on %s", err, tc.key)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("TryWrite: %v\nwant %q in it", err, w)
				}
			}
		})
	}
	for n, err := range lc.Catalog.ListTables(t.Context(), []string{"db"}) {
		if err == nil {
			t.Errorf("table %v created by a failed construction", n)
		}
	}
}

// TestWriteUncreatableTableFailsJob: Rows have no schema at construction, so a
// partition field their first row lacks is found when the write creates the table:
// the job fails with that reason instead of dead-lettering every row and succeeding.
func TestWriteUncreatableTableFailsJob(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	p, s := beam.NewPipelineWithRoot()
	rows := beam.Create(s, iceberg.NewRow([]string{"id", "city"}, []any{int64(1), "Oslo"}))
	cfg := iceberg.WriteConfig{Table: "db.cities", CatalogName: lc.Name, CatalogProperties: lc.Props,
		PartitionFields: []string{"day(city)"}}
	if _, err := iceberg.TryWrite(s, cfg, rows); err != nil {
		t.Fatalf("TryWrite: %v", err)
	}
	err := ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), `day(city): transform day cannot apply to column "city" of type string`) {
		t.Fatalf("run: %v, want the job to fail naming day(city)", err)
	}
}
