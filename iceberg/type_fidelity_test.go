package iceberg_test

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// FidelitySub is a nested struct of FidelityRow.
type FidelitySub struct {
	X     float64 `iceberg:"x"`
	Label *string `iceberg:"label"`
}

// FidelityRow has a field for every row of the README's type table (struct fields).
type FidelityRow struct {
	ID     int64               `iceberg:"id"`
	Bool   bool                `iceberg:"b"`
	I8     int8                `iceberg:"i8"`
	I16    int16               `iceberg:"i16"`
	I32    int32               `iceberg:"i32"`
	U8     uint8               `iceberg:"u8"`
	U16    uint16              `iceberg:"u16"`
	Int    int                 `iceberg:"int"`
	U32    uint32              `iceberg:"u32"`
	F32    float32             `iceberg:"f32"`
	F64    float64             `iceberg:"f64"`
	Str    string              `iceberg:"str"`
	Bin    []byte              `iceberg:"bin"`
	Fix    [8]byte             `iceberg:"fix"`
	Fix16  [16]byte            `iceberg:"fix16"`
	UUID   uuid.UUID           `iceberg:"uuid"`
	Dec    ibg.Decimal         `iceberg:"dec" precision:"38" scale:"10"`
	Date   ibg.Date            `iceberg:"date"`
	Time   ibg.Time            `iceberg:"time"`
	TS     ibg.Timestamp       `iceberg:"ts"`
	TSNs   ibg.TimestampNano   `iceberg:"ts_ns"`
	At     time.Time           `iceberg:"at"`
	Opt    *int32              `iceberg:"opt"`
	OptStr *string             `iceberg:"opt_str"`
	List   []int64             `iceberg:"list"`
	Strs   []string            `iceberg:"strs"`
	Map    map[string]int32    `iceberg:"map"`
	Sub    FidelitySub         `iceberg:"sub"`
	SubPtr *FidelitySub        `iceberg:"sub_ptr"`
	Subs   []FidelitySub       `iceberg:"subs"`
	Nested map[string][]string `iceberg:"nested"`
	Var    iceberg.Variant     `iceberg:"var"`
}

// FidelityChange is a merge-on-read change whose row image is a FidelityRow.
type FidelityChange struct {
	Op    string       `iceberg:"op"`
	Seq   int64        `iceberg:"seq"`
	After *FidelityRow `iceberg:"after"`
}

// NanoTimes has time.Time fields for nanosecond columns.
type NanoTimes struct {
	ID   int64     `iceberg:"id"`
	TzNs time.Time `iceberg:"tzns"`
	TsNs time.Time `iceberg:"tsns"`
}

// FixedOnly has a fixed[8] field.
type FixedOnly struct {
	ID  int64   `iceberg:"id"`
	Fix [8]byte `iceberg:"fix"`
}

// fidelityRows holds what the collector DoFns gather, by key.
var (
	fidelityMu   sync.Mutex
	fidelityRows = map[string][]any{}
)

type fidelityCollectFn[T any] struct{ Key string }

func (f *fidelityCollectFn[T]) ProcessElement(v T) {
	fidelityMu.Lock()
	defer fidelityMu.Unlock()
	fidelityRows[f.Key] = append(fidelityRows[f.Key], v)
}

// fidelityGenFn makes the rows of seed (fidelityRow), in the pipeline: Beam's
// coder of struct elements cannot encode array fields, so they are never encoded.
type fidelityGenFn struct {
	Seed  uint64
	N     int
	Nanos bool
}

func (f *fidelityGenFn) ProcessElement(_ []byte, emit func(FidelityRow)) {
	for i := range f.N {
		emit(fidelityRow(f.Seed, i, f.Nanos))
	}
}

type fidelityChangeFn struct{}

func (fidelityChangeFn) ProcessElement(r FidelityRow, emit func(FidelityChange)) {
	emit(FidelityChange{Op: "c", Seq: r.ID, After: &r})
}

type nanoGenFn struct{ N int }

func (f *nanoGenFn) ProcessElement(_ []byte, emit func(NanoTimes)) {
	for i := range f.N {
		emit(nanoRow(i))
	}
}

type fixedGenFn struct{}

func (fixedGenFn) ProcessElement(_ []byte, emit func(FixedOnly)) {
	emit(FixedOnly{ID: 1, Fix: [8]byte{1, 2, 3, 4, 5, 6, 7, 0xff}})
	emit(FixedOnly{ID: 2})
}

