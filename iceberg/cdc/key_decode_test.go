package cdc

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// TestKeyDecode: a key of every equality column type decodes from its encoding
// to the values it was encoded from, and to the values the key columns of the
// packed row decode to (Parser.KeyOf of row.DecodeBody), which the shards used
// before; bytes 0x00 and 0x01 inside strings and binaries survive the escaping,
// and a cut or overlong encoding is an error.
func TestKeyDecode(t *testing.T) {
	types := []ibg.Type{ibg.PrimitiveTypes.Bool, ibg.PrimitiveTypes.Int32, ibg.PrimitiveTypes.Date, ibg.PrimitiveTypes.Int64,
		ibg.PrimitiveTypes.Time, ibg.PrimitiveTypes.Timestamp, ibg.PrimitiveTypes.TimestampTz, ibg.PrimitiveTypes.TimestampNs,
		ibg.PrimitiveTypes.TimestampTzNs, ibg.PrimitiveTypes.String, ibg.PrimitiveTypes.Binary, ibg.FixedTypeOf(3),
		ibg.PrimitiveTypes.UUID, ibg.DecimalTypeOf(38, 3)}
	var fields []ibg.NestedField
	var cols []string
	for i, typ := range types {
		name := "k" + string(rune('a'+i))
		fields = append(fields, ibg.NestedField{ID: i + 1, Name: name, Type: typ, Required: true})
		cols = append(cols, name)
	}
	sc := ibg.NewSchema(0, fields...)
	p, err := NewParser("db.t", sc, ChangeSpec{EqualityColumns: cols})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = []byte{0, 1, 0xff, 'a'}[rng.IntN(4)]
		}
		return b
	}
	for range 2000 {
		i64 := int64(rng.Uint64())
		vals := []any{rng.IntN(2) == 1, int32(rng.Uint32()), ibg.Date(int32(rng.Uint32())), i64,
			ibg.Time(rng.Int64N(86_400_000_000)), ibg.Timestamp(i64 / 3), ibg.Timestamp(-i64 / 5), ibg.TimestampNano(i64 / 7),
			ibg.TimestampNano(i64), string(bytesOf(rng.IntN(6))), bytesOf(rng.IntN(6)), bytesOf(3),
			uuid.UUID(bytesOf(16)), ibg.Decimal{Val: decimal128.New(rng.Int64N(1<<40)-1<<39, rng.Uint64()), Scale: 3}}
		enc, err := p.AppendKey(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.keys.decode(nil, enc)
		if err != nil {
			t.Fatalf("decode %x: %v", enc, err)
		}
		body, err := row.AppendBody(nil, row.Of(p.Schema(), vals))
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := row.DecodeBody(p.Schema(), body)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range [][]any{vals, p.KeyOf(r)} {
			for i := range want {
				if reflect.TypeOf(got[i]) != reflect.TypeOf(want[i]) || !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("column %s: decoded %#v (%T), want %#v (%T)", cols[i], got[i], got[i], want[i], want[i])
				}
			}
		}
		if _, err := p.keys.decode(nil, enc[:len(enc)-1]); err == nil {
			t.Fatalf("a key cut by one byte decoded")
		}
		if _, err := p.keys.decode(nil, append(enc, 0)); err == nil {
			t.Fatalf("a key with a byte too many decoded")
		}
	}
}
