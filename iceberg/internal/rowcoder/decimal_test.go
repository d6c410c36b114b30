package rowcoder_test

import (
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"

	_ "github.com/icebeam/icebeam/iceberg/internal/rowcoder"
)

// decimalDoc is a struct element with iceberg-go Decimal fields.
type decimalDoc struct {
	ID     int64
	Amount ibg.Decimal
	Opt    *ibg.Decimal
}

func decimalDocString(d decimalDoc) string {
	opt := "nil"
	if d.Opt != nil {
		opt = d.Opt.Val.ToString(int32(d.Opt.Scale))
	}
	return fmt.Sprintf("%d %s %s", d.ID, d.Amount.Val.ToString(int32(d.Amount.Scale)), opt)
}

func init() {
	beam.RegisterType(reflect.TypeFor[decimalDoc]())
	beam.RegisterFunction(decimalDocString)
}

// TestDecimalStructFieldPipeline: struct elements with Decimal fields cross a
// shuffle with their values (Beam's schema coder encoded a Decimal's value, whose
// fields are unexported, as empty: every amount read back as 0), including 128-bit
// values and negative scales' neighbours.
func TestDecimalStructFieldPipeline(t *testing.T) {
	big38, _ := new(big.Int).SetString("-12345678901234567890123456789012345678", 10)
	wide := ibg.Decimal{Val: decimal128.FromBigInt(big38), Scale: 10}
	small := ibg.Decimal{Val: decimal128.FromI64(12345), Scale: 2}
	docs := []decimalDoc{{ID: 1, Amount: small, Opt: &wide}, {ID: 2, Amount: wide}, {ID: 3}}
	want := []any{
		"1 123.45 -1234567890123456789012345678.9012345678",
		"2 -1234567890123456789012345678.9012345678 nil",
		"3 0 nil",
	}
	p, s := beam.NewPipelineWithRoot()
	got := beam.ParDo(s, decimalDocString, beam.Reshuffle(s, beam.CreateList(s, docs)))
	passert.Equals(s, got, want...)
	ptest.RunAndValidate(t, p)
}
