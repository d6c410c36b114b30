package row

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func TestCoderRoundTrip(t *testing.T) {
	s := rowSchemaOf(allTypesSchema(t))
	untyped := func(k int) Row { return New(s.Names(), allTypesValues(s, k)) }
	tests := []struct {
		name string
		row  Row
	}{
		{"zero row", Row{}},
		{"no columns", Of(NewSchema(nil, nil), nil)},
		{"typed all types", Of(s, allTypesValues(s, 0))},
		{"typed other values", Of(s, allTypesValues(s, 1))},
		{"typed nulls", Of(s, allTypesValues(s, 2))},
		{"untyped all types", untyped(0)},
		{"untyped nulls", untyped(2)},
		{"untyped nested row", New([]string{"r", "l"}, []any{New([]string{"a"}, []any{int64(1)}), []any{nil, []any{int32(1)}}})},
		{"big decimal", Of(NewSchema([]string{"d"}, []ibg.Type{ibg.DecimalTypeOf(38, 0)}),
			[]any{ibg.Decimal{Val: decimal128.MaxDecimal128, Scale: 0}})},
		{"negative decimal", Of(NewSchema([]string{"d"}, []ibg.Type{ibg.DecimalTypeOf(10, 2)}),
			[]any{ibg.Decimal{Val: decimal128.FromI64(-12345), Scale: 2}})},
		{"special floats", New([]string{"nan", "inf", "negzero"}, []any{math.NaN(), float32(math.Inf(-1)), math.Copysign(0, -1)})},
		{"odd names", New([]string{"_change_type", "my-col", "ünï", ""}, []any{"c", int32(1), "x", nil})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.row)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !Equal(got, tc.row) {
				t.Fatalf("round trip:\n got %v\nwant %v", got, tc.row)
			}
			if tc.row.Schema() != nil && !reflect.DeepEqual(typeStrings(got.Schema()), typeStrings(tc.row.Schema())) {
				t.Errorf("types %v, want %v", typeStrings(got.Schema()), typeStrings(tc.row.Schema()))
			}
			b2, err := Encode(got)
			if err != nil {
				t.Fatalf("re-Encode: %v", err)
			}
			if !bytes.Equal(b, b2) {
				t.Errorf("encoding not deterministic:\n%x\n%x", b, b2)
			}
		})
	}
}

func typeStrings(s *Schema) []string {
	var out []string
	for _, t := range s.Types() {
		if t == nil {
			out = append(out, "?")
		} else {
			out = append(out, t.String())
		}
	}
	return out
}

func TestCoderSharesDecodedSchema(t *testing.T) {
	s := rowSchemaOf(allTypesSchema(t))
	var first *Schema
	for k := range 5 {
		b, err := Encode(Of(s, allTypesValues(s, k)))
		if err != nil {
			t.Fatal(err)
		}
		// Interleave another schema so the single-entry fast path is not what shares.
		if _, err := Decode(mustEncode(t, New([]string{"other"}, []any{int32(k)}))); err != nil {
			t.Fatal(err)
		}
		r, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r.Schema()
		} else if r.Schema() != first {
			t.Fatalf("row %d decoded with a new *Schema", k)
		}
		pt := r.Values()[18]
		if k%3 != 2 && pt.(Row).Schema() != first.plan.cols[18].schema {
			t.Fatalf("nested struct row %d does not share the nested schema", k)
		}
	}
}

