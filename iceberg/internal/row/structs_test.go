package row

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

type address struct {
	City string  `iceberg:"city"`
	Zip  *string `iceberg:"zip"`
}

type order struct {
	ID         int64   `iceberg:"order_id"`
	Amount     float64 `beam:"amount"`
	State      string  // matches column "state" case-insensitively
	Note       *string
	Qty        int
	Small      int16
	When       time.Time
	Day        time.Time
	U          string
	Raw        []byte
	Tags       []string
	Attrs      map[string]int64
	Addr       address
	Prev       *address
	Skip       string `iceberg:"-"`
	unexported int
}

func orderSchema() *ibg.Schema {
	addr := func(id int) *ibg.StructType {
		return &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: id, Name: "city", Type: ibg.PrimitiveTypes.String, Required: true},
			{ID: id + 1, Name: "zip", Type: ibg.PrimitiveTypes.String},
		}}
	}
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "order_id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "amount", Type: ibg.PrimitiveTypes.Float64},
		ibg.NestedField{ID: 3, Name: "state", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 4, Name: "Note", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 5, Name: "Qty", Type: ibg.PrimitiveTypes.Int64},
		ibg.NestedField{ID: 6, Name: "Small", Type: ibg.PrimitiveTypes.Int32},
		ibg.NestedField{ID: 7, Name: "When", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 8, Name: "Day", Type: ibg.PrimitiveTypes.Date},
		ibg.NestedField{ID: 9, Name: "U", Type: ibg.PrimitiveTypes.UUID},
		ibg.NestedField{ID: 10, Name: "Raw", Type: ibg.PrimitiveTypes.Binary},
		ibg.NestedField{ID: 11, Name: "Tags", Type: &ibg.ListType{ElementID: 20, Element: ibg.PrimitiveTypes.String}},
		ibg.NestedField{ID: 12, Name: "Attrs", Type: &ibg.MapType{KeyID: 21, KeyType: ibg.PrimitiveTypes.String, ValueID: 22, ValueType: ibg.PrimitiveTypes.Int64}},
		ibg.NestedField{ID: 13, Name: "Addr", Type: addr(23)},
		ibg.NestedField{ID: 14, Name: "Prev", Type: addr(25)},
		ibg.NestedField{ID: 15, Name: "extra", Type: ibg.PrimitiveTypes.String},
	)
}

func sampleOrder(k int) order {
	zip := "10001"
	note := "n"
	o := order{
		ID: int64(k), Amount: float64(k) * 1.5, State: "NY", Qty: k * 1000, Small: int16(-k),
		When: time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC).Add(time.Duration(k) * time.Hour),
		Day:  time.Date(2024, 2, 1+k%20, 0, 0, 0, 0, time.UTC),
		U:    uuid.NewSHA1(uuid.NameSpaceOID, []byte{byte(k)}).String(),
		Raw:  []byte{byte(k)}, Tags: []string{"a", "b"}, Attrs: map[string]int64{"z": 1, "a": int64(k)},
		Addr: address{City: "NYC", Zip: &zip},
	}
	if k%2 == 1 {
		o.Note, o.Prev = &note, &address{City: "Boston"}
		o.Tags, o.Attrs, o.Raw = nil, nil, nil
	}
	return o
}

