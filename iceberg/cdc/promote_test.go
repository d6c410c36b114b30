package cdc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestPromotedIntKey: the key column id was an int when the first files were
// written (their pages and bounds hold 4-byte values) and is a long now (the
// spec's int -> long promotion). The keys of those files must match the long keys
// of changes, through the scan (single key column and composite) and through the
// key index, and a change to an old row must delete it.
func TestPromotedIntKey(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	tbl := intKeyTable(t, cat, "db.promoted")
	rows := func(lo, hi int, id func(int) any) [][]any {
		var out [][]any
		for i := lo; i <= hi; i++ {
			out = append(out, []any{id(i), fmt.Sprintf("city-%d", i), "CA"})
		}
		return out
	}
	old := rows(1, 3000, func(i int) any { return int32(i) })
	for lo := 0; lo < len(old); lo += 1000 {
		rec := icebergtest.Records(t, tbl.Schema(), old[lo:lo+1000])
		tbl = icebergtest.AppendRecords(t, tbl, rec)
		rec.Release()
	}
	tbl = promoteID(t, tbl)
	p, err := NewParser("db.promoted", tbl.Schema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cat: cat, ident: tbl.Identifier(), parser: p, keys: []string{"id"}, format: config.DeleteFormatDV, shards: 1}
	f.seed(t, rows(3001, 4000, func(i int) any { return int64(i) }), 1000)
	tbl = f.table(t)

	// Old keys (int files), new keys (the long file) and absent ones.
	ids := []int64{1, 2, 999, 1000, 1001, 2500, 3000, 3001, 3500, 4000, 4001, 1 << 40}
	var keys, pairs [][]any
	for _, id := range ids {
		keys = append(keys, []any{id})
		pairs = append(pairs, []any{"CA", id})
	}
	for _, r := range []Resolver{
		{KeyColumns: []string{"id"}},
		{KeyColumns: []string{"id"}, IndexBytes: 64 << 20},
		{KeyColumns: []string{"state", "id"}},
		{KeyColumns: []string{"state", "id"}, IndexBytes: 64 << 20},
	} {
		ks := keys
		if len(r.KeyColumns) == 2 {
			ks = pairs
		}
		res, err := r.Resolve(context.Background(), tbl, ks)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Found(); got != len(ids)-2 {
			t.Errorf("resolver %v (index %d): found %d keys, want %d", r.KeyColumns, r.IndexBytes, got, len(ids)-2)
		}
	}

	// Upserts and a delete of rows in int files, an upsert in the long file.
	f.apply(t, []row.Row{
		change("u", 5, "moved", "CA", 1),
		change("d", 2000, "", "", 1),
		change("u", 3500, "moved", "CA", 1),
	}, true)
	got := f.contents(t)
	if len(got) != 3999 {
		t.Errorf("%d ids after the changes, want 3999", len(got))
	}
	for id, want := range map[int64][]string{5: {"moved|CA"}, 3500: {"moved|CA"}, 2000: nil, 6: {"city-6|CA"}} {
		if fmt.Sprint(got[id]) != fmt.Sprint(want) {
			t.Errorf("id %d: %v, want %v", id, got[id], want)
		}
	}
}

// TestArrowEncoderPromoted: values of a file written before a promotion (int ->
// long, date -> timestamp) encode as the column's type encodes the same value; a
// type that fits no promotion is an error naming the column.
func TestArrowEncoderPromoted(t *testing.T) {
	mem := memory.NewGoAllocator()
	ib := array.NewInt32Builder(mem)
	ib.AppendValues([]int32{-7, 0, 42}, nil)
	ints := ib.NewArray()
	defer ints.Release()
	db := array.NewDate32Builder(mem)
	db.AppendValues([]arrow.Date32{-1, 0, 19000}, nil)
	dates := db.NewArray()
	defer dates.Release()
	for _, tc := range []struct {
		typ  ibg.Type
		arr  arrow.Array
		want func(j int) any
	}{
		{ibg.PrimitiveTypes.Int64, ints, func(j int) any { return int64(ints.(*array.Int32).Value(j)) }},
		{ibg.PrimitiveTypes.Int32, ints, func(j int) any { return ints.(*array.Int32).Value(j) }},
		{ibg.PrimitiveTypes.Date, dates, func(j int) any { return ibg.Date(dates.(*array.Date32).Value(j)) }},
		{ibg.PrimitiveTypes.Timestamp, dates, func(j int) any {
			return ibg.Timestamp(int64(dates.(*array.Date32).Value(j)) * 86_400_000_000)
		}},
		{ibg.PrimitiveTypes.TimestampTzNs, dates, func(j int) any {
			return ibg.TimestampNano(int64(dates.(*array.Date32).Value(j)) * 86_400_000_000_000)
		}},
	} {
		sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "k", Type: tc.typ, Required: true})
		codec, err := newKeyCodec(sc, []string{"k"})
		if err != nil {
			t.Fatal(err)
		}
		enc, err := codec.arrowEncoder(0, tc.arr)
		if err != nil {
			t.Fatalf("%s from %s: %v", tc.typ, tc.arr.DataType(), err)
		}
		for j := range tc.arr.Len() {
			want, err := codec.appendValue(nil, 0, tc.want(j))
			if err != nil {
				t.Fatal(err)
			}
			if got := enc(nil, j); !bytes.Equal(got, want) {
				t.Errorf("%s from %s row %d: %x, want %x", tc.typ, tc.arr.DataType(), j, got, want)
			}
		}
	}
	sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "k", Type: ibg.PrimitiveTypes.String, Required: true})
	codec, err := newKeyCodec(sc, []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.arrowEncoder(0, ints); err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("int32 values for a string column: %v", err)
	}
}

