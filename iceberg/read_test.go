package iceberg_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/read"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// readFixture is a table with several data files and deletes of one kind.
type readFixture struct {
	name  string
	cat   *icebergtest.LocalCatalog
	ident string
	tbl   *table.Table
}

// newReadFixture creates db.t with 3 appends of 200 sample rows (ids 0..599) and then
// applies deletes of kind "dv" (two successive DV deletes on one file), "pos"
// (format-version 2 position deletes), "eq" (equality deletes on id) or "" (none).
func newReadFixture(t *testing.T, version int, partitioned bool, deletes string) readFixture {
	t.Helper()
	cat := icebergtest.NewLocalCatalog(t)
	sc := icebergtest.SampleSchema()
	opts := []icebergtest.TableOption{icebergtest.WithFormatVersion(version)}
	if partitioned {
		opts = append(opts, icebergtest.WithPartitionSpec(ibg.NewPartitionSpec(
			ibg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "bool_col", Transform: ibg.IdentityTransform{}},
			ibg.PartitionField{SourceIDs: []int{1}, FieldID: 1001, Name: "id_bucket", Transform: ibg.BucketTransform{NumBuckets: 4}},
		)))
	}
	ident := "db.t"
	tbl := icebergtest.CreateTable(t, cat.Catalog, ident, sc, opts...)
	rows := icebergtest.SampleRows(600, 42)
	for i := 0; i < 3; i++ {
		tbl = icebergtest.AppendRecords(t, tbl, icebergtest.Records(t, sc, rows[i*200:(i+1)*200]))
	}
	files := icebergtest.DataFiles(t, tbl)
	// The largest files first, so the positions below exist in every layout.
	slices.SortFunc(files, func(a, b ibg.DataFile) int {
		return cmp.Or(cmp.Compare(b.Count(), a.Count()), cmp.Compare(a.FilePath(), b.FilePath()))
	})
	switch deletes {
	case "dv":
		tbl = icebergtest.DeleteRowsDV(t, tbl, map[string][]int64{files[0].FilePath(): {0, 3, 5}, files[1].FilePath(): {1}})
		tbl = icebergtest.DeleteRowsDV(t, tbl, map[string][]int64{files[0].FilePath(): {7, 9}})
	case "pos":
		tbl = icebergtest.DeletePositionsV2(t, tbl, map[string][]int64{files[0].FilePath(): {0, 2, 4}, files[2].FilePath(): {1}})
	case "eq":
		keys := icebergtest.Records(t, ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true}),
			[][]any{{int64(3)}, {int64(250)}, {int64(599)}})
		tbl = icebergtest.DeleteEquality(t, tbl, []string{"id"}, keys)
	}
	if version >= 3 {
		icebergtest.RequireValid(t, tbl)
	}
	return readFixture{name: fmt.Sprintf("v%d/partitioned=%v/deletes=%s", version, partitioned, deletes), cat: cat, ident: ident, tbl: tbl}
}

func (f readFixture) config() iceberg.ReadConfig {
	return iceberg.ReadConfig{Table: f.ident, CatalogName: f.cat.Name, CatalogProperties: f.cat.Props}
}

// rowsOf converts an arrow table (iceberg-go's own scan of a table with schema sc) to
// rows, the expected output.
func rowsOf(t *testing.T, sc *ibg.Schema, tbl arrow.Table) []any {
	t.Helper()
	rdr := array.NewTableReader(tbl, 1024)
	defer rdr.Release()
	var out []any
	var conv *row.ArrowReader
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if conv == nil {
			var err error
			if conv, err = row.NewArrowReader(rec.Schema(), sc); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := conv.AppendRows(rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, r)
		}
	}
	return out
}

// wantRows is what iceberg-go's own scan of f returns for the SQL filter, as rows.
func wantRows(t *testing.T, f readFixture, filter string, cols ...string) []any {
	t.Helper()
	expr, err := read.ParseFilter(filter, f.tbl.Schema())
	if err != nil {
		t.Fatalf("ParseFilter(%q): %v", filter, err)
	}
	return rowsOf(t, f.tbl.Schema(), icebergtest.ReadAll(t, f.tbl, expr, cols...))
}

