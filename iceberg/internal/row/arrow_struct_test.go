package row

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
)

// directRec has a field of every kind AppendStruct appends without boxing (see
// structPlan), pointers among them, next to fields that take the boxed path.
type directRec struct {
	L8    int8     `iceberg:"l8"`
	L16   int16    `iceberg:"l16"`
	L32   int32    `iceberg:"l32"`
	LInt  int      `iceberg:"lint"`
	L64   int64    `iceberg:"l64"`
	LU8   uint8    `iceberg:"lu8"`
	LU16  uint16   `iceberg:"lu16"`
	LU32  uint32   `iceberg:"lu32"`
	I16   int16    `iceberg:"i16"`
	IInt  int      `iceberg:"iint"`
	IU32  uint32   `iceberg:"iu32"`
	D32   float32  `iceberg:"d32"`
	D64   float64  `iceberg:"d64"`
	F32   float32  `iceberg:"f32"`
	B     bool     `iceberg:"b"`
	S     string   `iceberg:"s"`
	PS    *string  `iceberg:"ps"`
	PL    *int64   `iceberg:"pl"`
	Req   *int64   `iceberg:"req"`
	Tags  []string `iceberg:"tags"` // boxed: a list
	Named myLong   `iceberg:"named"`
}

type myLong int64

func directSchema() *ibg.Schema {
	id := 0
	f := func(name string, t ibg.Type, req bool) ibg.NestedField {
		id++
		return ibg.NestedField{ID: id, Name: name, Type: t, Required: req}
	}
	long, i32 := ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Int32
	return ibg.NewSchema(0,
		f("l8", long, false), f("l16", long, false), f("l32", long, false), f("lint", long, false),
		f("l64", long, true), f("lu8", long, false), f("lu16", long, false), f("lu32", long, false),
		f("i16", i32, false), f("iint", i32, false), f("iu32", i32, false),
		f("d32", ibg.PrimitiveTypes.Float64, false), f("d64", ibg.PrimitiveTypes.Float64, false),
		f("f32", ibg.PrimitiveTypes.Float32, false), f("b", ibg.PrimitiveTypes.Bool, false),
		f("s", ibg.PrimitiveTypes.String, false), f("ps", ibg.PrimitiveTypes.String, false),
		f("pl", long, false), f("req", long, true),
		ibg.NestedField{ID: 100, Name: "tags", Type: &ibg.ListType{ElementID: 101, Element: ibg.PrimitiveTypes.String, ElementRequired: true}},
		f("named", long, false),
		f("unmapped", ibg.PrimitiveTypes.String, false),
	)
}

// TestAppendStructDirect: structs appended field by field straight to Arrow give the
// same batch as their boxed values through AppendValues (the path every other row
// takes), and a struct that does not fit (a nil required pointer, an integer out of
// range, a string that is not UTF-8, in direct and boxed fields) is an error naming
// the column with nothing of it appended.
func TestAppendStructDirect(t *testing.T) {
	sc := directSchema()
	s, one := "ok", int64(1)
	good := []directRec{
		{L8: -8, L16: -16, L32: -32, LInt: math.MaxInt64, L64: math.MinInt64, LU8: 255, LU16: 65535, LU32: math.MaxUint32,
			I16: -3, IInt: math.MaxInt32, IU32: math.MaxInt32, D32: 1.5, D64: -2.25, F32: 3.5, B: true, S: "zürich",
			PS: &s, PL: &one, Req: &one, Tags: []string{"a"}, Named: 7},
		{IInt: math.MinInt32, Req: &one},
	}
	bad := map[string]directRec{
		`column "req"`:          {},
		`column "iint"`:         {IInt: math.MaxInt32 + 1, Req: &one},
		`column "iu32"`:         {IU32: math.MaxInt32 + 1, Req: &one},
		`column "s"`:            {S: "bad\xff", Req: &one},
		`column "tags.element"`: {Tags: []string{"bad\xff"}, Req: &one},
	}
	direct, err := NewBatchBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Release()
	boxed, err := NewBatchBuilder(sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer boxed.Release()
	sv, err := NewStructValues(directRecType, sc)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range good {
		if err := direct.AppendStruct(&r); err != nil {
			t.Fatalf("struct %d: %v", i, err)
		}
		for col, b := range bad { // each between the good ones: nothing of it may stay
			err := direct.AppendStruct(b)
			if err == nil || !strings.Contains(err.Error(), col) {
				t.Fatalf("struct %+v: error %v, want one naming %s", b, err, col)
			}
		}
		vals, err := sv.AppendValues(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := boxed.AppendValues(vals); err != nil {
			t.Fatalf("struct %d through AppendValues: %v", i, err)
		}
	}
	if err := direct.AppendStruct(directRec{}); !errors.Is(err, ErrRequiredNull) {
		t.Fatalf("nil required pointer: %v, want ErrRequiredNull", err)
	}
	if direct.Len() != len(good) || direct.Bytes() != boxed.Bytes() {
		t.Fatalf("direct builder holds %d rows, %d bytes; want %d rows, %d bytes", direct.Len(), direct.Bytes(), len(good), boxed.Bytes())
	}
	got, want := direct.NewBatch(), boxed.NewBatch()
	defer got.Release()
	defer want.Release()
	if !array.RecordEqual(got, want) {
		t.Fatalf("direct batch\n%v\nwant\n%v", got, want)
	}
	if n := got.Column(sc.NumFields() - 1).NullN(); n != len(good) {
		t.Fatalf("unmapped column has %d nulls, want %d", n, len(good))
	}
	if v := got.Column(0).(*array.Int64).Value(0); v != -8 || got.Schema().Field(0).Type.ID() != arrow.INT64 {
		t.Fatalf("l8 = %d (%s), want -8 as int64", v, got.Schema().Field(0).Type)
	}
	// Every mapped field above but tags takes the direct path.
	p := direct.structs[directRecType]
	for k, f := range p.sv.mapping.Fields {
		if boxedField := p.direct[k].put == nil; boxedField != (f.Column == "tags") {
			t.Errorf("field %s: boxed = %v", f.GoName, boxedField)
		}
	}
}

var directRecType = reflect.TypeFor[directRec]()
