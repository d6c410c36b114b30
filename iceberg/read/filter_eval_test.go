package read

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// filterEvalRow is one row of the evaluation table; nil pointers are nulls.
type filterEvalRow struct {
	ID     int64    `json:"id"`
	I      *int32   `json:"i"`
	S      *string  `json:"s"`
	D      *float64 `json:"d"`
	Dt     *string  `json:"dt"`
	Amount *string  `json:"amount"`
	Ts     *string  `json:"ts"`
	B      *bool    `json:"b"`
	Addr   *struct {
		City *string `json:"city"`
	} `json:"addr"`
}

func filterPtr[T any](v T) *T { return &v }

func filterEvalSchema() *ibg.Schema {
	opt := func(id int, name string, typ ibg.Type) ibg.NestedField {
		return ibg.NestedField{ID: id, Name: name, Type: typ}
	}
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		opt(2, "i", ibg.PrimitiveTypes.Int32),
		opt(3, "s", ibg.PrimitiveTypes.String),
		opt(4, "d", ibg.PrimitiveTypes.Float64),
		opt(5, "dt", ibg.PrimitiveTypes.Date),
		opt(6, "amount", ibg.DecimalTypeOf(10, 2)),
		opt(7, "ts", ibg.PrimitiveTypes.Timestamp),
		opt(8, "b", ibg.PrimitiveTypes.Bool),
		opt(9, "addr", &ibg.StructType{FieldList: []ibg.NestedField{opt(10, "city", ibg.PrimitiveTypes.String)}}),
	)
}

// filterEvalRows covers prefix boundaries (multi-byte and maximal code points),
// nulls in every column and values on both sides of each bound used below.
func filterEvalRows() []filterEvalRow {
	str := func(s string) *string { return &s }
	city := func(c *string) *struct {
		City *string `json:"city"`
	} {
		return &struct {
			City *string `json:"city"`
		}{City: c}
	}
	return []filterEvalRow{
		{ID: 1, I: filterPtr[int32](1), S: str("abc"), D: filterPtr(1.5), Dt: str("2024-01-01"), Amount: str("10.00"), Ts: str("2024-01-01 00:00:00"), B: filterPtr(true), Addr: city(str("Paris"))},
		{ID: 2, I: filterPtr[int32](2), S: str("abcz"), D: filterPtr(-2.0), Dt: str("2024-01-31"), Amount: str("10.01"), Ts: str("2024-01-31 10:00:00"), B: filterPtr(false), Addr: city(str("Lyon"))},
		{ID: 3, I: filterPtr[int32](3), S: str("abd"), D: filterPtr(0.0), Dt: str("2024-02-01"), Amount: str("-5.50"), Ts: str("2024-01-31 10:00:00.000001"), B: filterPtr(true), Addr: city(nil)},
		{ID: 4, I: nil, S: str("ab"), D: nil, Dt: nil, Amount: nil, Ts: nil, B: nil, Addr: nil},
		{ID: 5, I: filterPtr[int32](5), S: str(""), D: filterPtr(100.0), Dt: str("2023-12-31"), Amount: str("99999999.99"), Ts: str("2023-12-31 23:59:59.999999"), B: filterPtr(false), Addr: city(str("Paris"))},
		{ID: 6, I: filterPtr[int32](6), S: str("é"), D: filterPtr(2.5), Dt: str("2024-06-15"), Amount: str("0.00"), Ts: str("2024-06-15 12:00:00"), B: nil, Addr: city(str("Nice"))},
		{ID: 7, I: filterPtr[int32](7), S: str("éa"), D: filterPtr(3.5), Dt: str("2024-06-16"), Amount: str("1.23"), Ts: str("2024-06-16 12:00:00"), B: filterPtr(true), Addr: city(str("Paris"))},
		{ID: 8, I: filterPtr[int32](8), S: str("ê"), D: filterPtr(4.5), Dt: str("2024-06-17"), Amount: str("2.34"), Ts: str("2024-06-17 12:00:00"), B: filterPtr(true), Addr: city(str("Lille"))},
		{ID: 9, I: filterPtr[int32](9), S: str("a\U0010FFFF"), D: filterPtr(5.5), Dt: str("2024-06-18"), Amount: str("3.45"), Ts: str("2024-06-18 12:00:00"), B: filterPtr(false), Addr: city(str("Paris"))},
		{ID: 10, I: filterPtr[int32](10), S: str("a\U0010FFFFz"), D: filterPtr(6.5), Dt: str("2024-06-19"), Amount: str("4.56"), Ts: str("2024-06-19 12:00:00"), B: filterPtr(true), Addr: city(str("Nantes"))},
		{ID: 11, I: filterPtr[int32](11), S: str("b"), D: filterPtr(7.5), Dt: str("2024-06-20"), Amount: str("5.67"), Ts: str("2024-06-20 12:00:00"), B: filterPtr(false), Addr: city(str("Brest"))},
		{ID: 12, I: filterPtr[int32](12), S: nil, D: filterPtr(8.5), Dt: str("2024-06-21"), Amount: str("6.78"), Ts: str("2024-06-21 12:00:00"), B: filterPtr(true), Addr: city(str("Paris"))},
		{ID: 13, I: filterPtr[int32](13), S: str("Abc"), D: filterPtr(9.5), Dt: str("2024-06-22"), Amount: str("7.89"), Ts: str("2024-06-22 12:00:00"), B: filterPtr(true), Addr: city(str("Paris"))},
		{ID: 14, I: filterPtr[int32](14), S: str("a%b"), D: filterPtr(10.5), Dt: str("2024-06-23"), Amount: str("8.90"), Ts: str("2024-06-23 12:00:00"), B: filterPtr(true), Addr: city(str("Paris"))},
	}
}

