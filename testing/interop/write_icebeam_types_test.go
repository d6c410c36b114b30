//go:build interop

package interop

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// The type scenarios (issue 31): tables holding every Iceberg V3 type that a Go
// struct field writes, written by iceberg.Write and read by every engine. Their
// values are functions of id with the extremes at the first ids: nulls at every
// depth, the largest and smallest values of each type, pre-epoch and sub-microsecond
// times, maximum-precision decimals, empty and nested lists, maps and structs. Each
// column is also read on its own (a "column[...]" query), so an engine that cannot
// read one type fails that check only. Types an engine cannot read at all (time,
// each kind of nanosecond timestamp) have tables of their own: an engine that refuses a column
// refuses its whole table.

// typesRows is how many rows each type scenario writes.
const typesRows = 3000

// typesSub is the struct column of typesRow.
type typesSub struct {
	X     float64 `iceberg:"x"`
	Label *string `iceberg:"label"`
}

// typesRow has a column of each type every engine reads; the write creates its
// table (type inference, the README's type table).
type typesRow struct {
	ID   int64             `iceberg:"id"`
	I    *int32            `iceberg:"i"`
	F    *float32          `iceberg:"f"`
	D    *float64          `iceberg:"d"`
	Dec  *ibg.Decimal      `iceberg:"dec" precision:"38" scale:"10"`
	Day  *ibg.Date         `iceberg:"day"`
	TS   *ibg.Timestamp    `iceberg:"ts"`
	TSTZ *time.Time        `iceberg:"tstz"`
	S    *string           `iceberg:"s"`
	U    *uuid.UUID        `iceberg:"u"`
	Fx   *[8]byte          `iceberg:"fx"`
	Bin  []byte            `iceberg:"bin"`
	B    *bool             `iceberg:"b"`
	Lst  []*int64          `iceberg:"lst"`
	Mp   map[string]*int32 `iceberg:"mp"`
	St   *typesSub         `iceberg:"st"`
	Nest []typesSub        `iceberg:"nest"`
}

// typesColumns are typesRow's columns with the type strings checks.py parses.
var typesColumns = []Column{
	{"id", "long"}, {"i", "int"}, {"f", "float"}, {"d", "double"}, {"dec", "decimal(38,10)"},
	{"day", "date"}, {"ts", "timestamp"}, {"tstz", "timestamptz"}, {"s", "string"},
	{"u", "uuid"}, {"fx", "fixed[8]"}, {"bin", "binary"}, {"b", "boolean"},
	{"lst", "list<long>"}, {"mp", "map<string,int>"}, {"st", "struct<x:double,label:string>"},
	{"nest", "list<struct<x:double,label:string>>"},
}

// timeRow is the time scenario's row: a time column (Spark has no time type).
type timeRow struct {
	ID int64     `iceberg:"id"`
	T  *ibg.Time `iceberg:"t"`
}

var timeColumns = []Column{{"id", "long"}, {"t", "time"}}

// nanosRow is the nanosecond scenario's row: a time.Time field into the
// timestamp_ns column of an existing table, and an ibg.TimestampNano column.
type nanosRow struct {
	ID   int64              `iceberg:"id"`
	TSNs *time.Time         `iceberg:"tsns"`
	Raw  *ibg.TimestampNano `iceberg:"raw"`
}

var nanosColumns = []Column{{"id", "long"}, {"tsns", "timestamp_ns"}, {"raw", "timestamp_ns"}}

// nanosTZRow is the row of the timestamptz_ns scenario (a table of its own: DuckDB
// reads timestamp_ns but refuses a table with a timestamptz_ns column).
type nanosTZRow struct {
	ID   int64      `iceberg:"id"`
	TZNs *time.Time `iceberg:"tzns"`
}

var nanosTZColumns = []Column{{"id", "long"}, {"tzns", "timestamptz_ns"}}

// variantRow is the variant scenario's row: the zero Variant is a null column value,
// NewVariant(nil) a variant null.
type variantRow struct {
	ID int64           `iceberg:"id"`
	V  iceberg.Variant `iceberg:"v"`
}

