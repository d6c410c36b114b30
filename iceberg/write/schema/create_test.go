package schema

import (
	"context"
	"errors"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// allTypesSchema has a column of every primitive type the transforms care about.
func allTypesSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "region", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 4, Name: "d", Type: ibg.PrimitiveTypes.Date},
		ibg.NestedField{ID: 5, Name: "amount", Type: ibg.PrimitiveTypes.Float64},
		ibg.NestedField{ID: 6, Name: "meta", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 7, Name: "source", Type: ibg.PrimitiveTypes.String},
		}}},
	)
}

func TestBuildPartitionSpec(t *testing.T) {
	sc := allTypesSchema()
	tests := []struct {
		name      string
		fields    []string
		want      []string // partition field names
		wantTrans []string
		wantErr   error
	}{
		{"none", nil, nil, nil, nil},
		{"identity", []string{"region"}, []string{"region"}, []string{"identity"}, nil},
		{"bucket", []string{"bucket[16](id)"}, []string{"id_bucket"}, []string{"bucket[16]"}, nil},
		{"truncate", []string{"truncate(4, region)"}, []string{"region_trunc"}, []string{"truncate[4]"}, nil},
		{"year month", []string{"year(d)", "month(ts)"}, []string{"d_year", "ts_month"}, []string{"year", "month"}, nil},
		{"hour", []string{"hour(ts)"}, []string{"ts_hour"}, []string{"hour"}, nil},
		{"day", []string{"day(ts)"}, []string{"ts_day"}, []string{"day"}, nil},
		{"void", []string{"void(amount)"}, []string{"amount_null"}, []string{"void"}, nil},
		{"nested identity", []string{"meta.source"}, []string{"meta.source"}, []string{"identity"}, nil},
		{"unknown column", []string{"nope"}, nil, nil, config.ErrInvalidConfig},
		{"hour of a date", []string{"hour(d)"}, nil, nil, config.ErrInvalidConfig},
		{"bucket of a double", []string{"bucket[4](amount)"}, nil, nil, config.ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := BuildPartitionSpec(sc, writetest.ParsePartitions(t, tc.fields...))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.NumFields() != len(tc.want) {
				t.Fatalf("spec has %d fields, want %d", spec.NumFields(), len(tc.want))
			}
			for i := range spec.NumFields() {
				f := spec.Field(i)
				if f.Name != tc.want[i] || f.Transform.String() != tc.wantTrans[i] {
					t.Errorf("field %d = %s %s, want %s %s", i, f.Name, f.Transform, tc.want[i], tc.wantTrans[i])
				}
			}
		})
	}
}