func init() {
	beam.RegisterType(reflect.TypeFor[FidelitySub]())
	beam.RegisterType(reflect.TypeFor[FidelityRow]())
	beam.RegisterType(reflect.TypeFor[FidelityChange]())
	beam.RegisterType(reflect.TypeFor[NanoTimes]())
	beam.RegisterType(reflect.TypeFor[FixedOnly]())
	register.DoFn1x0[FidelityRow](&fidelityCollectFn[FidelityRow]{})
	register.DoFn1x0[NanoTimes](&fidelityCollectFn[NanoTimes]{})
	register.DoFn1x0[FixedOnly](&fidelityCollectFn[FixedOnly]{})
	register.DoFn1x0[iceberg.Row](&fidelityCollectFn[iceberg.Row]{})
	register.DoFn1x0[iceberg.DeadLetter](&fidelityCollectFn[iceberg.DeadLetter]{})
	register.DoFn2x0[[]byte, func(FidelityRow)](&fidelityGenFn{})
	register.DoFn2x0[FidelityRow, func(FidelityChange)](&fidelityChangeFn{})
	register.DoFn2x0[[]byte, func(NanoTimes)](&nanoGenFn{})
	register.DoFn2x0[[]byte, func(FixedOnly)](&fixedGenFn{})
	register.Emitter1[FidelityRow]()
	register.Emitter1[FidelityChange]()
	register.Emitter1[NanoTimes]()
	register.Emitter1[FixedOnly]()
}

var fidelityRuns int

// collectInto adds a collector of col and returns the key its elements go under.
func collectInto[T any](s beam.Scope, col beam.PCollection) string {
	fidelityMu.Lock()
	fidelityRuns++
	key := strconv.Itoa(fidelityRuns)
	fidelityMu.Unlock()
	beam.ParDo0(s, &fidelityCollectFn[T]{Key: key}, col)
	return key
}

func collected[T any](key string) []T {
	fidelityMu.Lock()
	defer fidelityMu.Unlock()
	var out []T
	for _, v := range fidelityRows[key] {
		out = append(out, v.(T))
	}
	return out
}