var variantColumns = []Column{{"id", "long"}, {"v", "variant"}}

// unknownRow is the row of the unknown-type scenario: its table (created before the
// write) has a third column of type unknown, which the rows do not carry and every
// reader gives as null.
type unknownRow struct {
	ID int64   `iceberg:"id"`
	S  *string `iceberg:"s"`
}

var unknownColumns = []Column{{"id", "long"}, {"s", "string"}, {"nothing", "unknown"}}

// variantNullsRow is the row of the scenario that tells a null column value (the zero
// Variant) from a variant null (NewVariant(nil)), a table of its own: DuckDB reads
// both as NULL.
type variantNullsRow struct {
	ID int64           `iceberg:"id"`
	V  iceberg.Variant `iceberg:"v"`
}

func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[typesRow](), reflect.TypeFor[typesSub](),
		reflect.TypeFor[timeRow](), reflect.TypeFor[nanosRow](), reflect.TypeFor[nanosTZRow](), reflect.TypeFor[variantRow](), reflect.TypeFor[variantNullsRow](), reflect.TypeFor[unknownRow]()} {
		beam.RegisterType(t)
	}
	register.Function2x0(genTypesFn)
	register.Function2x0(genTimeFn)
	register.Function2x0(genNanosFn)
	register.Function2x0(genNanosTZFn)
	register.Function2x0(genVariantFn)
	register.Function2x0(genVariantNullsFn)
	register.Function2x0(genUnknownFn)
	register.Emitter1[typesRow]()
	register.Emitter1[timeRow]()
	register.Emitter1[nanosRow]()
	register.Emitter1[nanosTZRow]()
	register.Emitter1[variantRow]()
	register.Emitter1[variantNullsRow]()
	register.Emitter1[unknownRow]()
}

func ptr[T any](v T) *T { return &v }

// pick returns the id-th value of extremes for the first ids, then gen(id); every
// seventh id (after the extremes) gives nil.
func pick[T any](id int64, extremes []T, gen func(int64) T) *T {
	if id < int64(len(extremes)) {
		return ptr(extremes[id])
	}
	if id%7 == 3 {
		return nil
	}
	return ptr(gen(id))
}

// maxDecimal38 is the largest decimal(38,10): 38 nines.
var maxDecimal38 = func() decimal128.Num {
	n, _ := new(big.Int).SetString("99999999999999999999999999999999999999", 10)
	return decimal128.FromBigInt(n)
}()

