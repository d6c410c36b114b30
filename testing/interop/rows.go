package interop

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
)

// Columns is the schema every interop scenario uses, in table order, with
// Iceberg type names. Spark creates it with the same names and types.
var Columns = []Column{
	{"id", "long"}, {"category", "string"}, {"qty", "int"}, {"amount", "decimal(10,2)"},
	{"score", "double"}, {"day", "date"}, {"ts", "timestamptz"}, {"flag", "boolean"},
}

// Schema returns Columns as an Iceberg schema; id is required and the
// identifier field.
func Schema() *ibg.Schema {
	p := ibg.PrimitiveTypes
	opt := func(id int, name string, typ ibg.Type) ibg.NestedField {
		return ibg.NestedField{ID: id, Name: name, Type: typ}
	}
	return ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		opt(2, "category", p.String),
		opt(3, "qty", p.Int32),
		opt(4, "amount", ibg.DecimalTypeOf(10, 2)),
		opt(5, "score", p.Float64),
		opt(6, "day", p.Date),
		opt(7, "ts", p.TimestampTz),
		opt(8, "flag", p.Bool),
	)
}

// day20240101 is 2024-01-01 in days since the epoch.
const day20240101 = 19723

// GenRow returns the values of row id, the same function of id that
// spark_write.py uses in SQL:
//
//	category = NULL if id%13==0 else "c" + id%7
//	qty      = id % 100
//	amount   = (id % 10000) / 100, decimal(10,2)
//	score    = NULL if id%17==0 else (id % 1000) / 4
//	day      = 2024-01-01 + id%365 days
//	ts       = 1700000000000000 + id*1000003 microseconds
//	flag     = id%3 == 0
func GenRow(id int64) []any {
	var category, score any
	if id%13 != 0 {
		category = fmt.Sprintf("c%d", id%7)
	}
	if id%17 != 0 {
		score = float64(id%1000) / 4
	}
	return []any{
		id,
		category,
		int32(id % 100),
		ibg.Decimal{Val: decimal128.FromI64(id % 10000), Scale: 2},
		score,
		ibg.Date(day20240101 + id%365),
		ibg.Timestamp(1700000000000000 + id*1000003),
		id%3 == 0,
	}
}

// CanonicalValues formats the columns cols (names of Columns) of row vals
// (in Columns order).
func CanonicalValues(vals []any, cols []string) (string, error) {
	out := make([]string, len(cols))
	for i, c := range cols {
		idx := -1
		for j, col := range Columns {
			if col.Name == c {
				idx = j
			}
		}
		if idx < 0 {
			return "", fmt.Errorf("interop: unknown column %q", c)
		}
		s, err := Canonical(vals[idx])
		if err != nil {
			return "", err
		}
		out[i] = s
	}
	return CanonicalRow(out), nil
}

// ColumnNames returns the names of Columns.
func ColumnNames() []string {
	out := make([]string, len(Columns))
	for i, c := range Columns {
		out[i] = c.Name
	}
	return out
}

// StandardQueries are the filtered reads every scenario checks, with the
// predicate each filter means (over GenRow-shaped values) so writers can
// compute the answers.
var StandardQueries = []struct {
	Query
	Match func(vals []any) bool
}{
	{
		Query: Query{Name: "qty>=50 and category='c3'", Filter: "qty >= 50 AND category = 'c3'", Keep: []string{"id", "qty", "amount"}},
		Match: func(v []any) bool { return v[2].(int32) >= 50 && v[1] != nil && v[1].(string) == "c3" },
	},
	{
		Query: Query{Name: "score is null or id<100", Filter: "score IS NULL OR id < 100", Keep: []string{"id", "score", "flag"}},
		Match: func(v []any) bool { return v[4] == nil || v[0].(int64) < 100 },
	},
}

// StandardLookups are the ids every scenario looks up.
var StandardLookups = []int64{0, 3, 7, 13, 150, 507, 999, 12345, 39999, 59999, 70000}
