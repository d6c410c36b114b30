package write

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/iceberg/write/schema"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// projRow is {id: 1, name: "a", addr: {city: "c", zip: 7}, tags: ["x"]}.
func projRow() row.Row {
	addr := row.New([]string{"city", "zip"}, []any{"c", int32(7)})
	return row.New([]string{"id", "name", "addr", "tags"}, []any{int64(1), "a", addr, []any{"x"}})
}

func TestProjectionApply(t *testing.T) {
	tests := []struct {
		name       string
		keep, drop []string
		only       string
		in         row.Row
		want       string // row.String of the result
		wantErr    string // substring of the error; "" for none
	}{
		{name: "none", in: projRow(), want: projRow().String()},
		{name: "keep", keep: []string{"name", "id"}, in: projRow(), want: `{id: 1, name: "a"}`},
		{name: "keep nested", keep: []string{"id", "addr.zip"}, in: projRow(), want: `{id: 1, addr: {zip: 7}}`},
		{name: "keep whole wins over nested", keep: []string{"addr.zip", "addr"}, in: projRow(), want: `{addr: {city: "c", zip: 7}}`},
		{name: "keep nested null stays null", keep: []string{"addr.zip"},
			in: row.New([]string{"addr"}, []any{nil}), want: `{addr: null}`},
		{name: "drop", drop: []string{"tags", "addr"}, in: projRow(), want: `{id: 1, name: "a"}`},
		{name: "drop nested", drop: []string{"addr.city", "tags"}, in: projRow(), want: `{id: 1, name: "a", addr: {zip: 7}}`},
		{name: "only", only: "addr", in: projRow(), want: `{city: "c", zip: 7}`},
		{name: "keep missing", keep: []string{"id", "nope"}, in: projRow(), wantErr: `keep: field "nope" is not in the row`},
		{name: "drop missing nested", drop: []string{"addr.nope"}, in: projRow(), wantErr: `drop: field "addr.nope" is not in the row`},
		{name: "keep into a non-record", keep: []string{"name.x"}, in: projRow(), wantErr: `keep: field "name" is string, not a record`},
		{name: "only missing", only: "nope", in: projRow(), wantErr: `only: field "nope" is not in the row`},
		{name: "only not a record", only: "name", in: projRow(), wantErr: `only: field "name" is string, not a record`},
		{name: "only null", only: "addr", in: row.New([]string{"addr"}, []any{nil}), wantErr: `only: field "addr" is null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := schema.NewProjection(tc.keep, tc.drop, tc.only)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second call uses the cached plan of the row's schema.
			for range 2 {
				got, err := p.Apply(tc.in)
				if tc.wantErr != "" {
					if !errors.Is(err, schema.ErrProjection) || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("err = %v, want schema.ErrProjection with %q", err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != tc.want {
					t.Fatalf("got %s, want %s", got, tc.want)
				}
			}
		})
	}
	if _, err := schema.NewProjection([]string{"a"}, []string{"b"}, ""); !errors.Is(err, config.ErrInvalidConfig) {
		t.Errorf("keep with drop: err = %v, want ErrInvalidConfig", err)
	}
}

func TestProjectionKeepsTypes(t *testing.T) {
	p := ibg.PrimitiveTypes
	addrT := &ibg.StructType{FieldList: []ibg.NestedField{{ID: 3, Name: "city", Type: p.String}, {ID: 4, Name: "zip", Type: p.Int32}}}
	s := row.NewSchema([]string{"id", "addr"}, []ibg.Type{p.Int64, addrT})
	in := row.Of(s, []any{int64(1), row.New([]string{"city", "zip"}, []any{"c", nil})})
	proj, err := schema.NewProjection([]string{"addr.zip"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := proj.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	// The kept nested null has a known type, so the table can be created from it.
	sc, err := row.InferSchema(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Fields()) != 1 || sc.Fields()[0].Name != "addr" {
		t.Fatalf("inferred schema %s, want only addr", sc)
	}
	addr := sc.Fields()[0].Type.(*ibg.StructType)
	if len(addr.FieldList) != 1 || addr.FieldList[0].Name != "zip" || !addr.FieldList[0].Type.Equals(p.Int32) {
		t.Errorf("inferred schema %s, want addr: struct<zip: int>", sc)
	}
}

// projEvent is a struct input for Projection.Schema.
type projEvent struct {
	ID   int64   `iceberg:"id"`
	Name string  `iceberg:"name"`
	Addr projZip `iceberg:"addr"`
}

type projZip struct {
	City string `iceberg:"city"`
	Zip  *int32 `iceberg:"zip"`
}

func TestStructSchema(t *testing.T) {
	typ := reflect.TypeFor[projEvent]()
	tests := []struct {
		name       string
		keep, drop []string
		only       string
		want       []string // top-level columns
		wantErr    string
	}{
		{name: "none", want: []string{"id", "name", "addr"}},
		{name: "keep", keep: []string{"addr.zip", "id"}, want: []string{"id", "addr"}},
		{name: "drop", drop: []string{"name"}, want: []string{"id", "addr"}},
		{name: "only", only: "addr", want: []string{"city", "zip"}},
		{name: "keep unknown", keep: []string{"nope"}, wantErr: `keep: field "nope" is not in the row`},
		{name: "drop unknown nested", drop: []string{"addr.nope"}, wantErr: `drop: field "addr.nope" is not in the row`},
		{name: "only not a struct", only: "name", wantErr: `only: field "name" is string, not a record`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := StructSchema(Spec{Keep: tc.keep, Drop: tc.drop, Only: tc.only}, typ)
			if tc.wantErr != "" {
				if !errors.Is(err, schema.ErrProjection) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want schema.ErrProjection with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range sc.Fields() {
				got = append(got, f.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("columns %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAppendProjection(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	tests := []struct {
		name       string
		keep, drop []string
		only       string
		wantCols   string
		wantDead   int
	}{
		{name: "keep", keep: []string{"id", "addr.zip"}, wantCols: "id,addr", wantDead: 1},
		{name: "drop", drop: []string{"tags", "addr.city"}, wantCols: "id,name,addr", wantDead: 1},
		{name: "only", only: "addr", wantCols: "city,zip", wantDead: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(t, lc, "db.proj_"+tc.name)
			spec.Keep, spec.Drop, spec.Only = tc.keep, tc.drop, tc.only
			rows := []row.Row{projRow(), projRow(),
				// lacks the projected fields (keep/drop) or has a null record (only)
				row.New([]string{"id", "name", "addr"}, []any{int64(2), "b", nil})}
			if tc.name != "only" {
				rows[2] = row.New([]string{"id"}, []any{int64(3)})
			}
			snaps, dead := runAppend(t, spec, rows)
			if len(dead) != tc.wantDead || !strings.Contains(dead[0].Reason, tc.name+": field") {
				t.Fatalf("dead letters %+v, want %d naming %s", dead, tc.wantDead, tc.name)
			}
			if len(snaps) != 1 || snaps[0].RowsAdded != 2 {
				t.Fatalf("snapshots %+v, want one of 2 rows", snaps)
			}
			tbl, err := lc.Catalog.LoadTable(ctx, table.Identifier{"db", "proj_" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if got := writetest.ColumnNames(tbl); got != tc.wantCols {
				t.Errorf("table columns %s, want %s", got, tc.wantCols)
			}
			if err := icebergtest.CheckTable(ctx, tbl); err != nil {
				t.Error(err)
			}
		})
	}
}
