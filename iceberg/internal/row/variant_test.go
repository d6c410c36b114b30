package row

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func mustVariant(t testing.TB, v any) Variant {
	t.Helper()
	x, err := NewVariant(v)
	if err != nil {
		t.Fatalf("NewVariant(%v): %v", v, err)
	}
	return x
}

// TestVariantGoValues: NewVariant encodes Go values and Value gives them back in the
// documented Go types, at every depth.
func TestVariantGoValues(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 30, 0, 123456000, time.UTC)
	u := uuid.MustParse("0190c6a8-1c2b-7d3e-8f40-112233445566")
	dec := ibg.Decimal{Val: decimal128.FromI64(-12345), Scale: 2}
	big := ibg.Decimal{Val: decimal128.New(1, 7), Scale: 10} // needs 16 bytes
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"variant null", nil, nil},
		{"bool", true, true},
		{"int8 widens", int8(-3), int64(-3)},
		{"int", 70000, int64(70000)},
		{"int64", int64(1) << 40, int64(1) << 40},
		{"uint32", uint32(7), int64(7)},
		{"float32", float32(1.5), float32(1.5)},
		{"float64", 2.25, 2.25},
		{"json.Number int", json.Number("42"), int64(42)},
		{"json.Number float", json.Number("4.5"), 4.5},
		{"string", "héllo", "héllo"},
		{"long string", strings.Repeat("x", 100), strings.Repeat("x", 100)},
		{"binary", []byte{0, 1, 2}, []byte{0, 1, 2}},
		{"uuid", u, u},
		{"decimal4", dec, dec},
		{"decimal16", big, big},
		{"date", ibg.Date(19000), ibg.Date(19000)},
		{"time", ibg.Time(3_600_000_001), ibg.Time(3_600_000_001)},
		{"timestamp", ibg.Timestamp(at.UnixMicro()), ibg.Timestamp(at.UnixMicro())},
		{"timestamp_ns", ibg.TimestampNano(at.UnixNano() + 7), ibg.TimestampNano(at.UnixNano() + 7)},
		{"time.Time is timestamptz", at.In(time.FixedZone("x", 3600)), at},
		{"time.Time nanos", at.Add(9), at.Add(9)},
		{"array", []any{int64(1), "two", nil, []any{true}}, []any{int64(1), "two", nil, []any{true}}},
		{"typed slice", []string{"a", "b"}, []any{"a", "b"}},
		{"object", map[string]any{"a": int64(1), "b": map[string]any{"c": []any{2.5, nil}}},
			map[string]any{"a": int64(1), "b": map[string]any{"c": []any{2.5, nil}}}},
		{"typed map", map[string]int32{"k": 5}, map[string]any{"k": int64(5)}},
		{"row is object", New([]string{"id", "tags"}, []any{int64(9), []any{"t"}}), map[string]any{"id": int64(9), "tags": []any{"t"}}},
		{"map entries", []MapEntry{{Key: "x", Value: ibg.Date(1)}}, map[string]any{"x": ibg.Date(1)}},
		{"nested variant", []any{mustVariant(t, map[string]any{"z": false})}, []any{map[string]any{"z": false}}},
		{"pointer", func() *int64 { v := int64(3); return &v }(), int64(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVariant(t, tc.in)
			got := v.Value()
			if !reflect.DeepEqual(got, tc.want) && !variantValuesEqual(got, tc.want) {
				t.Fatalf("Value() = %#v, want %#v", got, tc.want)
			}
			// the result encodes the same value again
			again := mustVariant(t, got)
			if !again.Equal(v) {
				t.Fatalf("NewVariant(Value()) = %s, want %s", again, v)
			}
			// and the encoding reads back through VariantFromBytes
			back, err := VariantFromBytes(v.Metadata(), v.Bytes())
			if err != nil || !back.Equal(v) {
				t.Fatalf("VariantFromBytes: %v, %s", err, back)
			}
		})
	}
}