func mustEncode(t testing.TB, r Row) []byte {
	t.Helper()
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCoderTypedIsCompact(t *testing.T) {
	s := NewSchema([]string{"id", "v"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int32})
	b := mustEncode(t, Of(s, []any{int64(5), int32(-1)}))
	header := 1 + len(s.cached)
	if body := len(b) - header; body != 3 { // bitmap + 1-byte varint + 1-byte varint
		t.Errorf("body is %d bytes, want 3 (%x)", body, b)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	s := rowSchemaOf(allTypesSchema(t))
	var packed []byte
	var want []Row
	for k := range 4 {
		r := Of(s, allTypesValues(s, k))
		var err error
		if packed, err = AppendBody(packed, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	for k := 0; len(packed) > 0; k++ {
		r, n, err := DecodeBody(s, packed)
		if err != nil {
			t.Fatal(err)
		}
		if r.Schema() != s || !Equal(r, want[k]) {
			t.Fatalf("row %d: %v, want %v", k, r, want[k])
		}
		packed = packed[n:]
	}
	if _, err := AppendBody(nil, Row{}); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("zero row: err = %v", err)
	}
}

// TestAppendBodyWith: a body with one more column appended is the body of the row
// with that value, for bodies whose presence bytes grow (8 columns to 9) or not,
// and a null value; a value of the wrong type is refused, naming the column.
func TestAppendBodyWith(t *testing.T) {
	for _, cols := range []int{1, 4, 7, 8, 9, 16} {
		names := make([]string, cols+1)
		types := make([]ibg.Type, cols+1)
		for i := range names {
			names[i], types[i] = fmt.Sprintf("c%d", i), ibg.PrimitiveTypes.Int64
		}
		types[1%cols] = ibg.PrimitiveTypes.String
		all := NewSchema(names, types)
		head := NewSchema(names[:cols], types[:cols])
		for _, last := range []any{int64(-70000), nil} {
			vals := make([]any, cols+1)
			for i := range cols {
				switch {
				case i%3 == 2:
					// null
				case types[i] == ibg.PrimitiveTypes.String:
					vals[i] = fmt.Sprintf("s%d", i)
				default:
					vals[i] = int64(i * 1000)
				}
			}
			vals[cols] = last
			body, err := AppendBody(nil, Of(head, vals[:cols]))
			if err != nil {
				t.Fatal(err)
			}
			want, err := AppendBody([]byte{0xAB}, Of(all, vals))
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendBodyWith([]byte{0xAB}, body, all, last)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d columns and %v: %x, want %x", cols, last, got, want)
			}
			r, _, err := DecodeBody(all, got[1:])
			if err != nil || !Equal(r, Of(all, vals)) {
				t.Fatalf("%d columns and %v: decoded %v (%v), want %v", cols, last, r, err, vals)
			}
		}
	}
	s := NewSchema([]string{"a", "_row_id"}, []ibg.Type{ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int64})
	if _, err := AppendBodyWith(nil, []byte{0}, s, "x"); !errors.Is(err, ErrTypeMismatch) || !strings.Contains(err.Error(), "_row_id") {
		t.Errorf("a string for a long column: %v", err)
	}
}

func TestCoderEncodeErrors(t *testing.T) {
	s := rowSchemaOf(allTypesSchema(t))
	with := func(col int, v any) Row {
		vals := allTypesValues(s, 0)
		vals[col] = v
		return Of(s, vals)
	}
	tests := []struct {
		name    string
		row     Row
		wantCol string
		want    error
	}{
		{"int64 in int column", with(1, int64(1)), `"i"`, ErrTypeMismatch},
		{"int in long column", with(2, 1), `"l"`, ErrTypeMismatch},
		{"string in uuid", with(13, uuid.NewString()), `"u"`, ErrTypeMismatch},
		{"wrong fixed length", with(14, []byte{1}), `"fx"`, ErrTypeMismatch},
		{"decimal wrong scale", with(5, ibg.Decimal{Val: decimal128.FromI64(1), Scale: 2}), `"dec"`, ErrTypeMismatch},
		{"decimal too precise", Of(NewSchema([]string{"d"}, []ibg.Type{ibg.DecimalTypeOf(3, 0)}), []any{ibg.Decimal{Val: decimal128.FromI64(1000)}}), `"d"`, ErrTypeMismatch},
		{"list element", with(16, []any{"a", int32(1)}), `"tags.element"`, ErrTypeMismatch},
		{"map value", with(17, []MapEntry{{Key: "a", Value: "x"}}), `"attrs.value"`, ErrTypeMismatch},
		{"map null key", with(17, []MapEntry{{Key: nil, Value: int64(1)}}), `"attrs.key"`, ErrRequiredNull},
		{"struct field", with(18, New([]string{"x", "label"}, []any{float32(1), nil})), `"pt.x"`, ErrTypeMismatch},
		{"struct wrong fields", with(18, New([]string{"y", "label"}, []any{1.0, nil})), `"pt"`, ErrTypeMismatch},
		{"required list element null", with(19, []any{nil}), `"pts.element"`, ErrRequiredNull},
		{"untyped unsupported", New([]string{"c"}, []any{struct{}{}}), `"c"`, ErrTypeMismatch},
		{"time.Time in timestamp", with(8, []int{1}), `"ts"`, ErrTypeMismatch},
		{"value count", Of(s, []any{true}), "", ErrTypeMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Encode(tc.row)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantCol) || !strings.HasPrefix(err.Error(), "iceberg: encode row: ") {
				t.Errorf("err %q does not name column %s", err, tc.wantCol)
			}
		})
	}
}

func TestCoderDecodeCorrupt(t *testing.T) {
	s := rowSchemaOf(allTypesSchema(t))
	good := mustEncode(t, Of(s, allTypesValues(s, 1)))
	for cut := 0; cut < len(good); cut++ {
		if _, err := Decode(good[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode of %d/%d bytes: err = %v, want ErrCorrupt", cut, len(good), err)
		}
	}
	if _, err := Decode(append(good, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: err = %v, want ErrCorrupt", err)
	}
	if _, err := Decode([]byte{3, 1, 0, 99}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad type tag: err = %v, want ErrCorrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	s := rowSchemaOf(allTypesSchema(f))
	for k := range 3 {
		f.Add(mustEncode(f, Of(s, allTypesValues(s, k))))
	}
	f.Add(mustEncode(f, New([]string{"a"}, []any{[]any{int64(1)}})))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		b2, err := Encode(r)
		if err != nil {
			t.Fatalf("decoded row does not encode: %v", err)
		}
		r2, err := Decode(b2)
		if err != nil || !Equal(r, r2) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