// fidelityRow returns row i of seed: row 0 holds the minimum of every type, row 1
// the maximum (maximum-precision decimal included), the others random values, with
// nulls, empty and nested lists, maps and structs. Times are whole microseconds
// unless nanos (for nanosecond columns: then the time.Time has sub-microsecond
// digits and stays in the range of int64 nanoseconds).
func fidelityRow(seed uint64, i int, nanos bool) FidelityRow {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	str := func() string {
		const alphabet = "aZ09 _-é漢😀"
		rs := []rune(alphabet)
		b := make([]rune, rng.IntN(12))
		for k := range b {
			b[k] = rs[rng.IntN(len(rs))]
		}
		return string(b)
	}
	maybe := func() bool { return rng.IntN(3) == 0 }
	r := FidelityRow{ID: int64(i)}
	switch i {
	case 0:
		r.I8, r.I16, r.I32, r.Int = math.MinInt8, math.MinInt16, math.MinInt32, math.MinInt64
		r.F32, r.F64 = -math.MaxFloat32, math.Inf(-1)
		r.Dec = decimalOf("-99999999999999999999999999999999999999", 10)
		r.Date, r.Time, r.TS, r.TSNs = ibg.Date(-719162), 0, ibg.Timestamp(math.MinInt64), ibg.TimestampNano(math.MinInt64)
		r.At = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
		r.Bin, r.List, r.Strs, r.Map, r.Subs, r.Nested = []byte{}, []int64{}, []string{}, map[string]int32{}, []FidelitySub{}, map[string][]string{}
		r.Str = ""
		r.Var, _ = iceberg.NewVariant(nil)
	case 1:
		r.Bool = true
		r.I8, r.I16, r.I32, r.U8, r.U16, r.Int, r.U32 = math.MaxInt8, math.MaxInt16, math.MaxInt32, math.MaxUint8, math.MaxUint16, math.MaxInt64, math.MaxUint32
		r.F32, r.F64 = math.MaxFloat32, math.Inf(1)
		r.Dec = decimalOf("99999999999999999999999999999999999999", 10)
		r.Date, r.Time, r.TS, r.TSNs = ibg.Date(2932896), ibg.Time(86_399_999_999), ibg.Timestamp(math.MaxInt64), ibg.TimestampNano(math.MaxInt64)
		r.At = time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC)
		for k := range r.Fix {
			r.Fix[k] = 0xff
		}
		r.Fix16, r.UUID = [16]byte(uuid.Max), uuid.Max
		r.Str = strings.Repeat("x", 1000)
		r.Bin = []byte{0, 0xff, 0}
		r.Opt, r.OptStr = new(int32(-1)), new("")
		r.List, r.Strs = []int64{math.MinInt64, 0, math.MaxInt64}, []string{"", "a"}
		r.Map = map[string]int32{"": math.MinInt32, "k": math.MaxInt32}
		r.Sub = FidelitySub{X: -0.0, Label: new("l")}
		r.SubPtr = &FidelitySub{X: math.SmallestNonzeroFloat64}
		r.Subs = []FidelitySub{{X: 1}, {X: 2, Label: new("")}}
		r.Nested = map[string][]string{"a": {}, "b": {"x", "y"}}
		r.Var, _ = iceberg.NewVariant(map[string]any{"k": []any{int64(1), "s", nil}})
	default:
		r.Bool = rng.IntN(2) == 1
		r.I8, r.I16, r.I32 = int8(rng.Int32()), int16(rng.Int32()), rng.Int32()
		r.U8, r.U16, r.Int, r.U32 = uint8(rng.Uint32()), uint16(rng.Uint32()), int(rng.Int64()-math.MaxInt64/2), rng.Uint32()
		r.F32, r.F64 = float32(rng.NormFloat64()*1e6), rng.NormFloat64()*1e300
		r.Str = str()
		if !maybe() {
			r.Bin = []byte(str())
		}
		for k := range r.Fix {
			r.Fix[k] = byte(rng.Uint32())
		}
		for k := range r.Fix16 {
			r.Fix16[k] = byte(rng.Uint32())
		}
		r.UUID = uuid.UUID(r.Fix16)
		r.Dec = ibg.Decimal{Val: decimal128.New(rng.Int64N(1<<40)-1<<39, rng.Uint64()), Scale: 10}
		r.Date = ibg.Date(rng.Int32N(200_000) - 100_000)
		r.Time = ibg.Time(rng.Int64N(86_400_000_000))
		r.TS = ibg.Timestamp(rng.Int64() - math.MaxInt64/2)
		r.TSNs = ibg.TimestampNano(rng.Int64() - math.MaxInt64/2)
		r.At = time.UnixMicro(rng.Int64N(1<<55) - 1<<54).UTC()
		if !maybe() {
			r.Opt = new(rng.Int32())
		}
		if !maybe() {
			r.OptStr = new(str())
		}
		if !maybe() {
			r.List = make([]int64, rng.IntN(4))
			for k := range r.List {
				r.List[k] = rng.Int64()
			}
		}
		if !maybe() {
			r.Strs = []string{str(), str()}
		}
		if !maybe() {
			r.Map = map[string]int32{}
			for range rng.IntN(4) {
				r.Map[str()] = rng.Int32()
			}
		}
		r.Sub = FidelitySub{X: rng.Float64()}
		if !maybe() {
			r.Sub.Label = new(str())
		}
		if !maybe() {
			r.SubPtr = &FidelitySub{X: rng.Float64(), Label: new(str())}
		}
		if !maybe() {
			r.Subs = []FidelitySub{{X: rng.Float64()}}
		}
		if !maybe() {
			r.Nested = map[string][]string{str(): {str()}}
		}
		if !maybe() {
			r.Var, _ = iceberg.NewVariant(map[string]any{"n": int64(rng.Int32()), "s": str()})
		}
	}
	if nanos {
		r.At = time.Unix(0, rng.Int64N(1<<62)-1<<61).UTC()
		if r.At.Nanosecond()%1000 == 0 {
			r.At = r.At.Add(7)
		}
	}
	return r
}

// decimalOf is the decimal with digits as its unscaled value.
func decimalOf(digits string, scale int) ibg.Decimal {
	b, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		panic(digits)
	}
	return ibg.Decimal{Val: decimal128.FromBigInt(b), Scale: scale}
}