func TestVariantErrors(t *testing.T) {
	for name, in := range map[string]any{
		"channel":       make(chan int),
		"int-keyed map": map[int]any{1: "a"},
		"bad utf8":      string([]byte{0xff}),
		"nested bad":    map[string]any{"a": []any{make(chan int)}},
		"uint64 range":  uint64(1) << 63,
		"bad entry key": []MapEntry{{Key: int64(1), Value: "a"}},
	} {
		if _, err := NewVariant(in); !errors.Is(err, ErrUnsupportedType) && !errors.Is(err, ErrTypeMismatch) {
			t.Errorf("%s: NewVariant error %v, want ErrUnsupportedType or ErrTypeMismatch", name, err)
		}
	}
	if _, err := VariantFromBytes([]byte{1, 0, 0}, []byte{0xff, 0xff}); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("VariantFromBytes of garbage: %v", err)
	}
	if _, err := ParseVariantJSON(`{"a":1,"a":2}`); err == nil {
		t.Error("ParseVariantJSON accepted a duplicate key")
	}
}

// TestVariantJSON: JSON sorts keys and writes every type deterministically; parsing
// JSON gives the same value.
func TestVariantJSON(t *testing.T) {
	v, err := ParseVariantJSON(`{"b": [1, 2.5, "x", null, true], "a": {"c": null, "d": -7}}`)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"a":{"c":null,"d":-7},"b":[1,2.5,"x",null,true]}`
	if got := v.JSON(); got != want {
		t.Fatalf("JSON() = %s, want %s", got, want)
	}
	w := mustVariant(t, map[string]any{"b": []any{1, ibg.Decimal{Val: decimal128.FromI64(25), Scale: 1}, "x", nil, true},
		"a": map[string]any{"d": -7, "c": nil}})
	if !v.Equal(w) || w.JSON() != want {
		t.Fatalf("built variant %s, parsed %s: not equal", w, v)
	}
	at := time.Date(2024, 5, 1, 12, 30, 0, 5000, time.UTC)
	x := mustVariant(t, []any{at, ibg.Timestamp(at.UnixMicro()), ibg.Date(0), []byte("hi")})
	const wantX = `["2024-05-01T12:30:00.000005Z","2024-05-01T12:30:00.000005","1970-01-01","aGk="]`
	if got := x.JSON(); got != wantX {
		t.Fatalf("JSON() = %s, want %s", got, wantX)
	}
	if got, _ := json.Marshal(map[string]any{"v": x}); string(got) != `{"v":`+wantX+`}` {
		t.Fatalf("json.Marshal = %s", got)
	}
}

func TestVariantEqual(t *testing.T) {
	a := mustVariant(t, map[string]any{"x": int64(1), "y": "s"})
	b, _ := ParseVariantJSON(`{"y":"s","x":1}`)
	c := mustVariant(t, map[string]any{"x": int64(2), "y": "s"})
	null := mustVariant(t, nil)
	if !a.Equal(b) || a.Equal(c) || a.Equal(null) || null.Equal(Variant{}) || !null.Equal(mustVariant(t, nil)) {
		t.Fatalf("Equal: a=b %v, a=c %v, a=null %v, null=zero %v", a.Equal(b), a.Equal(c), a.Equal(null), null.Equal(Variant{}))
	}
	if !Equal(New([]string{"v"}, []any{a}), New([]string{"v"}, []any{b})) || Equal(New([]string{"v"}, []any{a}), New([]string{"v"}, []any{c})) {
		t.Fatal("row Equal does not compare variants by value")
	}
	if s := New([]string{"v"}, []any{a}).String(); s != `{v: variant({"x":1,"y":"s"})}` {
		t.Fatalf("String() = %s", s)
	}
}

// variantSchema has variant columns at the top level, in a list and in a struct, and
// an unknown column.
func variantSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "v", Type: ibg.VariantType{}},
		ibg.NestedField{ID: 3, Name: "vs", Type: &ibg.ListType{ElementID: 6, Element: ibg.VariantType{}}},
		ibg.NestedField{ID: 4, Name: "s", Type: &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: 7, Name: "inner", Type: ibg.VariantType{}, Required: true}}}},
		ibg.NestedField{ID: 5, Name: "nothing", Type: ibg.PrimitiveTypes.Unknown},
	)
}

func variantRows(t testing.TB, s *Schema) []Row {
	inner := structSchema(s.Types()[3].(*ibg.StructType))
	obj := mustVariant(t, map[string]any{"name": "a", "n": int64(1), "tags": []any{"x", nil, 2.5}, "deep": map[string]any{"ok": true}})
	return []Row{
		Of(s, []any{int64(1), obj, []any{mustVariant(t, int64(5)), nil, mustVariant(t, "s")}, Of(inner, []any{mustVariant(t, []any{})}), nil}),
		Of(s, []any{int64(2), mustVariant(t, nil), nil, nil, nil}), // a variant null, not a null
		Of(s, []any{int64(3), nil, []any{}, Of(inner, []any{mustVariant(t, ibg.Date(3))}), nil}),
		Of(s, []any{int64(4), mustVariant(t, ibg.Decimal{Val: decimal128.FromI64(12345), Scale: 3}), nil, nil, nil}),
	}
}

// TestVariantCoderRoundTrip: rows with variants encode and decode to equal rows with
// the same variant bytes, typed and untyped; a value for an unknown column is an error
// naming it; corrupt variant bytes are ErrCorrupt.
func TestVariantCoderRoundTrip(t *testing.T) {
	s := SchemaOf(variantSchema())
	for _, r := range variantRows(t, s) {
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(got, r) {
			t.Fatalf("decoded %s, want %s", got, r)
		}
		if v, ok := r.Value(1).(Variant); ok {
			g := got.Value(1).(Variant)
			if string(g.Bytes()) != string(v.Bytes()) || string(g.Metadata()) != string(v.Metadata()) {
				t.Fatalf("variant bytes changed: %x/%x, want %x/%x", g.Metadata(), g.Bytes(), v.Metadata(), v.Bytes())
			}
		}
		// untyped row: dynamic values
		u := New(r.Names(), r.Values())
		b, err = Encode(u)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Decode(b); err != nil || !Equal(got, u) {
			t.Fatalf("untyped: decoded %s (%v), want %s", got, err, u)
		}
	}
	bad := Of(s, []any{int64(1), nil, nil, nil, "x"})
	if _, err := Encode(bad); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), `"nothing"`) {
		t.Fatalf("encode of a value in an unknown column: %v", err)
	}
	notVariant := Of(s, []any{int64(1), "raw", nil, nil, nil})
	if _, err := Encode(notVariant); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), `"v"`) {
		t.Fatalf("encode of a string in a variant column: %v", err)
	}
	// corrupt the variant's value bytes: the header of an object with a huge count
	r := Of(NewSchema([]string{"v"}, []ibg.Type{ibg.VariantType{}}), []any{mustVariant(t, map[string]any{"a": int64(1)})})
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	vb := r.Value(0).(Variant).Bytes()
	i := strings.LastIndex(string(b), string(vb))
	b[i+1] = 0xff // number of fields
	if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode of corrupt variant: %v", err)
	}
}

// TestVariantArrowRoundTrip: the BatchBuilder writes variants into the variant
// extension type, and ArrowReader reads them back as rows and as views, with and
// without the Iceberg schema; a variant null stays a variant null.
func TestVariantArrowRoundTrip(t *testing.T) {
	sc := variantSchema()
	mem := checkedAlloc(t)
	bb, err := NewBatchBuilder(sc, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	want := variantRows(t, bb.RowSchema())
	for _, r := range want {
		if err := bb.AppendRow(r); err != nil {
			t.Fatal(err)
		}
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if _, ok := rec.Schema().Field(1).Type.(*extensions.VariantType); !ok {
		t.Fatalf("column v is %s, want the variant extension type", rec.Schema().Field(1).Type)
	}
	if rec.Schema().Field(4).Type.ID() != arrow.NULL {
		t.Fatalf("column nothing is %s, want null", rec.Schema().Field(4).Type)
	}
	for _, tc := range []struct {
		name  string
		sc    *ibg.Schema
		views bool
	}{{"rows", sc, false}, {"views", sc, true}, {"rows, types from arrow", nil, false}, {"views, types from arrow", nil, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewArrowReader(rec.Schema(), tc.sc)
			if err != nil {
				t.Fatal(err)
			}
			if got := rd.Schema().Types()[1]; !got.Equals(ibg.VariantType{}) {
				t.Fatalf("column v has type %s", got)
			}
			read := rd.AppendRows
			if tc.views {
				read = rd.AppendViews
			}
			got, err := read(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if !Equal(got[i], want[i]) {
					t.Errorf("row %d: %s, want %s", i, got[i], want[i])
				}
			}
			if v, ok := got[1].Value(1).(Variant); !ok || v.Value() != nil || v.IsZero() {
				t.Errorf("variant null read as %#v", got[1].Value(1))
			}
			if got[2].Value(1) != nil {
				t.Errorf("null variant read as %#v", got[2].Value(1))
			}
		})
	}
}

// TestVariantNormalize: a variant column takes Variants and the Go values NewVariant
// takes; the zero Variant is an error; a Variant value infers as variant.
func TestVariantNormalize(t *testing.T) {
	vt := ibg.VariantType{}
	v := mustVariant(t, []any{"a"})
	if got, err := Normalize(v, vt); err != nil || !got.(Variant).Equal(v) {
		t.Fatalf("Normalize(Variant) = %v, %v", got, err)
	}
	got, err := Normalize(map[string]any{"k": []any{int32(1)}}, vt)
	if err != nil {
		t.Fatal(err)
	}
	if w := mustVariant(t, map[string]any{"k": []any{int64(1)}}); !got.(Variant).Equal(w) {
		t.Fatalf("Normalize(map) = %v, want %v", got, w)
	}
	if _, err := Normalize(Variant{}, vt); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("Normalize(zero Variant): %v", err)
	}
	if _, err := Normalize(make(chan int), vt); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("Normalize(chan): %v", err)
	}
	if _, err := Normalize(v, ibg.PrimitiveTypes.String); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("Normalize(Variant) into string: %v", err)
	}
	if typ, err := InferType(v); err != nil || !typ.Equals(vt) {
		t.Fatalf("InferType(Variant) = %v, %v", typ, err)
	}
	sc, err := InferSchema(New([]string{"id", "doc"}, []any{int64(1), v}))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := sc.FindFieldByName("doc"); !f.Type.Equals(vt) {
		t.Fatalf("inferred doc column %s", f.Type)
	}
	// the BatchBuilder converts raw values of a variant column
	bb, err := NewBatchBuilder(variantSchema(), checkedAlloc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	if err := bb.AppendValues([]any{int64(1), map[string]any{"a": "b"}, []any{"x"}, nil, nil}); err != nil {
		t.Fatal(err)
	}
	if err := bb.AppendValues([]any{int64(2), make(chan int), nil, nil, nil}); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"v"`) {
		t.Fatalf("AppendValues(chan) error %v, want one naming column v", err)
	}
	inner := structSchema(variantSchema().Field(3).Type.(*ibg.StructType))
	if err := bb.AppendValues([]any{int64(3), nil, nil, Of(inner, []any{nil}), nil}); !errors.Is(err, ErrRequiredNull) {
		t.Fatalf("null in a required variant field: %v", err)
	}
	if err := bb.AppendValues([]any{int64(4), nil, nil, nil, "x"}); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), `"nothing"`) {
		t.Fatalf("value in an unknown column: %v", err)
	}
	rec := bb.NewBatch()
	defer rec.Release()
	rd, err := NewArrowReader(rec.Schema(), variantSchema())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rd.AppendRows(rec, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if got := rows[0].Value(1).(Variant).JSON(); got != `{"a":"b"}` {
		t.Fatalf("raw map written as %s", got)
	}
	if got := rows[0].Value(2).([]any)[0].(Variant).JSON(); got != `"x"` {
		t.Fatalf("raw list element written as %s", got)
	}
}