// typesValue returns row id of the types scenario.
func typesValue(id int64) typesRow {
	r := typesRow{ID: id}
	r.I = pick(id, []int32{math.MinInt32, math.MaxInt32, 0, -1}, func(id int64) int32 { return int32(id*7919) - 1_000_000 })
	r.F = pick(id, []float32{-math.MaxFloat32, math.MaxFloat32, math.SmallestNonzeroFloat32, -0.5}, func(id int64) float32 { return float32(id%4001) / 4 })
	r.D = pick(id, []float64{-math.MaxFloat64, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-3}, func(id int64) float64 { return float64(id%100003)/8 - 5000 })
	r.Dec = pick(id, []ibg.Decimal{{Val: maxDecimal38, Scale: 10}, {Val: maxDecimal38.Negate(), Scale: 10}, {Val: decimal128.FromI64(1), Scale: 10}, {Val: decimal128.FromI64(0), Scale: 10}},
		func(id int64) ibg.Decimal {
			return ibg.Decimal{Val: decimal128.FromI64(id * 1_000_000_007).Mul(decimal128.FromI64(id - 1500)), Scale: 10}
		})
	r.Day = pick(id, []ibg.Date{-719162, 2932896, -1, 0}, func(id int64) ibg.Date { return ibg.Date(day20240101 - 2000 + id*3) }) // 0001-01-01, 9999-12-31
	r.TS = pick(id, []ibg.Timestamp{-62135596800000000, 253402300799999999, -1, 0}, func(id int64) ibg.Timestamp {
		return ibg.Timestamp(1700000000000000 + (id-1500)*86_400_000_123)
	})
	r.TSTZ = pick(id, []time.Time{time.UnixMicro(-62135596800000000).UTC(), time.UnixMicro(253402300799999999).UTC(), time.UnixMicro(-1).UTC(), time.UnixMicro(0).UTC()},
		func(id int64) time.Time { return time.UnixMicro(1600000000000000 - id*3_600_000_001).UTC() })
	r.S = pick(id, []string{"", "naïve café ☕ 𝄞", "back\\slash|pipe,comma:colon", "x"},
		func(id int64) string { return fmt.Sprintf("s%d", id%97) })
	r.U = pick(id, []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("00000000-0000-0000-0000-000000000001")},
		func(id int64) uuid.UUID {
			return uuid.NewSHA1(uuid.NameSpaceOID, binary.BigEndian.AppendUint64(nil, uint64(id)))
		})
	r.Fx = pick(id, [][8]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 0, 0, 0, 0, 1}},
		func(id int64) [8]byte {
			h := sha1.Sum(binary.BigEndian.AppendUint64(nil, uint64(id)))
			return [8]byte(h[:8])
		})
	switch {
	case id == 0:
		r.Bin = []byte{} // empty, not null
	case id == 1:
		r.Bin = []byte{0, 0xff, 0x80, 0x7f}
	case id%5 != 2:
		r.Bin = binary.BigEndian.AppendUint64(nil, uint64(id*id))[id%4:]
	}
	r.B = pick(id, []bool{true, false}, func(id int64) bool { return id%3 == 0 })
	switch {
	case id == 0:
		r.Lst = []*int64{} // empty, not null
	case id == 1:
		r.Lst = []*int64{ptr(int64(math.MinInt64)), nil, ptr(int64(math.MaxInt64))}
	case id%6 != 4:
		for k := int64(0); k < id%5; k++ {
			if (id+k)%9 == 0 {
				r.Lst = append(r.Lst, nil)
			} else {
				r.Lst = append(r.Lst, ptr(id*10+k))
			}
		}
	}
	switch {
	case id == 0:
		r.Mp = map[string]*int32{} // empty, not null
	case id == 1:
		r.Mp = map[string]*int32{"": ptr(int32(math.MinInt32)), "null": nil, "max": ptr(int32(math.MaxInt32))}
	case id%8 != 5:
		r.Mp = map[string]*int32{}
		for k := int64(0); k < id%4; k++ {
			r.Mp[fmt.Sprintf("k%d", (id+k)%11)] = ptr(int32(id - k))
		}
	}
	switch {
	case id == 0:
		r.St = &typesSub{X: math.MaxFloat64}
	case id == 1:
		r.St = &typesSub{X: -0.25, Label: ptr("")}
	case id%10 != 7:
		r.St = &typesSub{X: float64(id) / 16, Label: pick(id, nil, func(id int64) string { return fmt.Sprintf("l%d", id%13) })}
	}
	switch {
	case id == 0:
		r.Nest = []typesSub{}
	case id%4 != 1:
		for k := int64(0); k < id%3; k++ {
			r.Nest = append(r.Nest, typesSub{X: float64(id+k) / 2, Label: pick(id+k, nil, func(id int64) string { return fmt.Sprintf("n%d", id%5) })})
		}
	}
	return r
}

// values returns r as the Go values iceberg.Read's rows hold, in typesColumns order.
func (r typesRow) values() []any {
	out := []any{r.ID, val(r.I), val(r.F), val(r.D), val(r.Dec), val(r.Day), val(r.TS), nil, val(r.S), val(r.U), nil, nil, val(r.B), nil, nil, nil, nil}
	if r.TSTZ != nil {
		out[7] = ibg.Timestamp(r.TSTZ.UnixMicro())
	}
	if r.Fx != nil {
		out[10] = r.Fx[:]
	}
	if r.Bin != nil {
		out[11] = r.Bin
	}
	if r.Lst != nil {
		l := make([]any, len(r.Lst))
		for i, v := range r.Lst {
			l[i] = val(v)
		}
		out[13] = l
	}
	if r.Mp != nil {
		m := make([]iceberg.MapEntry, 0, len(r.Mp))
		for k, v := range r.Mp {
			m = append(m, iceberg.MapEntry{Key: k, Value: val(v)})
		}
		out[14] = m
	}
	sub := func(s typesSub) iceberg.Row {
		return iceberg.NewRow([]string{"x", "label"}, []any{s.X, val(s.Label)})
	}
	if r.St != nil {
		out[15] = sub(*r.St)
	}
	if r.Nest != nil {
		l := make([]any, len(r.Nest))
		for i, s := range r.Nest {
			l[i] = sub(s)
		}
		out[16] = l
	}
	return out
}

