// Package rowcoder registers row.Row with Beam: its type and its deterministic
// coder (row.Encode, row.Decode), so that rows may be elements, GroupByKey keys and
// state keys. It also registers row.Variant: a coder for Variant elements and a schema
// logical type for Variant fields of struct elements (Beam's schema coder drops
// unexported fields, which is all a Variant has), and a logical type for iceberg-go
// Decimal fields (whose value has only unexported fields). Packages that put rows in a pipeline
// import it for its side effect; package row itself stays free of Beam, so that the
// plain-Go packages built on it (iceberg/cdc) are too.
package rowcoder

import (
	"encoding/binary"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func init() {
	t := reflect.TypeFor[row.Row]()
	beam.RegisterType(t)
	beam.RegisterCoder(t, row.Encode, row.Decode)
	// The encoding is deterministic, so rows may be GroupByKey keys and state keys.
	coder.RegisterDeterministicCoder(t, row.Encode, row.Decode)

	vt := reflect.TypeFor[row.Variant]()
	beam.RegisterCoder(vt, encodeVariant, decodeVariant)
	schema.RegisterLogicalType(schema.ToLogicalType("icebeam.Variant", vt, reflect.TypeFor[variantStorage]()))
	coder.RegisterSchemaProviders(vt, variantFieldEncoder, variantFieldDecoder)

	dt := reflect.TypeFor[ibg.Decimal]()
	schema.RegisterLogicalType(schema.ToLogicalType("icebeam.Decimal", dt, reflect.TypeFor[decimalStorage]()))
	coder.RegisterSchemaProviders(dt, decimalFieldEncoder, decimalFieldDecoder)
}

// decimalStorage is the schema representation of an iceberg-go Decimal field: the
// two halves of its 128-bit unscaled value and its scale. Beam's schema coder would
// encode a Decimal's value (a decimal128.Num, whose fields are unexported) as empty:
// a struct element with a Decimal field lost its value (read back as 0) wherever it
// was encoded (beam.Create, a shuffle).
type decimalStorage struct {
	Hi, Lo, Scale int64
}

func decimalFieldEncoder(reflect.Type) (func(any, io.Writer) error, error) {
	return func(v any, w io.Writer) error {
		d := v.(ibg.Decimal)
		if err := coder.WriteSimpleRowHeader(3, w); err != nil {
			return err
		}
		for _, x := range []int64{d.Val.HighBits(), int64(d.Val.LowBits()), int64(d.Scale)} {
			if err := coder.EncodeVarInt(x, w); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func decimalFieldDecoder(reflect.Type) (func(io.Reader) (any, error), error) {
	return func(r io.Reader) (any, error) {
		if err := coder.ReadSimpleRowHeader(3, r); err != nil {
			return nil, err
		}
		var x [3]int64
		for i := range x {
			var err error
			if x[i], err = coder.DecodeVarInt(r); err != nil {
				return nil, err
			}
		}
		return ibg.Decimal{Val: decimal128.New(x[0], uint64(x[1])), Scale: int(x[2])}, nil
	}, nil
}

// variantStorage is the schema representation of a Variant field: its encoded
// metadata and value (both empty for the zero Variant).
type variantStorage struct {
	Metadata []byte
	Value    []byte
}

// encodeVariant is the element coder of Variant: uvarint-length metadata, then the value.
func encodeVariant(v row.Variant) []byte {
	m, x := v.Metadata(), v.Bytes()
	b := make([]byte, 0, len(m)+len(x)+10)
	b = binary.AppendUvarint(b, uint64(len(m)))
	b = append(b, m...)
	return append(b, x...)
}

func decodeVariant(b []byte) (row.Variant, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return row.Variant{}, fmt.Errorf("iceberg: decode variant: %w", row.ErrCorrupt)
	}
	m, x := b[k:k+int(n)], b[k+int(n):]
	if len(m) == 0 && len(x) == 0 {
		return row.Variant{}, nil
	}
	return row.VariantFromBytes(m, x)
}

func variantFieldEncoder(reflect.Type) (func(any, io.Writer) error, error) {
	return func(v any, w io.Writer) error {
		x := v.(row.Variant)
		if err := coder.WriteSimpleRowHeader(2, w); err != nil {
			return err
		}
		if err := coder.EncodeBytes(x.Metadata(), w); err != nil {
			return err
		}
		return coder.EncodeBytes(x.Bytes(), w)
	}, nil
}

func variantFieldDecoder(reflect.Type) (func(io.Reader) (any, error), error) {
	return func(r io.Reader) (any, error) {
		if err := coder.ReadSimpleRowHeader(2, r); err != nil {
			return nil, err
		}
		m, err := coder.DecodeBytes(r)
		if err != nil {
			return nil, err
		}
		x, err := coder.DecodeBytes(r)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 && len(x) == 0 {
			return row.Variant{}, nil
		}
		return row.VariantFromBytes(m, x)
	}, nil
}
