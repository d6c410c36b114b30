package rowcoder_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/filter"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func TestCoderRegisteredWithBeam(t *testing.T) {
	rt := reflect.TypeFor[row.Row]()
	c := beam.NewCoder(typex.New(rt))
	if cc := coder.LookupCustomCoder(rt); cc == nil || !strings.Contains(c.String(), cc.Name) {
		t.Fatalf("Row coder is %v, want the custom coder", c)
	}
	if !c.IsDeterministic() {
		t.Fatalf("Row coder %v is not deterministic", c)
	}
}

func isOdd(r row.Row) bool {
	v, _ := r.Get("i")
	return v.(int32)%2 == 1
}

func init() { beam.RegisterFunction(isOdd) }

// TestCoderPipeline sends typed rows, and a row of dynamic values, through a
// shuffle: they arrive equal.
func TestCoderPipeline(t *testing.T) {
	sc := row.SchemaOf(ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "i", Type: ibg.PrimitiveTypes.Int32, Required: true},
		ibg.NestedField{ID: 2, Name: "s", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "l", Type: &ibg.ListType{ElementID: 4, Element: ibg.PrimitiveTypes.Int64}}))
	var in, odd []any
	for k := range 12 {
		var s any
		if k%3 != 0 {
			s = strings.Repeat("x", k)
		}
		r := row.Of(sc, []any{int32(k), s, []any{int64(k), int64(-k)}})
		in = append(in, r)
		if k%2 == 1 {
			odd = append(odd, r)
		}
	}
	in = append(in, row.New([]string{"i", "x"}, []any{int32(7), []any{"dyn"}}))
	odd = append(odd, in[len(in)-1])
	p, s := beam.NewPipelineWithRoot()
	rows := beam.Reshuffle(s, beam.Create(s, in...))
	passert.Equals(s, filter.Include(s, rows, isOdd), odd...)
	passert.Count(s, rows, "all", len(in))
	ptest.RunAndValidate(t, p)
}