// val returns *p, or an untyped nil for a nil p.
func val[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func timeValue(id int64) timeRow {
	return timeRow{ID: id, T: pick(id, []ibg.Time{0, 86_399_999_999, 1}, func(id int64) ibg.Time {
		return ibg.Time(id * 28_800_017 % 86_400_000_000)
	})}
}

func nanos(id int64) *int64 {
	return pick(id, []int64{math.MinInt64 + 1, math.MaxInt64, -1, 1, 0}, func(id int64) int64 {
		return 1_700_000_000_123_456_789 + (id-1500)*3_600_000_000_007
	})
}

func nanosValue(id int64) nanosRow {
	r := nanosRow{ID: id}
	if ns := nanos(id); ns != nil {
		r.TSNs = ptr(time.Unix(0, *ns).UTC())
		r.Raw = ptr(ibg.TimestampNano(*ns / 3))
	}
	return r
}

func nanosTZValue(id int64) nanosTZRow {
	r := nanosTZRow{ID: id}
	if ns := nanos(id); ns != nil {
		r.TZNs = ptr(time.Unix(0, -*ns).UTC())
	}
	return r
}

func (r timeRow) values() []any { return []any{r.ID, val(r.T)} }

func (r nanosRow) values() []any {
	out := []any{r.ID, nil, val(r.Raw)}
	if r.TSNs != nil {
		out[1] = ibg.TimestampNano(r.TSNs.UnixNano())
	}
	return out
}

func (r nanosTZRow) values() []any {
	out := []any{r.ID, nil}
	if r.TZNs != nil {
		out[1] = ibg.TimestampNano(r.TZNs.UnixNano())
	}
	return out
}

func genTypesFn(r idRange, emit func(typesRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(typesValue(id))
	}
}

func genTimeFn(r idRange, emit func(timeRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(timeValue(id))
	}
}

func genNanosFn(r idRange, emit func(nanosRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(nanosValue(id))
	}
}

func genNanosTZFn(r idRange, emit func(nanosTZRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(nanosTZValue(id))
	}
}

func genVariantFn(r idRange, emit func(variantRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(variantValue(id))
	}
}

// variantValue is row id of the variant scenario: nulls of both kinds, scalars at
// their extremes, empty and nested objects and arrays. Its values are ones whose JSON
// text every JSON library writes alike (no floats with integral values, no HTML
// characters), so the checks compare JSON text.
func variantValue(id int64) variantRow {
	docs := []any{
		"zero", []any{nil}, true, false, int64(math.MaxInt64), int64(math.MinInt64), 0.5, -1.25,
		"naïve café ☕ 𝄞 back\\slash|pipe \"quoted\"", "",
		map[string]any{}, []any{},
		map[string]any{"a": int64(1), "b": []any{int64(1), "x", nil, false}, "c": map[string]any{"d": map[string]any{"e": []any{}}}},
		[]any{[]any{[]any{int64(7)}}, map[string]any{"k": nil}},
	}
	var doc any
	switch {
	case id < int64(len(docs)):
		doc = docs[id]
	case id%7 == 3:
		doc = "zero"
	case id%5 == 0:
		doc = map[string]any{"id": id, "name": fmt.Sprintf("n%d", id%97), "tags": []any{id % 3, "t"}, "ok": id%2 == 0}
	case id%5 == 1:
		doc = []any{id, fmt.Sprintf("s%d", id), float64(id) + 0.25}
	case id%5 == 2:
		doc = fmt.Sprintf("text %d", id)
	default:
		doc = id * 1_000_003
	}
	if doc == "zero" {
		return variantRow{ID: id}
	}
	v, err := iceberg.NewVariant(doc)
	if err != nil {
		panic(err)
	}
	return variantRow{ID: id, V: v}
}

func genVariantNullsFn(r idRange, emit func(variantNullsRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(variantNullsValue(id))
	}
}

// variantNullsValue is row id of the variant nulls scenario: a null column value, a
// variant null or an integer, in turn.
func variantNullsValue(id int64) variantNullsRow {
	var doc any
	switch id % 3 {
	case 0:
		return variantNullsRow{ID: id}
	case 2:
		doc = id
	}
	v, err := iceberg.NewVariant(doc)
	if err != nil {
		panic(err)
	}
	return variantNullsRow{ID: id, V: v}
}

func genUnknownFn(r idRange, emit func(unknownRow)) {
	for id := r.Lo; id < r.Hi; id++ {
		emit(unknownValue(id))
	}
}

func unknownValue(id int64) unknownRow {
	return unknownRow{ID: id, S: pick(id, []string{""}, func(id int64) string { return fmt.Sprintf("s%d", id) })}
}

func (r unknownRow) values() []any { return []any{r.ID, val(r.S), nil} }

func (r variantNullsRow) values() []any { return variantRow(r).values() }

func (r variantRow) values() []any {
	if r.V.IsZero() {
		return []any{r.ID, nil}
	}
	return []any{r.ID, r.V}
}

// writeIcebeamTypes writes the type scenarios with iceberg.Write and returns them.
func writeIcebeamTypes(t *testing.T, cat *icebergtest.LocalCatalog) []Scenario {
	// The nanosecond tables exist before the write: time.Time fields go into their
	// timestamp_ns and timestamptz_ns columns (a created table would make them
	// timestamptz).
	p := ibg.PrimitiveTypes
	icebergtest.CreateTable(t, cat.Catalog, "go_icebeam.v3_nanos", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "tsns", Type: p.TimestampNs},
		ibg.NestedField{ID: 3, Name: "raw", Type: p.TimestampNs},
	), icebergtest.WithFormatVersion(3))
	icebergtest.CreateTable(t, cat.Catalog, "go_icebeam.v3_unknown", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "s", Type: p.String},
		ibg.NestedField{ID: 3, Name: "nothing", Type: p.Unknown},
	), icebergtest.WithFormatVersion(3))
	icebergtest.CreateTable(t, cat.Catalog, "go_icebeam.v3_nanos_tz", ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: p.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "tzns", Type: p.TimestampTzNs},
	), icebergtest.WithFormatVersion(3))
	var out []Scenario
	for _, v := range []struct {
		name, ident string
		cols        []Column
		gen         any
		values      func(int64) []any
	}{
		{"v3 types", "go_icebeam.v3_types", typesColumns, genTypesFn, func(id int64) []any { return typesValue(id).values() }},
		{"v3 time", "go_icebeam.v3_time", timeColumns, genTimeFn, func(id int64) []any { return timeValue(id).values() }},
		{"v3 nanosecond timestamps", "go_icebeam.v3_nanos", nanosColumns, genNanosFn, func(id int64) []any { return nanosValue(id).values() }},
		{"v3 nanosecond timestamps with zone", "go_icebeam.v3_nanos_tz", nanosTZColumns, genNanosTZFn, func(id int64) []any { return nanosTZValue(id).values() }},
		{"v3 variant", "go_icebeam.v3_variant", variantColumns, genVariantFn, func(id int64) []any { return variantValue(id).values() }},
		{"v3 variant nulls", "go_icebeam.v3_variant_nulls", variantColumns, genVariantNullsFn, func(id int64) []any { return variantNullsValue(id).values() }},
		{"v3 unknown", "go_icebeam.v3_unknown", unknownColumns, genUnknownFn, func(id int64) []any { return unknownValue(id).values() }},
	} {
		p, s := beam.NewPipelineWithRoot()
		var ranges []idRange
		for lo := int64(0); lo < typesRows; lo += 1000 {
			ranges = append(ranges, idRange{lo, min(lo+1000, typesRows)})
		}
		rows := beam.ParDo(s, v.gen, beam.CreateList(s, ranges))
		res, err := iceberg.TryWrite(s, iceberg.WriteConfig{Table: v.ident, CatalogName: cat.Name, CatalogProperties: cat.Props}, rows)
		if err != nil {
			t.Fatalf("TryWrite %s: %v", v.ident, err)
		}
		passert.Count(s, res.DeadLetter, "dead letters", 0)
		passert.Count(s, res.Snapshots, "snapshots", 1)
		if err := ptest.Run(p); err != nil {
			t.Fatalf("write %s: %v", v.ident, err)
		}
		tbl, err := cat.Catalog.LoadTable(t.Context(), catalog.ToIdentifier(v.ident))
		if err != nil {
			t.Fatal(err)
		}
		icebergtest.RequireValid(t, tbl)
		for i, c := range v.cols { // the table's types are the ones the checks assume
			f := tbl.Schema().Field(i)
			if f.Name != c.Name || !sameType(c.Type, f.Type) {
				t.Fatalf("%s: column %d is %s %s, want %s %s", v.ident, i, f.Name, f.Type, c.Name, c.Type)
			}
		}
		out = append(out, typesScenario(t, v.name, v.ident, v.cols, v.values))
	}
	return out
}