// Doc is a struct with a variant field.
type Doc struct {
	ID   int64   `iceberg:"id"`
	Body Variant `iceberg:"body"`
}

// TestVariantStructField: a Variant struct field maps to an optional variant column;
// the zero Variant is null; structs read back with the same variants.
func TestVariantStructField(t *testing.T) {
	sc, err := InferStructSchema(reflect.TypeFor[Doc]())
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sc.FindFieldByName("body")
	if !f.Type.Equals(ibg.VariantType{}) || f.Required {
		t.Fatalf("body column %s required=%v, want optional variant", f.Type, f.Required)
	}
	docs := []Doc{{ID: 1, Body: mustVariant(t, map[string]any{"k": []any{int64(1), "two"}})}, {ID: 2}, {ID: 3, Body: mustVariant(t, nil)}}
	bb, err := NewBatchBuilder(sc, checkedAlloc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Release()
	for _, d := range docs {
		if err := bb.AppendStruct(d); err != nil {
			t.Fatal(err)
		}
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if !rec.Column(1).IsNull(1) || rec.Column(1).(*extensions.VariantArray).Storage().IsNull(2) {
		t.Fatal("zero Variant not written as null, or variant null written as null")
	}
	sr, err := NewStructReader(reflect.TypeFor[Doc](), rec.Schema(), sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendStructs[Doc](sr, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		if got[i].ID != docs[i].ID || !got[i].Body.Equal(docs[i].Body) || got[i].Body.IsZero() != docs[i].Body.IsZero() {
			t.Errorf("struct %d: %+v, want %+v", i, got[i], docs[i])
		}
	}
}