// filterCases cover every operator of the filter grammar over the sample schema.
var filterCases = []string{
	"",
	"id = 17",
	"id <> 17 AND id < 40",
	"id != 5 AND id <= 10",
	"id > 590",
	"id >= 595 OR id < 3",
	"id IN (1, 2, 3, 250, 599, 1000)",
	"id NOT IN (1, 2, 3) AND id < 8",
	"id BETWEEN 100 AND 110",
	"id NOT BETWEEN 5 AND 595",
	"NOT (id > 3)",
	"bool_col IS NULL",
	"int_col IS NOT NULL AND int_col < 0",
	"bool_col = TRUE AND (long_col > 0 OR double_col < 0)",
	"float_col > 0.5",
	"decimal_col > 100.25",
	"decimal_col BETWEEN -500 AND 500.5",
	"date_col >= DATE '2024-06-01'",
	"date_col < '2022-01-01'",
	"ts_col > TIMESTAMP '2024-07-01 00:00:00'",
	"tstz_col <= TIMESTAMP '2024-03-01 12:00:00'",
	"time_col < TIME '06:00:00'",
	"string_col LIKE 's-1%'",
	"string_col NOT LIKE 's-2%' AND id < 50",
	"string_col = 's-7-'' quoted' OR string_col >= 's-59'",
	"struct_col.a > 50",
	"struct_col.b IS NULL",
	`"string_col" IN ('s-1', 's-2')`,
}

func TestReadMatchesIcebergGoScan(t *testing.T) {
	fixtures := []readFixture{
		newReadFixture(t, 3, false, "dv"),
		newReadFixture(t, 3, true, "dv"),
		newReadFixture(t, 2, false, "pos"),
		newReadFixture(t, 2, true, "pos"),
		newReadFixture(t, 2, false, "eq"),
		newReadFixture(t, 3, false, "eq"),
	}
	for _, f := range fixtures {
		for i, filter := range filterCases {
			if f.name != fixtures[0].name && i%3 != 0 {
				continue // every filter on the first fixture, a third of them on the others
			}
			t.Run(fmt.Sprintf("%s/%d", f.name, i), func(t *testing.T) {
				expr, err := read.ParseFilter(filter, f.tbl.Schema())
				if err != nil {
					t.Fatalf("ParseFilter(%q): %v", filter, err)
				}
				want := rowsOf(t, f.tbl.Schema(), icebergtest.ReadAll(t, f.tbl, expr))
				cfg := f.config()
				cfg.Filter = filter
				p, s := beam.NewPipelineWithRoot()
				got := iceberg.Read(s, cfg)
				passert.Equals(s, got, want...)
				ptest.RunAndValidate(t, p)
			})
		}
	}
}

func TestReadKeepDrop(t *testing.T) {
	f := newReadFixture(t, 3, false, "dv")
	cases := []struct {
		name       string
		keep, drop []string
		filter     string
		wantCols   []string
	}{
		{name: "keep", keep: []string{"id", "string_col"}, wantCols: []string{"id", "string_col"}},
		{name: "keep with filter on another column", keep: []string{"id"}, filter: "int_col > 0", wantCols: []string{"id"}},
		{name: "drop", drop: []string{"struct_col", "list_col", "map_col", "binary_col"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expr, err := read.ParseFilter(c.filter, f.tbl.Schema())
			if err != nil {
				t.Fatal(err)
			}
			cols := c.wantCols
			if len(c.drop) > 0 {
				for _, fld := range f.tbl.Schema().Fields() {
					if !contains(c.drop, fld.Name) {
						cols = append(cols, fld.Name)
					}
				}
			}
			want := rowsOf(t, f.tbl.Schema(), icebergtest.ReadAll(t, f.tbl, expr, cols...))
			cfg := f.config()
			cfg.Keep, cfg.Drop, cfg.Filter = c.keep, c.drop, c.filter
			p, s := beam.NewPipelineWithRoot()
			got := iceberg.Read(s, cfg)
			passert.Equals(s, got, want...)
			// The filter's columns are read to evaluate it but not emitted.
			names := beam.ParDo(s, columnNames, got)
			wantNames := make([]any, len(want))
			for i := range wantNames {
				wantNames[i] = strings.Join(cols, ",")
			}
			passert.Equals(s, names, wantNames...)
			ptest.RunAndValidate(t, p)
		})
	}
}

func init() { register.Function1x1(columnNames) }