// fidelityRowValues returns the values a Row read from the table holds for r, the
// Row Go types of the README (independent of the write path's conversions).
func fidelityRowValues(r FidelityRow, nanos bool) []any {
	opt := func(p *int32) any {
		if p == nil {
			return nil
		}
		return *p
	}
	optStr := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	subSchema := row.NewSchema([]string{"x", "label"}, nil)
	sub := func(s FidelitySub) any { return row.Of(subSchema, []any{s.X, optStr(s.Label)}) }
	var bin, list, strs, m, subPtr, subs, nested, v any
	if r.Bin != nil {
		bin = r.Bin
	}
	if r.List != nil {
		l := make([]any, len(r.List))
		for k, x := range r.List {
			l[k] = x
		}
		list = l
	}
	if r.Strs != nil {
		l := make([]any, len(r.Strs))
		for k, x := range r.Strs {
			l[k] = x
		}
		strs = l
	}
	if r.Map != nil {
		es := []row.MapEntry{}
		for _, k := range sortedKeys(r.Map) {
			es = append(es, row.MapEntry{Key: k, Value: r.Map[k]})
		}
		m = es
	}
	if r.SubPtr != nil {
		subPtr = sub(*r.SubPtr)
	}
	if r.Subs != nil {
		l := make([]any, len(r.Subs))
		for k, x := range r.Subs {
			l[k] = sub(x)
		}
		subs = l
	}
	if r.Nested != nil {
		es := []row.MapEntry{}
		for _, k := range sortedKeys(r.Nested) {
			l := make([]any, len(r.Nested[k]))
			for j, x := range r.Nested[k] {
				l[j] = x
			}
			es = append(es, row.MapEntry{Key: k, Value: l})
		}
		nested = es
	}
	if !r.Var.IsZero() {
		v = r.Var
	}
	var at any = ibg.Timestamp(r.At.UnixMicro())
	if nanos {
		at = ibg.TimestampNano(r.At.UnixNano())
	}
	return []any{r.ID, r.Bool, int32(r.I8), int32(r.I16), r.I32, int32(r.U8), int32(r.U16), int64(r.Int), int64(r.U32),
		r.F32, r.F64, r.Str, bin, r.Fix[:], r.Fix16[:], r.UUID, r.Dec, r.Date, r.Time, r.TS, r.TSNs, at,
		opt(r.Opt), optStr(r.OptStr), list, strs, m, sub(r.Sub), subPtr, subs, nested, v}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

// equalGo reports whether a and b are equal Go values: times by instant, floats by
// bits (NaN equals NaN, -0 differs from 0), variants by value, nil and empty slices
// and maps apart.
func equalGo(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Type() {
	case reflect.TypeFor[time.Time]():
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	case reflect.TypeFor[iceberg.Variant]():
		x, y := a.Interface().(iceberg.Variant), b.Interface().(iceberg.Variant)
		return x.IsZero() == y.IsZero() && (x.IsZero() || x.Equal(y))
	case reflect.TypeFor[ibg.Decimal]():
		x, y := a.Interface().(ibg.Decimal), b.Interface().(ibg.Decimal)
		return x.Scale == y.Scale && x.Val == y.Val
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float()) ||
			(a.Kind() == reflect.Float32 && math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float())))
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalGo(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalGo(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !equalGo(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalGo(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return a.Interface() == b.Interface()
}

// diffFields names the fields of a and b (FidelityRow or NanoTimes) that differ.
func diffFields(a, b any) string {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range av.NumField() {
		if !equalGo(av.Field(i), bv.Field(i)) {
			out = append(out, fmt.Sprintf("%s: got %v, want %v", av.Type().Field(i).Name, bv.Field(i), av.Field(i)))
		}
	}
	return strings.Join(out, "; ")
}

// fidelityTableSchema is the table the writes create from FidelityRow, declared by
// hand: the README's rule (required unless a pointer, slice, map, []byte or
// Variant), so that the existing-table runs write into the same table.
func fidelityTableSchema(nanos bool) *ibg.Schema {
	id := 0
	next := func() int { id++; return id }
	f := func(name string, t ibg.Type, req bool) ibg.NestedField {
		return ibg.NestedField{ID: next(), Name: name, Type: t, Required: req}
	}
	sub := func() *ibg.StructType {
		return &ibg.StructType{FieldList: []ibg.NestedField{f("x", ibg.PrimitiveTypes.Float64, true), f("label", ibg.PrimitiveTypes.String, false)}}
	}
	at := ibg.Type(ibg.PrimitiveTypes.TimestampTz)
	if nanos {
		at = ibg.PrimitiveTypes.TimestampTzNs
	}
	p := ibg.PrimitiveTypes
	fields := []ibg.NestedField{
		f("id", p.Int64, true), f("b", p.Bool, true), f("i8", p.Int32, true), f("i16", p.Int32, true), f("i32", p.Int32, true),
		f("u8", p.Int32, true), f("u16", p.Int32, true), f("int", p.Int64, true), f("u32", p.Int64, true),
		f("f32", p.Float32, true), f("f64", p.Float64, true), f("str", p.String, true), f("bin", p.Binary, false),
		f("fix", ibg.FixedTypeOf(8), true), f("fix16", ibg.FixedTypeOf(16), true), f("uuid", p.UUID, true),
		f("dec", ibg.DecimalTypeOf(38, 10), true), f("date", p.Date, true), f("time", p.Time, true),
		f("ts", p.Timestamp, true), f("ts_ns", p.TimestampNs, true), f("at", at, true),
		f("opt", p.Int32, false), f("opt_str", p.String, false),
	}
	listID := next()
	fields = append(fields, ibg.NestedField{ID: listID, Name: "list", Type: &ibg.ListType{ElementID: next(), Element: p.Int64, ElementRequired: true}})
	fields = append(fields, ibg.NestedField{ID: next(), Name: "strs", Type: &ibg.ListType{ElementID: next(), Element: p.String, ElementRequired: true}})
	mapID := next()
	fields = append(fields, ibg.NestedField{ID: mapID, Name: "map", Type: &ibg.MapType{KeyID: next(), KeyType: p.String, ValueID: next(), ValueType: p.Int32, ValueRequired: true}})
	subID := next()
	fields = append(fields, ibg.NestedField{ID: subID, Name: "sub", Type: sub(), Required: true})
	subPtrID := next()
	fields = append(fields, ibg.NestedField{ID: subPtrID, Name: "sub_ptr", Type: sub()})
	subsID := next()
	fields = append(fields, ibg.NestedField{ID: subsID, Name: "subs", Type: &ibg.ListType{ElementID: next(), Element: sub(), ElementRequired: true}})
	nestedID := next()
	fields = append(fields, ibg.NestedField{ID: nestedID, Name: "nested", Type: &ibg.MapType{KeyID: next(), KeyType: p.String, ValueID: next(),
		ValueType: &ibg.ListType{ElementID: next(), Element: p.String, ElementRequired: true}}})
	fields = append(fields, ibg.NestedField{ID: next(), Name: "var", Type: ibg.VariantType{}})
	return ibg.NewSchemaWithIdentifiers(0, []int{1}, fields...)
}

// requiredColumns lists sc's top-level columns with their required flags.
func requiredColumns(sc *ibg.Schema) string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, fmt.Sprintf("%s:%t", f.Name, f.Required))
	}
	return strings.Join(out, " ")
}