// sameType reports whether Iceberg type typ is the checks' type string s (nested
// types by their kind only).
func sameType(s string, typ ibg.Type) bool {
	if kind, _, nested := strings.Cut(s, "<"); nested {
		return strings.HasPrefix(typ.String(), kind+"<")
	}
	return strings.ReplaceAll(typ.String(), " ", "") == s
}

// typesScenario is the scenario of a table of typesRows rows values(id): the full
// read, each column with id on its own, a filtered read and the standard lookups.
func typesScenario(t *testing.T, name, ident string, cols []Column, values func(int64) []any) Scenario {
	t.Helper()
	sc := Scenario{Name: name, Table: ident, FormatVersion: 3, Columns: cols, DeleteFormats: []string{}}
	canon := func(vals []any, idx ...int) string {
		out := make([]string, len(idx))
		for i, j := range idx {
			s, err := Canonical(vals[j])
			if err != nil {
				t.Fatalf("%s column %s: %v", ident, cols[j].Name, err)
			}
			out[i] = s
		}
		return CanonicalRow(out)
	}
	all := make([]int, len(cols))
	for i := range all {
		all[i] = i
	}
	var sum Checksum
	colSums := make([]Checksum, len(cols))
	var low Checksum
	for id := int64(0); id < typesRows; id++ {
		vals := values(id)
		sum.Add(canon(vals, all...))
		for j := 1; j < len(cols); j++ {
			colSums[j].Add(canon(vals, 0, j))
		}
		if id < 100 || id%500 == 0 {
			low.Add(canon(vals, all...))
		}
	}
	sc.Count, sc.Checksum = sum.N, sum.String()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	for j := 1; j < len(cols); j++ {
		sc.Queries = append(sc.Queries, Query{Name: "column[" + cols[j].Name + "]", Keep: []string{"id", cols[j].Name},
			Count: colSums[j].N, Checksum: colSums[j].String()})
	}
	sc.Queries = append(sc.Queries, Query{Name: "id<100 or id%500=0", Filter: "id < 100 OR id IN (500, 1000, 1500, 2000, 2500)",
		Keep: names, Count: low.N, Checksum: low.String()})
	for _, id := range []int64{0, 1, 2, 3, 4, 10, 17, 999, 2999, typesRows} {
		lk := Lookup{ID: id}
		if id < typesRows {
			s := canon(values(id), all...)
			lk.Row = &s
		}
		sc.Lookups = append(sc.Lookups, lk)
	}
	return sc
}
