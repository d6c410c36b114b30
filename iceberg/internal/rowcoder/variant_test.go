package rowcoder_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// variantDoc is a struct element with Variant fields.
type variantDoc struct {
	ID   int64
	Body row.Variant
	Opt  *row.Variant
}

func variantDocString(d variantDoc) string {
	opt := "nil"
	if d.Opt != nil {
		opt = d.Opt.JSON()
	}
	return fmt.Sprintf("%d %s zero=%v %s", d.ID, d.Body.JSON(), d.Body.IsZero(), opt)
}

func variantString(v row.Variant) string { return v.JSON() }

func init() {
	beam.RegisterType(reflect.TypeFor[variantDoc]())
	beam.RegisterFunction(variantDocString)
	beam.RegisterFunction(variantString)
}

// TestVariantCoderPipeline: Variant elements, and struct elements with Variant fields
// (which Beam's schema coder would otherwise encode as empty structs), cross a
// shuffle with their values.
func TestVariantCoderPipeline(t *testing.T) {
	obj, err := row.NewVariant(map[string]any{"a": []any{int64(1), "x", nil}, "b": map[string]any{"c": true}})
	if err != nil {
		t.Fatal(err)
	}
	null, _ := row.NewVariant(nil)
	num, _ := row.NewVariant(2.5)
	docs := []variantDoc{{ID: 1, Body: obj, Opt: &num}, {ID: 2, Body: null}, {ID: 3}}
	want := []any{
		`1 {"a":[1,"x",null],"b":{"c":true}} zero=false 2.5`,
		`2 null zero=false nil`,
		`3 null zero=true nil`,
	}
	p, s := beam.NewPipelineWithRoot()
	got := beam.ParDo(s, variantDocString, beam.Reshuffle(s, beam.CreateList(s, docs)))
	passert.Equals(s, got, want...)
	vs := beam.ParDo(s.Scope("elements"), variantString, beam.Reshuffle(s, beam.CreateList(s, []row.Variant{obj, null, num})))
	passert.Equals(s.Scope("elements"), vs, `{"a":[1,"x",null],"b":{"c":true}}`, "null", "2.5")
	ptest.RunAndValidate(t, p)
}