// TestTypeRoundTrip: every Go type of the README's type table goes through Write
// and comes back unchanged through Read, as Rows and as the same struct
// (WithOutputType): both write modes, with the table created by the write and with
// an existing table, over random values with nulls, extremes, sub-microsecond times
// (into nanosecond columns), maximum-precision decimals, empty and nested lists,
// maps and structs. A created table follows the README's rule (required unless a
// pointer, slice, map, []byte or Variant).
//
// On the code before issue 31 it failed three ways: the append-created table had
// every top-level column optional; the typed read failed at construction
// ("field Fix: unsupported type: Go type [8]uint8"); and the nanosecond table
// refused the time.Time field ("column "at" is timestamptz_ns in the table,
// timestamptz in the rows").
func TestTypeRoundTrip(t *testing.T) {
	const n = 40
	for _, mode := range []string{"append", "merge-on-read"} {
		for _, existing := range []string{"created", "existing", "existing-nanos"} {
			t.Run(mode+"/"+existing, func(t *testing.T) {
				nanos := existing == "existing-nanos"
				seed := uint64(len(mode)*10 + len(existing))
				lc := icebergtest.NewLocalCatalog(t)
				want := fidelityTableSchema(nanos)
				if existing != "created" {
					icebergtest.CreateTable(t, lc.Catalog, "db.types", want, icebergtest.WithFormatVersion(3))
				}
				cfg := iceberg.WriteConfig{Table: "db.types", CatalogName: lc.Name, CatalogProperties: lc.Props}
				p, s := beam.NewPipelineWithRoot()
				rows := beam.ParDo(s, &fidelityGenFn{Seed: seed, N: n, Nanos: nanos}, beam.Impulse(s))
				if mode == "merge-on-read" {
					cfg.Mode, cfg.Only, cfg.ChangeTypeColumn, cfg.SequenceNumberColumn = iceberg.MergeOnRead, "after", "op", "seq"
					cfg.ChangeTypeMap, cfg.EqualityColumns = map[string]string{"c": iceberg.ChangeInsert}, []string{"id"}
					rows = beam.ParDo(s, fidelityChangeFn{}, rows)
				}
				res, err := iceberg.TryWrite(s, cfg, rows)
				if err != nil {
					t.Fatal(err)
				}
				deadKey := collectInto[iceberg.DeadLetter](s, res.DeadLetter)
				if err := ptest.Run(p); err != nil {
					t.Fatal(err)
				}
				if dead := collected[iceberg.DeadLetter](deadKey); len(dead) > 0 {
					t.Fatalf("%d dead letters, first: %+v", len(dead), dead[0])
				}
				tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "types"})
				if err != nil {
					t.Fatal(err)
				}
				icebergtest.RequireValid(t, tbl)
				if got, w := requiredColumns(tbl.Schema()), requiredColumns(want); got != w {
					t.Fatalf("table columns (name:required)\n got %s\nwant %s", got, w)
				}
				checkFidelityRead(t, lc, seed, n, nanos)
			})
		}
	}
}