func TestBuildSortOrder(t *testing.T) {
	sc := allTypesSchema()
	fields, err := config.ParseSortFields([]string{"region", "ts desc", "id asc nulls last", "bucket(8, id) desc nulls first"})
	if err != nil {
		t.Fatal(err)
	}
	order, err := BuildSortOrder(sc, fields)
	if err != nil {
		t.Fatal(err)
	}
	want := []table.SortField{
		{SourceIDs: []int{2}, Transform: ibg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
		{SourceIDs: []int{3}, Transform: ibg.IdentityTransform{}, Direction: table.SortDESC, NullOrder: table.NullsLast},
		{SourceIDs: []int{1}, Transform: ibg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsLast},
		{SourceIDs: []int{1}, Transform: ibg.BucketTransform{NumBuckets: 8}, Direction: table.SortDESC, NullOrder: table.NullsFirst},
	}
	got := order.Fields()
	var n int
	for _, f := range got {
		if n >= len(want) {
			t.Fatalf("too many sort fields")
		}
		w := want[n]
		if f.SourceIDs[0] != w.SourceIDs[0] || f.Transform.String() != w.Transform.String() || f.Direction != w.Direction || f.NullOrder != w.NullOrder {
			t.Errorf("sort field %d = %+v, want %+v", n, f, w)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("sort fields = %d, want %d", n, len(want))
	}
	if _, err := BuildSortOrder(sc, []config.SortField{{Source: "nope"}}); !errors.Is(err, config.ErrInvalidConfig) {
		t.Errorf("unknown sort column: err = %v", err)
	}
}

func TestEnsureTable(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	opts := CreateOptions{
		PartitionFields: writetest.ParsePartitions(t, "region", "day(ts)"),
		Properties:      map[string]string{"owner": "me"},
	}
	ident := table.Identifier{"newns", "events"} // namespace does not exist yet
	tbl, created, err := EnsureTable(ctx, cat, ident, allTypesSchema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Error("created = false for a new table")
	}
	if v := tbl.Metadata().Version(); v != 3 {
		t.Errorf("format version = %d, want 3", v)
	}
	if tbl.Properties()["owner"] != "me" {
		t.Errorf("properties = %v", tbl.Properties())
	}
	if spec := tbl.Spec(); spec.NumFields() != 2 {
		n := spec.NumFields()
		t.Errorf("spec fields = %d, want 2", n)
	}
	tbl2, created, err := EnsureTable(ctx, cat, ident, allTypesSchema(), opts)
	if err != nil || created || tbl2.Metadata().TableUUID() != tbl.Metadata().TableUUID() {
		t.Errorf("second EnsureTable: created=%v err=%v", created, err)
	}
	t.Run("format version 2 on request", func(t *testing.T) {
		tbl, _, err := EnsureTable(ctx, cat, table.Identifier{"db", "v2"}, allTypesSchema(),
			CreateOptions{Properties: map[string]string{"format-version": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		if v := tbl.Metadata().Version(); v != 2 {
			t.Errorf("format version = %d, want 2", v)
		}
	})
	t.Run("bad partition field creates nothing", func(t *testing.T) {
		id := table.Identifier{"db", "bad"}
		_, _, err := EnsureTable(ctx, cat, id, allTypesSchema(), CreateOptions{PartitionFields: writetest.ParsePartitions(t, "nope")})
		if !errors.Is(err, config.ErrInvalidConfig) {
			t.Fatalf("err = %v", err)
		}
		if ok, _ := cat.CheckTableExists(ctx, id); ok {
			t.Error("table was created")
		}
	})
}

func TestCheckSchema(t *testing.T) {
	tblSchema := allTypesSchema()
	f := func(fields ...ibg.NestedField) *ibg.Schema { return ibg.NewSchema(0, fields...) }
	id := ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true}
	tests := []struct {
		name    string
		rows    *ibg.Schema
		wantCol string // "" means compatible
	}{
		{"same", allTypesSchema(), ""},
		{"subset of optional columns", f(id), ""},
		{"int promotes to long", f(ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int32}), ""},
		{"float promotes to double", f(id, ibg.NestedField{ID: 5, Name: "amount", Type: ibg.PrimitiveTypes.Float32}), ""},
		{"missing required", f(ibg.NestedField{ID: 2, Name: "region", Type: ibg.PrimitiveTypes.String}), `"id"`},
		{"unknown column", f(id, ibg.NestedField{ID: 9, Name: "extra", Type: ibg.PrimitiveTypes.String}), `"extra"`},
		{"long does not narrow to int", ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "x", Type: ibg.PrimitiveTypes.Int64}), `"x"`},
		{"string is not a timestamp", f(id, ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.String}), `"ts"`},
		{"timestamp for timestamptz keeps the column's type", f(id, ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.Timestamp}), ""},
		{"timestamp_ns is not timestamptz", f(id, ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.TimestampNs}), `"ts"`},
		{"date is not timestamptz", f(id, ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.Date}), `"ts"`},
		{"nested field type", f(id, ibg.NestedField{ID: 6, Name: "meta", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 7, Name: "source", Type: ibg.PrimitiveTypes.Int32}}}}), `"meta.source"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sch := tblSchema
			if tc.name == "long does not narrow to int" {
				sch = ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "x", Type: ibg.PrimitiveTypes.Int32})
			}
			err := CheckSchema(sch, tc.rows)
			if tc.wantCol == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("err = %v, want ErrSchemaMismatch", err)
			}
			if !strings.Contains(err.Error(), tc.wantCol) {
				t.Errorf("err %q does not name column %s", err, tc.wantCol)
			}
		})
	}
}
