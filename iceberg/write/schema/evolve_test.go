package schema

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// evolveSchema is the table schema the evolution tests start from: a required key,
// an int, a float, a decimal, a required note and a struct.
func evolveSchema() *ibg.Schema {
	return ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "n", Type: ibg.PrimitiveTypes.Int32},
		ibg.NestedField{ID: 3, Name: "f", Type: ibg.PrimitiveTypes.Float32},
		ibg.NestedField{ID: 4, Name: "d", Type: ibg.DecimalTypeOf(9, 2)},
		ibg.NestedField{ID: 5, Name: "note", Type: ibg.PrimitiveTypes.String, Required: true},
		ibg.NestedField{ID: 6, Name: "addr", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 7, Name: "city", Type: ibg.PrimitiveTypes.String},
		}}},
	)
}

func TestPlanEvolution(t *testing.T) {
	typed := func(names []string, types []ibg.Type, vals ...any) row.Row {
		return row.Of(row.NewSchema(names, types), vals)
	}
	tests := []struct {
		name string
		r    row.Row
		keys []string
		want string // the changes, or the error's text
		err  bool
	}{
		{"fits", row.New([]string{"id", "n", "note"}, []any{int64(1), int32(2), "x"}), nil, "[]", false},
		{"new column", row.New([]string{"id", "note", "extra"}, []any{int64(1), "x", "e"}), nil, "[add extra string]", false},
		{"new nested field", row.New([]string{"id", "note", "addr"}, []any{int64(1), "x",
			row.New([]string{"city", "zip"}, []any{"c", int32(7)})}), nil, "[add addr.zip int]", false},
		{"new struct column, fields optional", typed([]string{"id", "note", "geo"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.String,
			&ibg.StructType{FieldList: []ibg.NestedField{{ID: 1, Name: "lat", Type: ibg.PrimitiveTypes.Float64, Required: true}}}},
			int64(1), "x", nil), nil, "[add geo struct<1: lat: optional double>]", false},
		{"int to long", row.New([]string{"id", "n", "note"}, []any{int64(1), int64(1) << 40, "x"}), nil, "[widen n to long]", false},
		{"float to double", row.New([]string{"id", "f", "note"}, []any{int64(1), 1.5, "x"}), nil, "[widen f to double]", false},
		{"decimal precision", typed([]string{"id", "d", "note"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.DecimalTypeOf(18, 2), ibg.PrimitiveTypes.String},
			int64(1), ibg.Decimal{Val: decimal128.FromI64(1234567890125), Scale: 2}, "x"), nil, "[widen d to decimal(18, 2)]", false},
		{"required to optional (null)", row.New([]string{"id", "note"}, []any{int64(1), nil}), nil, "[make note optional]", false},
		{"required to optional (missing)", row.New([]string{"id"}, []any{int64(1)}), nil, "[make note optional]", false},
		{"type change", row.New([]string{"id", "n", "note"}, []any{int64(1), "seven", "x"}), nil, `column "n" is int in the table, string in the rows`, true},
		{"decimal scale change", typed([]string{"id", "d", "note"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.DecimalTypeOf(18, 4), ibg.PrimitiveTypes.String},
			int64(1), ibg.Decimal{Val: decimal128.FromI64(12345678901234), Scale: 4}, "x"), nil, `column "d" is decimal(9, 2) in the table, decimal(18, 4)`, true},
		{"nested type change", row.New([]string{"id", "note", "addr"}, []any{int64(1), "x",
			row.New([]string{"city"}, []any{int32(3)})}), nil, `column "addr.city" is string in the table, int in the rows`, true},
		{"identifier field null", row.New([]string{"id", "note"}, []any{nil, "x"}), nil, `column "id" is an identifier field`, true},
		{"equality column widened", row.New([]string{"id", "n", "note"}, []any{int64(1), int64(1) << 40, "x"}), []string{"n"}, `column "n" is an equality column`, true},
		{"untyped null in a new column", row.New([]string{"id", "note", "extra"}, []any{int64(1), "x", nil}), nil, `column "extra" is not in the table`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := PlanEvolution(evolveSchema(), tt.r, tt.keys)
			if tt.err {
				if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want ErrSchemaMismatch with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmtChanges(changes); got != tt.want {
				t.Errorf("changes = %s, want %s", got, tt.want)
			}
		})
	}
}

func fmtChanges(cs []SchemaChange) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