// checkFidelityRead reads db.types as Rows and as FidelityRow structs and compares
// both with the n rows of seed.
func checkFidelityRead(t *testing.T, lc *icebergtest.LocalCatalog, seed uint64, n int, nanos bool) {
	t.Helper()
	rcfg := iceberg.ReadConfig{Table: "db.types", CatalogName: lc.Name, CatalogProperties: lc.Props}
	p, s := beam.NewPipelineWithRoot()
	rows, err := iceberg.TryRead(s, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := iceberg.TryRead(s, rcfg, iceberg.WithOutputType(reflect.TypeFor[FidelityRow]()))
	if err != nil {
		t.Fatal(err)
	}
	rowKey, structKey := collectInto[iceberg.Row](s, rows), collectInto[FidelityRow](s, typed)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	gotRows, gotStructs := collected[iceberg.Row](rowKey), collected[FidelityRow](structKey)
	if len(gotRows) != n || len(gotStructs) != n {
		t.Fatalf("read %d rows and %d structs, want %d", len(gotRows), len(gotStructs), n)
	}
	names := fidelityTableSchema(nanos).Fields()
	for _, r := range gotRows {
		id, _ := r.Get("id")
		w := fidelityRow(seed, int(id.(int64)), nanos)
		wantVals := fidelityRowValues(w, nanos)
		for k, f := range names {
			got, _ := r.Get(f.Name)
			wr := row.New([]string{f.Name}, []any{wantVals[k]})
			if !row.Equal(row.New([]string{f.Name}, []any{got}), wr) {
				t.Errorf("row %d column %s: got %#v, want %#v", id, f.Name, got, wantVals[k])
			}
		}
	}
	for _, got := range gotStructs {
		w := fidelityRow(seed, int(got.ID), nanos)
		if !equalGo(reflect.ValueOf(w), reflect.ValueOf(got)) {
			t.Errorf("struct %d differs: %s", got.ID, diffFields(w, got))
		}
	}
}

// TestWriteNanoTimeFields: time.Time fields write to timestamptz_ns and timestamp_ns
// columns with their nanoseconds (they were refused at construction: "column "tzns"
// is timestamptz_ns in the table, timestamptz in the rows"), and read back into
// time.Time unchanged; into a microsecond column a sub-microsecond time.Time goes to
// the dead letter output naming the column, never truncated.
func TestWriteNanoTimeFields(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "tzns", Type: ibg.PrimitiveTypes.TimestampTzNs},
		ibg.NestedField{ID: 3, Name: "tsns", Type: ibg.PrimitiveTypes.TimestampNs})
	icebergtest.CreateTable(t, lc.Catalog, "db.nanos", sc, icebergtest.WithFormatVersion(3))
	const n = 5
	cfg := iceberg.WriteConfig{Table: "db.nanos", CatalogName: lc.Name, CatalogProperties: lc.Props}
	for _, mode := range []string{"append", "hash"} {
		p, s := beam.NewPipelineWithRoot()
		c := cfg
		if mode == "hash" {
			c.DistributionMode = "hash" // structs become Rows in a DoFn of their own
		}
		res, err := iceberg.TryWrite(s, c, beam.ParDo(s, &nanoGenFn{N: n}, beam.Impulse(s)))
		if err != nil {
			t.Fatal(err)
		}
		deadKey := collectInto[iceberg.DeadLetter](s, res.DeadLetter)
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
		if dead := collected[iceberg.DeadLetter](deadKey); len(dead) > 0 {
			t.Fatalf("%s: %d dead letters, first: %+v", mode, len(dead), dead[0])
		}
	}
	p, s := beam.NewPipelineWithRoot()
	typed, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.nanos", CatalogName: lc.Name, CatalogProperties: lc.Props},
		iceberg.WithOutputType(reflect.TypeFor[NanoTimes]()))
	if err != nil {
		t.Fatal(err)
	}
	key := collectInto[NanoTimes](s, typed)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	got := collected[NanoTimes](key)
	if len(got) != 2*n {
		t.Fatalf("read %d rows, want %d", len(got), 2*n)
	}
	for _, g := range got {
		if w := nanoRow(int(g.ID)); !equalGo(reflect.ValueOf(w), reflect.ValueOf(g)) {
			t.Errorf("row %d: %s", g.ID, diffFields(w, g))
		}
	}

	// A microsecond column: the sub-microsecond digits are refused per row.
	micro := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "tzns", Type: ibg.PrimitiveTypes.TimestampTz},
		ibg.NestedField{ID: 3, Name: "tsns", Type: ibg.PrimitiveTypes.Timestamp})
	icebergtest.CreateTable(t, lc.Catalog, "db.micros", micro)
	p, s = beam.NewPipelineWithRoot()
	c := cfg
	c.Table = "db.micros"
	res, err := iceberg.TryWrite(s, c, beam.ParDo(s, &nanoGenFn{N: n}, beam.Impulse(s)))
	if err != nil {
		t.Fatal(err)
	}
	deadKey := collectInto[iceberg.DeadLetter](s, res.DeadLetter)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	dead := collected[iceberg.DeadLetter](deadKey)
	if len(dead) != n {
		t.Fatalf("%d dead letters, want %d (every row has sub-microsecond digits)", len(dead), n)
	}
	for _, d := range dead {
		if !strings.Contains(d.Reason, "sub-microsecond") || !strings.Contains(d.Reason, "tzns") {
			t.Errorf("dead letter reason %q does not name the column and the sub-microsecond digits", d.Reason)
		}
	}
}