// TestPromotedKeyMidRun: the key column id is promoted from int to long while a
// run holds changes parsed with the schema before (a worker that has not seen
// the promotion, a shuffle's packets). A key parsed with either schema must
// encode the same, go to the same shard, and collapse with the other schema's
// changes of that key in one shard window: an update parsed before the
// promotion, then a delete parsed after, leave no row.
func TestPromotedKeyMidRun(t *testing.T) {
	cat := icebergtest.NewLocalCatalog(t)
	tbl := intKeyTable(t, cat, "db.midrun")
	var seed [][]any
	for i := int32(1); i <= 100; i++ {
		seed = append(seed, []any{i, fmt.Sprintf("city-%d", i), "CA"})
	}
	rec := icebergtest.Records(t, tbl.Schema(), seed)
	tbl = icebergtest.AppendRecords(t, tbl, rec)
	rec.Release()
	oldParser, err := NewParser("db.midrun", tbl.Schema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	oldID := tbl.Schema().ID
	tbl = promoteID(t, tbl)
	newParser, err := NewParser("db.midrun", tbl.Schema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}

	sharder, err := NewSharder(tbl, []string{"id"}, 16, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{-1 << 31, -1, 0, 5, 7, 1 << 20, 1<<31 - 1} {
		var enc [2][]byte
		for i, p := range []*Parser{oldParser, newParser} {
			c, err := p.Parse(intChange(i == 0, "u", id, "x", 1))
			if err != nil {
				t.Fatalf("parse %d with parser %d: %v", id, i, err)
			}
			if enc[i], err = p.AppendKey(nil, c.Key); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(enc[0], enc[1]) {
			t.Fatalf("key %d encodes as %x with the int schema, %x with the long one", id, enc[0], enc[1])
		}
		if a, b := sharder.Shard(enc[0], nil), sharder.Shard(enc[1], nil); a != b {
			t.Fatalf("key %d goes to shard %d with the int schema, %d with the long one", id, a, b)
		}
	}

	f := &fixture{cat: cat, ident: tbl.Identifier(), parser: newParser, keys: []string{"id"}, format: config.DeleteFormatDV, shards: 1}
	before, rejected := pack(oldParser, oldID, []row.Row{intChange(true, "u", 5, "updated", 1), intChange(true, "u", 7, "first", 3)}, 3)
	after, rejected2 := pack(newParser, tbl.Schema().ID, []row.Row{change("d", 5, "", "", 2), change("u", 7, "second", "CA", 4)}, 3)
	if len(rejected)+len(rejected2) > 0 {
		t.Fatalf("rejected: %v %v", rejected, rejected2)
	}
	run, err := runPackets(f.shardConfig(tbl, true), append(before, after...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.dead) > 0 {
		t.Fatalf("dead letters: %v", run.dead)
	}
	w := window{deletes: Deletes{KeyColumns: f.keys, Format: f.format}}
	w.deletes.Resolved = append(w.deletes.Resolved, run.Resolution)
	w.dataFiles = writeRows(t, tbl, run.lineageRows(tbl), run.lineage)
	f.commit(t, w)
	f.check(t)
	got := f.contents(t)
	if len(got) != 99 {
		t.Errorf("%d ids after the changes, want 99", len(got))
	}
	for id, want := range map[int64][]string{5: nil, 7: {"second|CA"}, 6: {"city-6|CA"}} {
		if fmt.Sprint(got[id]) != fmt.Sprint(want) {
			t.Errorf("id %d: %v, want %v", id, got[id], want)
		}
	}
}

// intChange is change with the id an int32 when narrow (a row of the schema
// before the promotion).
func intChange(narrow bool, op string, id int64, city string, seq int64) row.Row {
	if !narrow {
		return change(op, id, city, "CA", seq)
	}
	return row.New([]string{"op", "id", "city", "state", "seq"}, []any{op, int32(id), city, "CA", seq})
}

// intKeyTable creates table name with the identifier column id an int, and city
// and state strings.
func intKeyTable(t *testing.T, cat *icebergtest.LocalCatalog, name string) *table.Table {
	sc := ibg.NewSchemaWithIdentifiers(0, []int{1},
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int32, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "state", Type: ibg.PrimitiveTypes.String},
	)
	return icebergtest.CreateTable(t, cat.Catalog, name, sc)
}

// promoteID commits the promotion of tbl's column id from int to long and returns
// the table after it.
func promoteID(t *testing.T, tbl *table.Table) *table.Table {
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).UpdateColumn([]string{"id"}, table.ColumnUpdate{
		FieldType: ibg.Optional[ibg.Type]{Valid: true, Val: ibg.PrimitiveTypes.Int64}}).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Schema().Field(0).Type.(ibg.Int64Type); !ok {
		t.Fatalf("id is %s after the promotion", tbl.Schema().Field(0).Type)
	}
	return tbl
}