func TestStructMapping(t *testing.T) {
	m, err := MapStruct(reflect.TypeOf(&order{}))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range m.Fields {
		cols = append(cols, f.Column)
	}
	want := "order_id amount State Note Qty Small When Day U Raw Tags Attrs Addr Prev"
	if got := strings.Join(cols, " "); got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	tests := []struct {
		name    string
		columns []string
		want    []int
	}{
		{"exact beats case-insensitive", []string{"state", "State"}, []int{-1, -1, 1}},
		{"case-insensitive for untagged", []string{"STATE"}, []int{-1, -1, 0}},
		{"tags match exactly", []string{"ORDER_ID", "Amount", "ID"}, []int{-1, -1, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Match(tc.columns)[:3]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := MapStruct(reflect.TypeOf(1)); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("MapStruct(int) err = %v", err)
	}
}

func TestStructsThroughArrow(t *testing.T) {
	sc := orderSchema()
	bb, err := NewBatchBuilder(sc, checkedAlloc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	var want []order
	for k := range 6 {
		o := sampleOrder(k)
		if k%3 == 0 {
			err = bb.AppendStruct(&o)
		} else {
			err = bb.AppendStruct(o)
		}
		if err != nil {
			t.Fatalf("AppendStruct %d: %v", k, err)
		}
		o.Skip = ""
		want = append(want, o)
	}
	rec := bb.NewBatch()
	defer rec.Release()

	sr, err := NewStructReader(reflect.TypeOf(order{}), rec.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendStructs(sr, rec, []order(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("structs:\n got %+v\nwant %+v", got, want)
	}
	boxed, err := sr.AppendValues(rec, nil)
	if err != nil || len(boxed) != len(want) || !reflect.DeepEqual(boxed[1].(order), want[1]) {
		t.Fatalf("AppendValues: %v, %d values", err, len(boxed))
	}
	if _, err := appendStructs(sr, rec, []address(nil)); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("wrong T: err = %v", err)
	}

	// The same batch as rows agrees with StructValues.Values.
	rd, err := NewArrowReader(rec.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rd.AppendRows(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := NewStructValues(reflect.TypeOf(order{}), sc)
	if err != nil {
		t.Fatal(err)
	}
	if s := SchemaOf(sc); !slices.Equal(s.Names(), rd.Schema().Names()) || !slices.EqualFunc(s.Types(), rd.Schema().Types(), func(a, b ibg.Type) bool { return a.Equals(b) }) {
		t.Errorf("SchemaOf = %v %v, want the reader's %v %v", s.Names(), s.Types(), rd.Schema().Names(), rd.Schema().Types())
	}
	for k, o := range want {
		vals, err := sv.Values(o)
		if err != nil {
			t.Fatal(err)
		}
		if r := Of(rd.Schema(), vals); !Equal(r, rows[k]) {
			t.Errorf("row %d:\n values %v\n  batch %v", k, r, rows[k])
		}
		r, err := sv.Row(o)
		if err != nil || !Equal(r, rows[k]) || r.Schema() != sv.rows {
			t.Errorf("StructValues.Row %d = %v, %v; want %v on the shared schema", k, r, err, rows[k])
		}
		rv, err := RowValues(rows[k], sc)
		if err != nil || !Equal(Of(rd.Schema(), rv), rows[k]) {
			t.Errorf("RowValues %d: %v", k, err)
		}
	}
	if m, _ := rows[0].Get("Attrs"); !Equal(New([]string{"m"}, []any{m}), New([]string{"m"}, []any{[]MapEntry{{"a", int64(0)}, {"z", int64(1)}}})) {
		t.Errorf("map entries not sorted by key: %v", m)
	}
}

func TestStructErrors(t *testing.T) {
	sc := orderSchema()
	type lonely struct{ Missing int64 }
	type badDay struct {
		ID  int64 `iceberg:"order_id"`
		Day time.Time
	}
	type narrow struct {
		ID    int64 `iceberg:"order_id"`
		Small int8
	}
	t.Run("reader field without column", func(t *testing.T) {
		as := arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		_, err := NewStructReader(reflect.TypeOf(lonely{}), as, nil)
		if !errors.Is(err, ErrUnknownColumn) || !strings.Contains(err.Error(), "Missing") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("values field without column", func(t *testing.T) {
		_, err := NewStructValues(reflect.TypeOf(lonely{}), sc)
		if !errors.Is(err, ErrUnknownColumn) || !strings.Contains(err.Error(), "Missing") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("date not midnight", func(t *testing.T) {
		bb, err := NewBatchBuilder(sc, checkedAlloc(t))
		if err != nil {
			t.Fatal(err)
		}
		defer bb.Release()
		err = bb.AppendStruct(badDay{ID: 1, Day: time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)})
		if !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), `"Day"`) || bb.Len() != 0 {
			t.Fatalf("err = %v, Len %d", err, bb.Len())
		}
	})
	t.Run("read into too narrow field", func(t *testing.T) {
		bb, err := NewBatchBuilder(sc, checkedAlloc(t))
		if err != nil {
			t.Fatal(err)
		}
		defer bb.Release()
		if err := bb.AppendRow(New([]string{"order_id", "Small"}, []any{int64(1), int32(1000)})); err != nil {
			t.Fatal(err)
		}
		rec := bb.NewBatch()
		defer rec.Release()
		sr, err := NewStructReader(reflect.TypeOf(narrow{}), rec.Schema(), sc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := appendStructs(sr, rec, []narrow(nil)); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), "Small") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInferStructSchema(t *testing.T) {
	sc, err := InferStructSchema(reflect.TypeOf(order{}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1: order_id: required long", "2: amount: required double", "3: State: required string",
		"4: Note: optional string", "5: Qty: required long", "6: Small: required int",
		"7: When: required timestamptz", "8: Day: required timestamptz", "9: U: required string",
		"10: Raw: optional binary", "11: Tags: optional list<string>", "13: Attrs: optional map<string, long>",
		"16: Addr: required struct<17: city: required string, 18: zip: optional string>",
		"19: Prev: optional struct<20: city: required string, 21: zip: optional string>",
	}
	var got []string
	for _, f := range sc.Fields() {
		got = append(got, f.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	assertFreshIDs(t, sc)
	if _, err := InferStructSchema(reflect.TypeOf(struct{ C chan int }{})); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("chan field: err = %v", err)
	}
}

// assertFreshIDs checks that sc's IDs are those iceberg-go assigns to a new table.
func assertFreshIDs(t *testing.T, sc *ibg.Schema) {
	t.Helper()
	n := 0
	fresh, err := ibg.AssignFreshSchemaIDs(sc, func() int { n++; return n })
	if err != nil {
		t.Fatal(err)
	}
	if !fresh.Equals(sc) {
		t.Errorf("IDs differ from AssignFreshSchemaIDs:\n%s\nwant\n%s", sc, fresh)
	}
}

func TestInferSchema(t *testing.T) {
	typed := rowSchemaOf(allTypesSchema(t))
	tests := []struct {
		name string
		row  Row
		want string
		err  error
	}{
		{"typed row keeps types", Of(typed, allTypesValues(typed, 0)), "", nil},
		{"untyped values", New([]string{"a", "b", "ts", "l", "m", "r"}, []any{int32(1), "x", ibg.Timestamp(1),
			[]any{nil, int64(2)}, []MapEntry{{"k", 1.5}}, New([]string{"z"}, []any{true})}),
			"table {\n\t1: a: optional int\n\t2: b: optional string\n\t3: ts: optional timestamp\n\t4: l: optional list<long>\n\t6: m: optional map<string, double>\n\t9: r: optional struct<10: z: optional boolean>\n}", nil},
		{"null of unknown type", New([]string{"a"}, []any{nil}), "", ErrUnsupportedType},
		{"not a row value", New([]string{"a"}, []any{7}), "", ErrTypeMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := InferSchema(tc.row)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), `"a"`) {
					t.Errorf("err %q does not name the column", err)
				}
				return
			}
			assertFreshIDs(t, sc)
			if tc.want != "" && sc.String() != tc.want {
				t.Errorf("schema\n%s\nwant\n%s", sc, tc.want)
			}
			for i, f := range sc.Fields() {
				if tc.row.Schema().Types()[i] != nil && f.Type.Type() != tc.row.Schema().Types()[i].Type() {
					t.Errorf("column %s: %s, want %s", f.Name, f.Type, tc.row.Schema().Types()[i])
				}
			}
		})
	}
}

func TestStructFastPaths(t *testing.T) {
	sc := benchSchema()
	bb, err := NewBatchBuilder(sc, checkedAlloc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	var want []benchRecord
	for k := range 5 {
		r := benchRecord{
			ID: int64(k), UserID: int32(-k), Amount: float64(k) / 3,
			Price: ibg.Decimal{Val: decimal128.FromI64(int64(k) * 1234), Scale: 2},
			TS:    time.UnixMicro(1_700_000_000_123_456 + int64(k)).UTC(),
			Day:   time.Date(2023, 12, 30+k, 0, 0, 0, 0, time.UTC),
			Name:  strings.Repeat("n", k), City: cities[k], Flag: k%2 == 0, Score: float32(k) / 4,
		}
		if err := bb.AppendStruct(r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	if err := bb.AppendRow(New([]string{"id"}, []any{int64(9)})); err != nil { // nulls elsewhere
		t.Fatal(err)
	}
	want = append(want, benchRecord{ID: 9})
	rec := bb.NewBatch()
	defer rec.Release()
	sr, err := NewStructReader(reflect.TypeOf(benchRecord{}), rec.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sr.fields {
		if f.fast == nil {
			t.Errorf("column %s does not use a fast setter", f.name)
		}
	}
	sl := rec.NewSlice(1, 6)
	defer sl.Release()
	got, err := appendStructs(sr, sl, []benchRecord(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("got  %+v\nwant %+v", got, want[1:])
	}
}

type myInt64 int64

// flatRow has a field of every kind StructValues reads without reflection (see
// flatField) and the schema inference takes (not uint and uint64), named and
// pointer types among them.
type flatRow struct {
	B   bool
	I8  int8
	I16 int16
	I32 int32
	I   int
	I64 myInt64
	U8  uint8
	U16 uint16
	U32 uint32
	F32 float32
	F64 float64
	S   string
	PS  *string
	PI  *int64
	PF  *float64
	PB  *bool
}

// onePointer is boxed in an interface as its pointer (pointer-shaped): the flat
// path must not take the interface's data word for its address.
type onePointer struct {
	S *string
}

// TestStructValuesFlat: the flat path (no reflection, values boxed in slabs) gives
// the values and Go types of the reflection path, for structs and pointers to
// them, nil pointer fields null, a later row not sharing an earlier row's values;
// a pointer-shaped struct, a pointer to a pointer and a nil pointer take the
// reflection path.
func TestStructValuesFlat(t *testing.T) {
	s1, s2 := "x\x00y", "other"
	i64, f64, b := int64(-9), 2.5, true
	rows := []flatRow{
		{B: true, I8: -8, I16: -16, I32: -32, I: -1 << 40, I64: -64, U8: 8, U16: 16, U32: 32,
			F32: 3.25, F64: -6.5, S: "héllo", PS: &s1, PI: &i64, PF: &f64, PB: &b},
		{S: s2},
	}
	sc, err := InferStructSchema(reflect.TypeFor[flatRow]())
	if err != nil {
		t.Fatal(err)
	}
	flat, err := NewStructValues(reflect.TypeFor[flatRow](), sc)
	if err != nil {
		t.Fatal(err)
	}
	if flat.flat == nil {
		t.Fatal("flatRow does not take the flat path")
	}
	slow, _ := NewStructValues(reflect.TypeFor[flatRow](), sc)
	slow.flat = nil
	same := func(what string, got, want []any) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range want {
			if reflect.TypeOf(got[i]) != reflect.TypeOf(want[i]) || got[i] != want[i] {
				t.Errorf("%s: column %s = %#v (%T), want %#v (%T)", what, sc.Field(i).Name, got[i], got[i], want[i], want[i])
			}
		}
	}
	var firsts [][]any
	for _, r := range rows {
		want, err := slow.AppendValues(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []any{r, &r} {
			got, err := flat.AppendValues(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			same(fmt.Sprintf("%T", v), got, want)
			firsts = append(firsts, got)
		}
	}
	want, _ := slow.AppendValues(nil, rows[0])
	same("the first row after the second", firsts[0], want)

	pp := &rows[0]
	if got, err := flat.AppendValues(nil, &pp); err != nil {
		t.Fatal(err)
	} else {
		same("**flatRow", got, want)
	}
	if _, err := flat.Values((*flatRow)(nil)); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("nil *flatRow: %v, want ErrTypeMismatch", err)
	}
	if _, err := flat.Values(onePointer{}); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("another type: %v, want ErrTypeMismatch", err)
	}

	osc, _ := InferStructSchema(reflect.TypeFor[onePointer]())
	op, err := NewStructValues(reflect.TypeFor[onePointer](), osc)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{onePointer{S: &s2}, &onePointer{S: &s2}, onePointer{}} {
		got, err := op.Values(v)
		if err != nil {
			t.Fatal(err)
		}
		if w := (onePointer{S: &s2}); reflect.DeepEqual(v, w) || reflect.DeepEqual(v, &w) {
			if got[0] != s2 {
				t.Errorf("%#v: %#v, want %q", v, got, s2)
			}
		} else if got[0] != nil {
			t.Errorf("%#v: %#v, want null", v, got)
		}
	}

	type withTime struct {
		S string
		T time.Time
	}
	tsc, _ := InferStructSchema(reflect.TypeFor[withTime]())
	if wt, err := NewStructValues(reflect.TypeFor[withTime](), tsc); err != nil || wt.flat != nil {
		t.Errorf("a struct with a time.Time field: flat %v, %v; want the reflection path", wt != nil && wt.flat != nil, err)
	}
}