// nanoRow is row i of TestWriteNanoTimeFields: times with sub-microsecond digits.
func nanoRow(i int) NanoTimes {
	at := time.Date(2024, 5, 1, 12, 30, 0, 123456789+i, time.UTC)
	return NanoTimes{ID: int64(i), TzNs: at, TsNs: at.Add(-time.Hour)}
}

// TestReadFixedIntoByteArray: a fixed[8] column written from an [8]byte field reads
// back into the same field (the typed read failed: "field Fix: unsupported type: Go
// type [8]uint8"; only [16]byte worked).
func TestReadFixedIntoByteArray(t *testing.T) {
	lc := icebergtest.NewLocalCatalog(t)
	cfg := iceberg.WriteConfig{Table: "db.fixed", CatalogName: lc.Name, CatalogProperties: lc.Props}
	p, s := beam.NewPipelineWithRoot()
	if _, err := iceberg.TryWrite(s, cfg, beam.ParDo(s, fixedGenFn{}, beam.Impulse(s))); err != nil {
		t.Fatal(err)
	}
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	p, s = beam.NewPipelineWithRoot()
	typed, err := iceberg.TryRead(s, iceberg.ReadConfig{Table: "db.fixed", CatalogName: lc.Name, CatalogProperties: lc.Props},
		iceberg.WithOutputType(reflect.TypeFor[FixedOnly]()))
	if err != nil {
		t.Fatal(err)
	}
	key := collectInto[FixedOnly](s, typed)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	got := collected[FixedOnly](key)
	want := map[int64][8]byte{1: {1, 2, 3, 4, 5, 6, 7, 0xff}, 2: {}}
	if len(got) != len(want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for _, g := range got {
		if g.Fix != want[g.ID] {
			t.Errorf("row %d: fix %v, want %v", g.ID, g.Fix, want[g.ID])
		}
	}
}

// TestCreatedTableRequiredColumns: a struct's non-pointer top-level fields become
// required columns of the table the write creates, in both modes (append made them
// all optional), and a Row declares its columns with RowSchemaOf.
func TestCreatedTableRequiredColumns(t *testing.T) {
	wantRequired := "id:true name:true opt:false sub:false"
	for _, mode := range []string{"append", "hash", "merge-on-read", "row"} {
		t.Run(mode, func(t *testing.T) {
			lc := icebergtest.NewLocalCatalog(t)
			cfg := iceberg.WriteConfig{Table: "db.req", CatalogName: lc.Name, CatalogProperties: lc.Props}
			p, s := beam.NewPipelineWithRoot()
			var rows beam.PCollection
			switch mode {
			case "row":
				rs := iceberg.RowSchemaOf(ibg.NewSchema(0,
					ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
					ibg.NestedField{ID: 2, Name: "name", Type: ibg.PrimitiveTypes.String, Required: true},
					ibg.NestedField{ID: 3, Name: "opt", Type: ibg.PrimitiveTypes.Int32},
					ibg.NestedField{ID: 4, Name: "sub", Type: &ibg.StructType{FieldList: []ibg.NestedField{
						{ID: 5, Name: "x", Type: ibg.PrimitiveTypes.Float64, Required: true},
						{ID: 6, Name: "label", Type: ibg.PrimitiveTypes.String}}}}))
				subRS := iceberg.NewRowSchema([]string{"x", "label"}, nil)
				rows = beam.CreateList(s, []iceberg.Row{iceberg.RowOf(rs, []any{int64(1), "a", nil, iceberg.RowOf(subRS, []any{1.5, nil})})})
			default:
				rows = beam.CreateList(s, []RequiredStruct{{ID: 1, Name: "a", Sub: &RequiredSub{X: 1.5}}})
				if mode == "hash" {
					cfg.DistributionMode, cfg.PartitionFields = "hash", []string{"bucket(2, id)"}
				}
				if mode == "merge-on-read" {
					cfg.Mode, cfg.EqualityColumns = iceberg.MergeOnRead, []string{"id"}
					cfg.ChangeTypeColumn = "op"
					rows = beam.CreateList(s, []RequiredChange{{Op: "INSERT", Seq: 1, ID: 1, Name: "a", Sub: &RequiredSub{X: 1.5}}})
					cfg.SequenceNumberColumn = "seq"
				}
			}
			res, err := iceberg.TryWrite(s, cfg, rows)
			if err != nil {
				t.Fatal(err)
			}
			deadKey := collectInto[iceberg.DeadLetter](s, res.DeadLetter)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
			if dead := collected[iceberg.DeadLetter](deadKey); len(dead) > 0 {
				t.Fatalf("dead letters: %+v", dead)
			}
			tbl, err := lc.Catalog.LoadTable(context.Background(), table.Identifier{"db", "req"})
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			if got := requiredColumns(tbl.Schema()); got != wantRequired {
				t.Fatalf("columns %s, want %s", got, wantRequired)
			}
			subT := tbl.Schema().Field(3).Type.(*ibg.StructType)
			if !subT.FieldList[0].Required || subT.FieldList[1].Required {
				t.Fatalf("sub fields %v: want x required, label optional", subT.FieldList)
			}
		})
	}
}

// RequiredSub is the nested struct of RequiredStruct.
type RequiredSub struct {
	X     float64 `iceberg:"x"`
	Label *string `iceberg:"label"`
}

// RequiredStruct creates a table with required and optional columns.
type RequiredStruct struct {
	ID   int64        `iceberg:"id"`
	Name string       `iceberg:"name"`
	Opt  *int32       `iceberg:"opt"`
	Sub  *RequiredSub `iceberg:"sub"`
}

// RequiredChange is RequiredStruct as a merge-on-read change.
type RequiredChange struct {
	Op   string       `iceberg:"op"`
	Seq  int64        `iceberg:"seq"`
	ID   int64        `iceberg:"id"`
	Name string       `iceberg:"name"`
	Opt  *int32       `iceberg:"opt"`
	Sub  *RequiredSub `iceberg:"sub"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[RequiredSub]())
	beam.RegisterType(reflect.TypeFor[RequiredStruct]())
	beam.RegisterType(reflect.TypeFor[RequiredChange]())
}