func TestCheckEvolvable(t *testing.T) {
	rows := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "n", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 3, Name: "extra", Type: ibg.PrimitiveTypes.String},
	)
	if err := CheckEvolvable(evolveSchema(), rows, nil); err != nil {
		t.Errorf("a new column and int to long: %v", err)
	}
	if err := CheckSchema(evolveSchema(), rows); !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("CheckSchema accepts what needs evolution: %v", err)
	}
	bad := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "f", Type: ibg.PrimitiveTypes.Int32})
	if err := CheckEvolvable(evolveSchema(), bad, nil); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `"f"`) {
		t.Errorf("float to int: %v", err)
	}
}

// TestEvolveTableConcurrent evolves one table from several goroutines at once, each
// adding the same new column (and one its own): every call succeeds, the table ends
// with each column once, and the schema ids show one update per distinct change.
func TestEvolveTableConcurrent(t *testing.T) {
	cat := writetest.NewCatalog(t)
	writetest.CreateTable(t, cat, "evolve", evolveSchema())
	ident := table.Identifier{"db", "evolve"}
	ctx := context.Background()
	const workers = 6
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names := []string{"id", "note", "shared", "n"}
			vals := []any{int64(i), "x", "s", int64(1) << 40}
			if i%2 == 0 {
				names, vals = append(names, "own"+string(rune('a'+i))), append(vals, float64(i))
			}
			tbl, reject, err := EvolveTable(ctx, cat, ident, row.New(names, vals), nil)
			switch {
			case err != nil:
				errs[i] = err
			case reject != nil:
				errs[i] = reject
			default:
				// The table returned takes the row.
				if changes, err := PlanEvolution(tbl.Schema(), row.New(names, vals), nil); err != nil || len(changes) > 0 {
					errs[i] = errors.Join(err, errors.New("returned table still needs "+fmtChanges(changes)))
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	sc := tbl.Schema()
	if got, want := writetest.ColumnNames(tbl), "id,n,f,d,note,addr,shared,owna,ownc,owne"; !sameSet(got, want) {
		t.Errorf("columns %s, want %s", got, want)
	}
	if f, _ := sc.FindFieldByName("n"); !f.Type.Equals(ibg.PrimitiveTypes.Int64) {
		t.Errorf("n is %s, want long", f.Type)
	}
	// Ids: the original schema, then at most one update per worker (shared and the
	// widening land with the first, each own column in its own update).
	if n := len(tbl.Metadata().Schemas()); n < 2 || n > 1+workers/2+1 {
		t.Errorf("%d schemas, want 2..%d", n, 2+workers/2)
	}
	// Again: nothing to do, no new schema.
	again, reject, err := EvolveTable(ctx, cat, ident, row.New([]string{"id", "note", "shared"}, []any{int64(1), "x", "s"}), nil)
	if err != nil || reject != nil || again.Schema().ID != sc.ID {
		t.Errorf("a row that fits: err %v, reject %v, schema %d (was %d)", err, reject, again.Schema().ID, sc.ID)
	}
	// Another worker added "shared" as a string: an int there is rejected, naming it.
	_, reject, err = EvolveTable(ctx, cat, ident, row.New([]string{"id", "note", "shared"}, []any{int64(1), "x", int64(3)}), nil)
	if err != nil || !errors.Is(reject, ErrSchemaMismatch) || !strings.Contains(reject.Error(), `"shared"`) || !strings.Contains(reject.Error(), "db.evolve") {
		t.Errorf("incompatible type: err %v, reject %v", err, reject)
	}
}

func sameSet(a, b string) bool {
	x, y := strings.Split(a, ","), strings.Split(b, ",")
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, s := range x {
		seen[s]++
	}
	for _, s := range y {
		if seen[s]--; seen[s] < 0 {
			return false
		}
	}
	return true
}

// TestEvolveTableLostResponse: a schema update whose response was lost is found by
// the next attempt, which plans against the reloaded table and has nothing to add.
func TestEvolveTableLostResponse(t *testing.T) {
	ctx := context.Background()
	inner := writetest.NewCatalog(t)
	writetest.CreateTable(t, inner, "evolve", evolveSchema())
	ident := table.Identifier{"db", "evolve"}
	fc := &writetest.FaultCatalog{Catalog: inner, After: writetest.LostFirstResponse}
	r := row.New([]string{"id", "extra"}, []any{int64(1), "x"})
	tbl, reject, err := EvolveTable(ctx, fc, ident, r, nil)
	if err != nil || reject != nil {
		t.Fatalf("EvolveTable: reject %v, err %v", reject, err)
	}
	if changes, err := PlanEvolution(tbl.Schema(), r, nil); err != nil || len(changes) > 0 {
		t.Errorf("returned table still needs %s (%v)", fmtChanges(changes), err)
	}
	cur, err := inner.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Commits != 1 || len(cur.Metadata().Schemas()) != 2 {
		t.Errorf("%d commits, %d schemas; want the update once", fc.Commits, len(cur.Metadata().Schemas()))
	}
}