// columnNames returns the comma-joined column names of r.
func columnNames(r row.Row) string { return strings.Join(r.Names(), ",") }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestReadErrors(t *testing.T) {
	f := newReadFixture(t, 3, false, "")
	cases := []struct {
		name   string
		mutate func(*iceberg.ReadConfig)
		opts   []iceberg.ReadOption
		want   []string // substrings of the error
		is     error
	}{
		{name: "keep with drop", mutate: func(c *iceberg.ReadConfig) { c.Keep, c.Drop = []string{"id"}, []string{"int_col"} },
			want: []string{"keep", "drop"}, is: iceberg.ErrInvalidConfig},
		{name: "unknown keep column", mutate: func(c *iceberg.ReadConfig) { c.Keep = []string{"idd"} },
			want: []string{`"keep"`, `"idd"`, `did you mean "id"`}, is: iceberg.ErrInvalidConfig},
		{name: "unknown drop column", mutate: func(c *iceberg.ReadConfig) { c.Drop = []string{"nope"} },
			want: []string{`"drop"`, `"nope"`}, is: iceberg.ErrInvalidConfig},
		{name: "unknown filter column", mutate: func(c *iceberg.ReadConfig) { c.Filter = "idx = 3" },
			want: []string{`"filter"`, "idx"}, is: iceberg.ErrInvalidConfig},
		{name: "malformed filter", mutate: func(c *iceberg.ReadConfig) { c.Filter = "id = = 3" },
			want: []string{`"filter"`, "position"}, is: iceberg.ErrInvalidConfig},
		{name: "wrong literal type", mutate: func(c *iceberg.ReadConfig) { c.Filter = "int_col = 'abc'" },
			want: []string{`"filter"`, "int_col"}, is: iceberg.ErrInvalidConfig},
		{name: "missing table", mutate: func(c *iceberg.ReadConfig) { c.Table = "db.missing" },
			want: []string{"db.missing"}, is: iceberg.ErrTableNotFound},
		{name: "unknown snapshot", mutate: func(c *iceberg.ReadConfig) { c.SnapshotID = ptr(int64(12345)) },
			want: []string{"snapshot_id", "12345"}, is: iceberg.ErrInvalidConfig},
		{name: "unreachable catalog", mutate: func(c *iceberg.ReadConfig) {
			c.CatalogProperties = map[string]string{"type": "rest", "uri": "http://127.0.0.1:1", "credential": "client:s3cr3t-value"}
		}, want: []string{"db.t"}},
		{name: "missing catalog type", mutate: func(c *iceberg.ReadConfig) { c.CatalogProperties = map[string]string{"uri": "x"} },
			want: []string{"catalog_properties"}, is: iceberg.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.config()
			c.mutate(&cfg)
			_, s := beam.NewPipelineWithRoot()
			_, err := iceberg.TryRead(s, cfg, c.opts...)
			if err == nil {
				t.Fatal("TryRead: no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error leaks a secret: %q", err)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

var _ = context.Background

// sampleRecord is a typed view of some sample columns: tags, beam tags and names.
type sampleRecord struct {
	ID         int64   `iceberg:"id"`
	Int        *int32  `iceberg:"int_col"`
	Str        *string `beam:"string_col"`
	Double_col *float64
	Date       *time.Time `iceberg:"date_col"`
	TsTz       *time.Time `iceberg:"tstz_col"`
}

func TestReadTypedOutputEqualsRows(t *testing.T) {
	f := newReadFixture(t, 3, true, "dv")
	cols := []string{"id", "int_col", "string_col", "double_col", "date_col", "tstz_col"}
	filter := "id < 300"
	expr, err := read.ParseFilter(filter, f.tbl.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, v := range rowsOf(t, f.tbl.Schema(), icebergtest.ReadAll(t, f.tbl, expr, cols...)) {
		r := v.(row.Row)
		rec := sampleRecord{}
		id, _ := r.Get("id")
		rec.ID = id.(int64)
		if v, _ := r.Get("int_col"); v != nil {
			rec.Int = ptr(v.(int32))
		}
		if v, _ := r.Get("string_col"); v != nil {
			rec.Str = ptr(v.(string))
		}
		if v, _ := r.Get("double_col"); v != nil {
			rec.Double_col = ptr(v.(float64))
		}
		if v, _ := r.Get("date_col"); v != nil {
			rec.Date = ptr(time.Unix(int64(v.(ibg.Date))*86400, 0).UTC())
		}
		if v, _ := r.Get("tstz_col"); v != nil {
			rec.TsTz = ptr(time.UnixMicro(int64(v.(ibg.Timestamp))).UTC())
		}
		want = append(want, rec)
	}
	if len(want) < 100 {
		t.Fatalf("fixture too small: %d rows", len(want))
	}
	cfg := f.config()
	cfg.Keep, cfg.Filter = cols, filter
	p, s := beam.NewPipelineWithRoot()
	got := iceberg.Read(s, cfg, iceberg.WithOutputType(reflect.TypeOf(sampleRecord{})))
	passert.Equals(s, got, want...)
	ptest.RunAndValidate(t, p)
}

func TestReadTypedOutputMismatch(t *testing.T) {
	f := newReadFixture(t, 3, false, "")
	type bad struct {
		ID      int64  `iceberg:"id"`
		Missing string `iceberg:"no_such_column"`
	}
	_, s := beam.NewPipelineWithRoot()
	_, err := iceberg.TryRead(s, f.config(), iceberg.WithOutputType(reflect.TypeOf(bad{})))
	if err == nil || !strings.Contains(err.Error(), "no_such_column") || !errors.Is(err, iceberg.ErrInvalidConfig) {
		t.Fatalf("TryRead with a struct field without column: %v", err)
	}
}
