package iceberg_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// VariantDoc is a struct element with a variant field.
type VariantDoc struct {
	ID  int64           `iceberg:"id"`
	Doc iceberg.Variant `iceberg:"doc"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[VariantDoc]())
	register.Function1x1(describeRow)
	register.Function1x1(describeVariantDoc)
	register.Function2x0(describeBatch)
}

// describeRow formats a row with the Go type of every value, variants as their Go
// values (so an int64 and a decimal, or a variant null and a null, differ).
func describeRow(r iceberg.Row) string { return describeValue(r) }

// describeVariantDoc formats a VariantDoc as describeRow formats its row: a null
// column reads into the zero Variant.
func describeVariantDoc(d VariantDoc) string {
	var doc any = d.Doc
	if d.Doc.IsZero() {
		doc = nil
	}
	return describeValue(iceberg.NewRow([]string{"id", "doc"}, []any{d.ID, doc}))
}

// describeBatch formats each record of a ReadBatches batch as describeRow does, the
// column types taken from the Arrow schema (a variant column must arrive as the
// variant extension type).
func describeBatch(b iceberg.RecordBatch, emit func(string)) {
	rd, err := row.NewArrowReader(b.Schema(), nil)
	if err != nil {
		panic(err)
	}
	rows, err := rd.AppendRows(b, nil)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		emit(describeRow(r))
	}
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case iceberg.Variant:
		if x.IsZero() {
			return "zero-variant"
		}
		return "variant(" + describeGo(x.Value()) + ")"
	case iceberg.Row:
		var parts []string
		for i, n := range x.Names() {
			parts = append(parts, n+"="+describeValue(x.Value(i)))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, describeValue(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func describeGo(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, k+":"+describeGo(x[k]))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, describeGo(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case time.Time:
		return "time.Time(" + x.UTC().Format(time.RFC3339Nano) + ")"
	case ibg.Decimal:
		return "decimal(" + x.String() + ")"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func variantOf(t *testing.T, v any) iceberg.Variant {
	t.Helper()
	x, err := iceberg.NewVariant(v)
	if err != nil {
		t.Fatalf("NewVariant(%v): %v", v, err)
	}
	return x
}

// sampleVariants are variants of every kind: nested objects and arrays, each
// primitive type, an empty object and array, and a variant null.
func sampleVariants(t *testing.T) []iceberg.Variant {
	at := time.Date(2024, 5, 1, 12, 30, 0, 123456000, time.UTC)
	parsed, err := iceberg.ParseVariantJSON(`{"user": {"name": "Zoë", "tags": ["a", "b"], "score": 12.75}, "events": [{"k": 1}, {"k": 2, "extra": null}]}`)
	if err != nil {
		t.Fatal(err)
	}
	return []iceberg.Variant{
		variantOf(t, map[string]any{
			"name": "order-1", "qty": int64(3), "price": ibg.Decimal{Val: decimal128.FromI64(1999), Scale: 2},
			"ok": true, "ratio": 0.25, "f32": float32(1.5), "big": int64(1) << 50,
			"when": at, "local": ibg.Timestamp(at.UnixMicro()), "nanos": ibg.TimestampNano(at.UnixNano() + 7),
			"day": ibg.Date(19844), "clock": ibg.Time(45_000_000_001), "raw": []byte{0, 1, 0xff},
			"id":     uuid.MustParse("0190c6a8-1c2b-7d3e-8f40-112233445566"),
			"items":  []any{map[string]any{"sku": "a", "n": int64(1)}, map[string]any{"sku": "b", "n": nil}},
			"nested": map[string]any{"deeper": map[string]any{"list": []any{[]any{int64(1), "x"}, nil}}},
			"empty":  map[string]any{}, "none": []any{},
		}),
		parsed,
		variantOf(t, []any{int64(1), "two", 3.5, nil, false}),
		variantOf(t, "just a string"),
		variantOf(t, int64(-42)),
		variantOf(t, nil), // a variant null: not a null column value
	}
}

// variantTableSchema has variant columns at the top level and in a struct.
func variantTableSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "v", Type: ibg.VariantType{}},
		ibg.NestedField{ID: 4, Name: "s", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 6, Name: "label", Type: ibg.PrimitiveTypes.String},
			{ID: 7, Name: "inner", Type: ibg.VariantType{}},
		}}},
	)
}

// readDescribed reads the table with Read (rows), Read into structs when outType is
// set, and ReadBatches, and checks that each gives want (describeRow strings).
func readDescribed(t *testing.T, lc *icebergtest.LocalCatalog, name string, outType reflect.Type, want []string) {
	t.Helper()
	var wantAny []any
	for _, w := range want {
		wantAny = append(wantAny, w)
	}
	cfg := iceberg.ReadConfig{Table: name, CatalogName: lc.Name, CatalogProperties: lc.Props, Filter: "id <> 999"}
	p, s := beam.NewPipelineWithRoot()
	passert.Equals(s.Scope("rows"), beam.ParDo(s, describeRow, iceberg.Read(s, cfg)), wantAny...)
	passert.Equals(s.Scope("batches"), beam.ParDo(s, describeBatch, iceberg.ReadBatches(s, cfg)), wantAny...)
	if outType != nil {
		typed := iceberg.Read(s, cfg, iceberg.WithOutputType(outType))
		passert.Equals(s.Scope("structs"), beam.ParDo(s, describeVariantDoc, typed), wantAny...)
	}
	ptest.RunAndValidate(t, p)
}

func loadValid(t *testing.T, lc *icebergtest.LocalCatalog, name string) *table.Table {
	t.Helper()
	tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier(strings.Split(name, ".")))
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	return tbl
}

// TestVariantRoundTripRows: Rows with variants (nested objects and arrays, every
// primitive, variant nulls and nulls) written with Write to a format-version 3 table,
// at the top level and in a struct, read back equal with Read and ReadBatches; a
// plain Go value in a variant column is written as a variant; a value that cannot be
// a variant is dead-lettered naming the column. A table that asks iceberg-go to shred
// variants (write.parquet.shred-variants) is written unshredded when write_properties
// turn shredding off.
func TestVariantRoundTripRows(t *testing.T) {
	for _, shredOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("shredding_turned_off=%v", shredOff), func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			var opts []icebergtest.TableOption
			cfg := iceberg.WriteConfig{Table: "db.docs", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-rows"}
			if shredOff {
				opts = append(opts, icebergtest.WithProperties(map[string]string{"write.parquet.shred-variants": "true"}))
				cfg.WriteProperties = map[string]string{"write.parquet.shred-variants": "false"}
			}
			icebergtest.CreateTable(t, lc.Catalog, "db.docs", variantTableSchema(), opts...)
			names := []string{"id", "v", "s"}
			inner := iceberg.NewRowSchema([]string{"label", "inner"}, nil)
			var rows []iceberg.Row
			var want []string
			for i, v := range append(shapedVariants(t), sampleVariants(t)...) {
				r := iceberg.NewRow(names, []any{int64(i), v, iceberg.RowOf(inner, []any{fmt.Sprint("l", i), v})})
				rows = append(rows, r)
				want = append(want, describeRow(r))
			}
			// nulls everywhere
			r := iceberg.NewRow(names, []any{int64(100), nil, iceberg.RowOf(inner, []any{nil, nil})})
			rows, want = append(rows, r), append(want, describeRow(r))
			// plain Go values in variant columns become variants
			plain := []iceberg.MapEntry{{Key: "sku", Value: "plain"}, {Key: "qty", Value: int32(7)}}
			rows = append(rows, iceberg.NewRow(names, []any{int64(101), plain, iceberg.RowOf(inner, []any{nil, "text"})}))
			want = append(want, describeRow(iceberg.NewRow(names, []any{int64(101), variantOf(t, map[string]any{"sku": "plain", "qty": int64(7)}),
				iceberg.RowOf(inner, []any{nil, variantOf(t, "text")})})))
			// a map with a non-string key cannot be a variant object
			rows = append(rows, iceberg.NewRow(names, []any{int64(102), []iceberg.MapEntry{{Key: int64(1), Value: "x"}}, nil}))

			snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
			if len(dead) != 1 || !strings.Contains(dead[0].Row, "id: 102") || !strings.Contains(dead[0].Reason, `column "v"`) ||
				!strings.Contains(dead[0].Reason, "variant") {
				t.Fatalf("dead letters %+v, want one for id 102 naming column v", dead)
			}
			if len(snaps) != 1 || snaps[0].RowsAdded != int64(len(want)) {
				t.Fatalf("snapshots %+v, want one adding %d rows", snaps, len(want))
			}
			tbl := loadValid(t, lc, "db.docs")
			if cols := leafColumns(t, tbl); slices.ContainsFunc(cols, func(c string) bool { return strings.Contains(c, "typed_value") }) {
				t.Fatalf("data files are shredded: leaf columns %v", cols)
			}
			readDescribed(t, lc, "db.docs", nil, want)
		})
	}
}

// shapedVariants are objects of one shape, the kind iceberg-go's shredding would
// shred by (as objects with an array field).
func shapedVariants(t *testing.T) []iceberg.Variant {
	var vs []iceberg.Variant
	for i := range 12 {
		vs = append(vs, variantOf(t, map[string]any{"sku": fmt.Sprint("s", i), "qty": int64(i),
			"price": ibg.Decimal{Val: decimal128.FromI64(int64(100 + i)), Scale: 2}, "tags": []any{"a", fmt.Sprint(i)}}))
	}
	return vs
}

// TestVariantShreddingRefused: a write to a table whose variant columns iceberg-go
// would shred fails with an error naming the property, rather than writing what
// arrow-go v18.8.0's shredding gets wrong (an object without the array field of the
// other objects read back with "tags": [null]).
func TestVariantShreddingRefused(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, lc.Catalog, "db.shred", variantTableSchema(),
		icebergtest.WithProperties(map[string]string{"write.parquet.shred-variants": "true"}))
	var rows []iceberg.Row
	for i, v := range append(shapedVariants(t), variantOf(t, map[string]any{"sku": "no tags"})) {
		rows = append(rows, iceberg.NewRow([]string{"id", "v"}, []any{int64(i), v}))
	}
	p, s := beam.NewPipelineWithRoot()
	res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: "db.shred", CatalogName: lc.Name, CatalogProperties: lc.Props}, beam.CreateList(s, rows))
	if err != nil {
		t.Fatal(err)
	}
	passert.Count(s, res.Snapshots, "snapshots", 0)
	err = ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), "write.parquet.shred-variants") || !strings.Contains(err.Error(), `"v"`) {
		t.Fatalf("write error %v, want one naming write.parquet.shred-variants and column v", err)
	}
	if files := icebergtest.DataFiles(t, loadValid(t, lc, "db.shred")); len(files) != 0 {
		t.Fatalf("%d data files committed", len(files))
	}
}

// leafColumns returns the Parquet leaf column paths of the table's data files.
func leafColumns(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, df := range icebergtest.DataFiles(t, tbl) {
		f, err := fs.Open(df.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(f.(parquet.ReaderAtSeeker))
		if err != nil {
			t.Fatal(err)
		}
		sc := pf.MetaData().Schema
		for i := range sc.NumColumns() {
			paths = append(paths, sc.Column(i).Path())
		}
		pf.Close()
		f.Close()
	}
	if len(paths) == 0 {
		t.Fatal("no data files")
	}
	return paths
}

// TestVariantRoundTripCreatedTable: a write creates the table from Rows whose column
// holds Variants (a variant column), and from structs with a Variant field (an
// optional variant column, the zero Variant null); Read, Read into the struct type and
// ReadBatches give the values back.
func TestVariantRoundTripCreatedTable(t *testing.T) {
	samples := sampleVariants(t)
	t.Run("rows", func(t *testing.T) {
		lc := icebergtest.NewLocalCatalog(t)
		var rows []iceberg.Row
		var want []string
		for i, v := range samples {
			r := iceberg.NewRow([]string{"id", "doc"}, []any{int64(i), v})
			rows, want = append(rows, r), append(want, describeRow(r))
		}
		r := iceberg.NewRow([]string{"id", "doc"}, []any{int64(50), nil})
		rows, want = append(rows, r), append(want, describeRow(r))
		cfg := iceberg.WriteConfig{Table: "db.created", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-created"}
		_, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
		if len(dead) != 0 {
			t.Fatalf("dead letters %+v", dead)
		}
		tbl := loadValid(t, lc, "db.created")
		if f, ok := tbl.Schema().FindFieldByName("doc"); !ok || !f.Type.Equals(ibg.VariantType{}) {
			t.Fatalf("column doc is %v, want variant", f.Type)
		}
		if tbl.Metadata().Version() != 3 {
			t.Fatalf("format version %d, want 3", tbl.Metadata().Version())
		}
		readDescribed(t, lc, "db.created", reflect.TypeFor[VariantDoc](), want)
	})
	t.Run("structs", func(t *testing.T) {
		lc := icebergtest.NewLocalCatalog(t)
		var docs []VariantDoc
		var want []string
		for i, v := range samples {
			docs = append(docs, VariantDoc{ID: int64(i), Doc: v})
			want = append(want, describeRow(iceberg.NewRow([]string{"id", "doc"}, []any{int64(i), v})))
		}
		docs = append(docs, VariantDoc{ID: 50}) // the zero Variant: null
		want = append(want, describeRow(iceberg.NewRow([]string{"id", "doc"}, []any{int64(50), nil})))
		cfg := iceberg.WriteConfig{Table: "db.structs", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-structs"}
		_, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, docs) })
		if len(dead) != 0 {
			t.Fatalf("dead letters %+v", dead)
		}
		tbl := loadValid(t, lc, "db.structs")
		if f, ok := tbl.Schema().FindFieldByName("doc"); !ok || !f.Type.Equals(ibg.VariantType{}) || f.Required {
			t.Fatalf("column doc is %v (required %v), want optional variant", f.Type, f.Required)
		}
		readDescribed(t, lc, "db.structs", reflect.TypeFor[VariantDoc](), want)
	})
}

// TestVariantInCollectionRead: a variant inside a list or a map is written, but
// iceberg-go v0.7.0 cannot read one back: Read and ReadBatches refuse such a column at
// construction with ErrUnsupported, naming it, and read the table without it.
func TestVariantInCollectionRead(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "vs", Type: &ibg.ListType{ElementID: 5, Element: ibg.VariantType{}}},
		ibg.NestedField{ID: 3, Name: "vm", Type: &ibg.MapType{KeyID: 6, KeyType: ibg.PrimitiveTypes.String, ValueID: 7, ValueType: ibg.VariantType{}}},
		ibg.NestedField{ID: 4, Name: "v", Type: ibg.VariantType{}},
	)
	icebergtest.CreateTable(t, lc.Catalog, "db.coll", sc)
	v := variantOf(t, map[string]any{"a": []any{int64(1)}})
	names := []string{"id", "vs", "vm", "v"}
	rows := []iceberg.Row{
		iceberg.NewRow(names, []any{int64(1), []any{v, nil}, []iceberg.MapEntry{{Key: "k", Value: v}}, v}),
		iceberg.NewRow(names, []any{int64(2), nil, nil, nil}),
	}
	cfg := iceberg.WriteConfig{Table: "db.coll", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-coll"}
	if snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) }); len(dead) != 0 || len(snaps) != 1 {
		t.Fatalf("snapshots %+v, dead letters %+v", snaps, dead)
	}
	loadValid(t, lc, "db.coll")

	rcfg := iceberg.ReadConfig{Table: "db.coll", CatalogName: lc.Name, CatalogProperties: lc.Props}
	for name, try := range map[string]func(beam.Scope, iceberg.ReadConfig) error{
		"Read":        func(s beam.Scope, c iceberg.ReadConfig) error { _, err := iceberg.TryRead(s, c); return err },
		"ReadBatches": func(s beam.Scope, c iceberg.ReadConfig) error { _, err := iceberg.TryReadBatches(s, c); return err },
	} {
		_, s := beam.NewPipelineWithRoot()
		err := try(s, rcfg)
		if !errors.Is(err, iceberg.ErrUnsupported) || !strings.Contains(err.Error(), `"vs"`) || !strings.Contains(err.Error(), `"vm"`) {
			t.Errorf("%s: error %v, want ErrUnsupported naming vs and vm", name, err)
		}
	}
	rcfg.Drop = []string{"vs", "vm"}
	want := []string{
		describeRow(iceberg.NewRow([]string{"id", "v"}, []any{int64(1), v})),
		describeRow(iceberg.NewRow([]string{"id", "v"}, []any{int64(2), nil})),
	}
	p, s := beam.NewPipelineWithRoot()
	passert.Equals(s, beam.ParDo(s, describeRow, iceberg.Read(s, rcfg)), want[0], want[1])
	ptest.RunAndValidate(t, p)
}

// TestUnknownColumnRoundTrip: a format-version 3 table with an unknown column takes
// rows whose value there is null (Write of Rows), reads back nulls (Read, ReadBatches),
// and dead-letters a row with a value there, naming the column. A typed RowSchema
// with an unknown column creates the table with it.
func TestUnknownColumnRoundTrip(t *testing.T) {
	names := []string{"id", "nothing", "name"}
	for _, created := range []bool{false, true} {
		t.Run(fmt.Sprintf("created_by_write=%v", created), func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			rs := iceberg.NewRowSchema(names, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Unknown, ibg.PrimitiveTypes.String})
			if !created {
				icebergtest.CreateTable(t, lc.Catalog, "db.unk", ibg.NewSchema(0,
					ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
					ibg.NestedField{ID: 2, Name: "nothing", Type: ibg.PrimitiveTypes.Unknown},
					ibg.NestedField{ID: 3, Name: "name", Type: ibg.PrimitiveTypes.String}))
				rs = iceberg.NewRowSchema(names, nil) // untyped rows
			}
			rows := []iceberg.Row{
				iceberg.RowOf(rs, []any{int64(1), nil, "a"}),
				iceberg.RowOf(rs, []any{int64(2), nil, nil}),
			}
			bad := []iceberg.Row{iceberg.NewRow(names, []any{int64(3), "x", "c"})}
			if created { // the first bundle creates the table: write the bad row afterwards
				bad = nil
			}
			cfg := iceberg.WriteConfig{Table: "db.unk", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "unknown"}
			snaps, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, append(rows, bad...)) })
			if created {
				cfg.SinkID = "unknown-bad"
				_, dead = runMOR(t, cfg, func(s beam.Scope) beam.PCollection {
					return beam.CreateList(s, []iceberg.Row{iceberg.NewRow(names, []any{int64(3), "x", "c"})})
				})
			}
			if len(dead) != 1 || !strings.Contains(dead[0].Row, "id: 3") || !strings.Contains(dead[0].Reason, `column "nothing"`) {
				t.Fatalf("dead letters %+v, want one for id 3 naming column nothing", dead)
			}
			if len(snaps) != 1 || snaps[0].RowsAdded != 2 {
				t.Fatalf("snapshots %+v, want one adding 2 rows", snaps)
			}
			tbl := loadValid(t, lc, "db.unk")
			if f, ok := tbl.Schema().FindFieldByName("nothing"); !ok || !f.Type.Equals(ibg.PrimitiveTypes.Unknown) {
				t.Fatalf("column nothing is %v, want unknown", f.Type)
			}
			want := []string{
				describeRow(iceberg.NewRow(names, []any{int64(1), nil, "a"})),
				describeRow(iceberg.NewRow(names, []any{int64(2), nil, nil})),
			}
			readDescribed(t, lc, "db.unk", nil, want)
		})
	}
}

// TestVariantPartitionAndFilterRefused: a variant column cannot be a partition source
// (the job, whose first row would create the table, fails naming the transform and
// the column) nor be compared in a filter (a ConfigError naming the column).
func TestVariantPartitionAndFilterRefused(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	for _, pf := range []string{"v", "bucket(4, v)"} {
		rows := []iceberg.Row{iceberg.NewRow([]string{"id", "v"}, []any{int64(1), variantOf(t, "x")})}
		cfg := iceberg.WriteConfig{Table: "db.part", CatalogName: lc.Name, CatalogProperties: lc.Props, PartitionFields: []string{pf}}
		p, s := beam.NewPipelineWithRoot()
		if _, err := iceberg.TryWrite(s, cfg, beam.CreateList(s, rows)); err != nil {
			t.Fatal(err)
		}
		err := ptest.Run(p)
		if err == nil || !strings.Contains(err.Error(), "partition_fields") || !strings.Contains(err.Error(), `column "v" of type variant`) {
			t.Errorf("partition_fields %s: run %v, want the job to fail naming the transform and column v", pf, err)
		}
	}
	icebergtest.CreateTable(t, lc.Catalog, "db.docs", variantTableSchema())
	for _, f := range []string{"v = 'x'", "s.inner IS NOT NULL"} {
		_, s := beam.NewPipelineWithRoot()
		_, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.docs", CatalogName: lc.Name, CatalogProperties: lc.Props, Filter: f})
		var ce *iceberg.ConfigError
		if !errors.As(err, &ce) || ce.Key != "filter" || !strings.Contains(err.Error(), "variant") {
			t.Errorf("filter %q: error %v, want a ConfigError on filter about the variant", f, err)
		}
	}
}

// TestVariantReadShredded: data files whose variant column iceberg-go wrote shredded
// (objects of one shape, so that its shredding is right) read back with the values
// written, through Read and ReadBatches.
func TestVariantReadShredded(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "v", Type: ibg.VariantType{}})
	tbl := icebergtest.CreateTable(t, lc.Catalog, "db.shredded", sc,
		icebergtest.WithProperties(map[string]string{"write.parquet.shred-variants": "true"}))
	bb, err := row.NewBatchBuilder(tbl.Schema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	var want []string
	vals := make([]any, 0, 13)
	for _, v := range shapedVariants(t) {
		vals = append(vals, v)
	}
	vals = append(vals, nil)
	for i, v := range vals {
		if err := bb.AppendValues([]any{int64(i), v}); err != nil {
			t.Fatal(err)
		}
		want = append(want, describeRow(iceberg.NewRow([]string{"id", "v"}, []any{int64(i), v})))
	}
	rec := bb.NewBatch()
	defer rec.Release()
	tbl = icebergtest.AppendRecords(t, tbl, rec)
	icebergtest.RequireValid(t, tbl)
	if cols := leafColumns(t, tbl); !slices.Contains(cols, "v.typed_value.tags.typed_value.list.element.typed_value") {
		t.Fatalf("v is not shredded with its tags array: leaf columns %v", cols)
	}
	readDescribed(t, lc, "db.shredded", nil, want)
}

// TestVariantWriteBatches: the batches ReadBatches emits for a table with variant
// columns (the Arrow variant extension type), given to WriteBatches, create a copy
// that reads back the same rows.
func TestVariantWriteBatches(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, lc.Catalog, "db.src", variantTableSchema())
	names := []string{"id", "v", "s"}
	inner := iceberg.NewRowSchema([]string{"label", "inner"}, nil)
	var rows []iceberg.Row
	var want []string
	for i, v := range append(sampleVariants(t), iceberg.Variant{}) {
		val := any(v)
		if v.IsZero() {
			val = nil
		}
		r := iceberg.NewRow(names, []any{int64(i), val, iceberg.RowOf(inner, []any{"x", val})})
		rows, want = append(rows, r), append(want, describeRow(r))
	}
	cfg := iceberg.WriteConfig{Table: "db.src", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-src"}
	if _, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) }); len(dead) != 0 {
		t.Fatalf("dead letters %+v", dead)
	}
	p, s := beam.NewPipelineWithRoot()
	batches := iceberg.ReadBatches(s, iceberg.ReadConfig{Table: "db.src", CatalogName: lc.Name, CatalogProperties: lc.Props})
	res := iceberg.WriteBatches(s, iceberg.WriteConfig{Table: "db.dst", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-dst"}, batches)
	passert.Count(s, res.DeadLetter, "dead letters", 0)
	ptest.RunAndValidate(t, p)
	tbl := loadValid(t, lc, "db.dst")
	if f, ok := tbl.Schema().FindFieldByName("v"); !ok || !f.Type.Equals(ibg.VariantType{}) {
		t.Fatalf("copied column v is %v, want variant", f.Type)
	}
	readDescribed(t, lc, "db.dst", nil, want)
}

// TestVariantSchemaEvolution: with evolve_schema, a Row field holding a Variant that
// the table lacks cannot become a new column (iceberg-go v0.7.0's UpdateSchema refuses
// the variant type): the row is dead-lettered naming the column and the cause.
func TestVariantSchemaEvolution(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	icebergtest.CreateTable(t, lc.Catalog, "db.evolve", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true}))
	v := variantOf(t, map[string]any{"added": []any{true, nil}})
	rows := []iceberg.Row{iceberg.NewRow([]string{"id", "doc"}, []any{int64(1), v})}
	cfg := iceberg.WriteConfig{Table: "db.evolve", CatalogName: lc.Name, CatalogProperties: lc.Props, SinkID: "variant-evolve"}
	cfg = cfg.With(iceberg.WithSchemaEvolution(true))
	_, dead := runMOR(t, cfg, func(s beam.Scope) beam.PCollection { return beam.CreateList(s, rows) })
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, `column "doc" of type variant`) || !strings.Contains(dead[0].Reason, "add the column") {
		t.Fatalf("dead letters %+v, want one naming column doc and the variant type", dead)
	}
	if f, ok := loadValid(t, lc, "db.evolve").Schema().FindFieldByName("doc"); ok {
		t.Fatalf("column doc was added: %v", f)
	}
}