// filterEvalTable writes rows into a fresh table of a SQLite SQL catalog, one data
// file per chunk of rows so that file-level pruning is exercised too.
func filterEvalTable(t *testing.T, rows []filterEvalRow) *table.Table {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("filtertest", db, sqlcat.SQLite, ibg.Properties{"warehouse": "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := filterEvalSchema()
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, schema)
	if err != nil {
		t.Fatal(err)
	}
	arrowSchema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(rows); start += 5 {
		chunk := rows[start:min(start+5, len(rows))]
		js, err := json.Marshal(chunk)
		if err != nil {
			t.Fatal(err)
		}
		at, err := array.TableFromJSON(memory.DefaultAllocator, arrowSchema, []string{string(js)})
		if err != nil {
			t.Fatalf("arrow table from JSON: %v", err)
		}
		tx := tbl.NewTransaction()
		if err := tx.AppendTable(ctx, at, int64(len(chunk)), nil); err != nil {
			at.Release()
			t.Fatalf("append: %v", err)
		}
		at.Release()
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	return tbl
}

// filterScanIDs scans tbl with the row filter and returns the sorted ids.
func filterScanIDs(t *testing.T, tbl *table.Table, expr ibg.BooleanExpression) []int64 {
	t.Helper()
	at, err := tbl.Scan(table.WithRowFilter(expr)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan with %s: %v", expr, err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices("id")
	if len(idx) != 1 {
		t.Fatalf("scan result has no id column: %s", at.Schema())
	}
	ids := []int64{}
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		arr := chunk.(*array.Int64)
		for i := 0; i < arr.Len(); i++ {
			ids = append(ids, arr.Value(i))
		}
	}
	slices.Sort(ids)
	return ids
}

// TestFilterEval parses filters, scans a real table with each one and compares the
// rows iceberg-go returns with a hand-written predicate that follows SQL semantics
// (a comparison with NULL, and its negation, never matches).
func TestFilterEval(t *testing.T) {
	rows := filterEvalRows()
	tbl := filterEvalTable(t, rows)
	str := func(r filterEvalRow) string { return *r.S }
	tests := []struct {
		filter string
		want   func(r filterEvalRow) bool
	}{
		{"s LIKE 'ab%'", func(r filterEvalRow) bool { return r.S != nil && strings.HasPrefix(str(r), "ab") }},
		{"s LIKE 'abc%'", func(r filterEvalRow) bool { return r.S != nil && strings.HasPrefix(str(r), "abc") }},
		{"s NOT LIKE 'ab%'", func(r filterEvalRow) bool { return r.S != nil && !strings.HasPrefix(str(r), "ab") }},
		{"s LIKE 'é%'", func(r filterEvalRow) bool { return r.S != nil && strings.HasPrefix(str(r), "é") }},
		{"s LIKE 'a\U0010FFFF%'", func(r filterEvalRow) bool { return r.S != nil && strings.HasPrefix(str(r), "a\U0010FFFF") }},
		{"s LIKE '%'", func(r filterEvalRow) bool { return r.S != nil }},
		{"s NOT LIKE '%'", func(r filterEvalRow) bool { return false }},
		{"s LIKE 'a!%%' ESCAPE '!'", func(r filterEvalRow) bool { return r.S != nil && strings.HasPrefix(str(r), "a%") }},
		{"s LIKE 'abc'", func(r filterEvalRow) bool { return r.S != nil && str(r) == "abc" }},
		{"NOT (s LIKE 'a%')", func(r filterEvalRow) bool { return r.S != nil && !strings.HasPrefix(str(r), "a") }},
		{"i BETWEEN 3 AND 7", func(r filterEvalRow) bool { return r.I != nil && *r.I >= 3 && *r.I <= 7 }},
		{"i NOT BETWEEN 3 AND 7", func(r filterEvalRow) bool { return r.I != nil && (*r.I < 3 || *r.I > 7) }},
		{"NOT i BETWEEN 3 AND 7", func(r filterEvalRow) bool { return r.I != nil && (*r.I < 3 || *r.I > 7) }},
		{"i IN (1, 5, 12, 99)", func(r filterEvalRow) bool { return r.I != nil && slices.Contains([]int32{1, 5, 12, 99}, *r.I) }},
		{"i NOT IN (1, 5, 12)", func(r filterEvalRow) bool { return r.I != nil && !slices.Contains([]int32{1, 5, 12}, *r.I) }},
		{"NOT (i IN (1, 5, 12))", func(r filterEvalRow) bool { return r.I != nil && !slices.Contains([]int32{1, 5, 12}, *r.I) }},
		{"i <> 2", func(r filterEvalRow) bool { return r.I != nil && *r.I != 2 }},
		{"NOT (i = 2)", func(r filterEvalRow) bool { return r.I != nil && *r.I != 2 }},
		{"i IS NULL", func(r filterEvalRow) bool { return r.I == nil }},
		{"NOT (i IS NULL) AND d > 2", func(r filterEvalRow) bool { return r.I != nil && r.D != nil && *r.D > 2 }},
		{"b", func(r filterEvalRow) bool { return r.B != nil && *r.B }},
		{"NOT b", func(r filterEvalRow) bool { return r.B != nil && !*r.B }},
		{"i < 5 OR s LIKE 'é%'", func(r filterEvalRow) bool {
			return (r.I != nil && *r.I < 5) || (r.S != nil && strings.HasPrefix(str(r), "é"))
		}},
		{"NOT (i < 5 OR d > 5)", func(r filterEvalRow) bool { return r.I != nil && *r.I >= 5 && r.D != nil && *r.D <= 5 }},
		{"amount > 10 AND amount <= 99999999.99", func(r filterEvalRow) bool {
			return r.Amount != nil && (*r.Amount == "10.01" || *r.Amount == "99999999.99")
		}},
		{"dt BETWEEN DATE '2024-01-01' AND '2024-01-31'", func(r filterEvalRow) bool {
			return r.Dt != nil && *r.Dt >= "2024-01-01" && *r.Dt <= "2024-01-31"
		}},
		{"ts > TIMESTAMP '2024-01-31 10:00:00'", func(r filterEvalRow) bool { return r.Ts != nil && *r.Ts > "2024-01-31 10:00:00" }},
		{"addr.city = 'Paris' AND i >= 5", func(r filterEvalRow) bool {
			return r.Addr != nil && r.Addr.City != nil && *r.Addr.City == "Paris" && r.I != nil && *r.I >= 5
		}},
		{"addr.city IS NULL", func(r filterEvalRow) bool { return r.Addr == nil || r.Addr.City == nil }},
	}
	for _, tc := range tests {
		t.Run(tc.filter, func(t *testing.T) {
			expr, err := ParseFilter(tc.filter, tbl.Schema())
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			want := []int64{}
			for _, r := range rows {
				if tc.want(r) {
					want = append(want, r.ID)
				}
			}
			if got := filterScanIDs(t, tbl, expr); !slices.Equal(got, want) {
				t.Errorf("scan with %q (%s) returned ids %v, want %v", tc.filter, formatFilter(expr), got, want)
			}
		})
	}
}

var _ arrow.Table // the arrow package is used through array's results
