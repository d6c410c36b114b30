package cdc

import (
	"context"
	"fmt"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestResolvePrunesByKeyBounds: a table of five files holding disjoint id ranges
// (as compaction writes them, sorted by the key), one with a DV. A resolution reads
// the key columns of the files whose id bounds hold one of its keys only, with the
// key index (a cold index reads those, a later resolution reads the files of its
// new keys, keys already read read nothing) and without one (iceberg-go's planning
// prunes an IN of up to 200 values by the bounds); the positions found are exactly
// the live rows of the keys.
func TestResolvePrunesByKeyBounds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		index int64
	}{{"index", 64 << 20}, {"planning", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, "bounds_"+tc.name)
			f.seed(t, cityRows(5000), 1000) // ids 1-1000, 1001-2000, ...
			f.apply(t, []row.Row{change("d", 1502, "", "", 1)}, false)
			tbl := f.table(t)
			files := len(icebergtest.DataFiles(t, tbl))
			r := Resolver{KeyColumns: []string{"id"}, IndexBytes: tc.index}
			var total int64
			for _, step := range []struct {
				keys  []int64
				reads int
			}{
				{[]int64{5, 1500, 1502, 1999}, 2}, // 1502 deleted
				{[]int64{4200, 6000}, 1},          // 6000 in no file
				{[]int64{7, 4300}, 0},
			} {
				keys := make([][]any, len(step.keys))
				for i, k := range step.keys {
					keys[i] = []any{k}
				}
				res, err := r.Resolve(ctx, tbl, keys)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteForce(t, tbl, func(id int64, _ string) bool {
					for _, k := range step.keys {
						if id == k {
							return true
						}
					}
					return false
				})
				samePositions(t, res.Positions(), want)
				reads := step.reads
				if tc.index == 0 {
					reads = len(want) // without an index, every candidate is read again
				}
				if len(res.Scanned) != reads || (reads == 0) != (res.KeyBytes == 0) {
					t.Fatalf("keys %v: read %d of %d files (%d key bytes), want %d", step.keys, len(res.Scanned), files, res.KeyBytes, reads)
				}
				total += res.KeyBytes
			}
			if tc.index > 0 && total == 0 {
				t.Fatal("no key bytes read")
			}
		})
	}
}

// TestKeyBoundsDecode: a bound of each key type, in Iceberg's single-value
// serialization, encodes as a key value of that type does (so that the bounds
// prune: an undecodable bound would hold anything).
func TestKeyBoundsDecode(t *testing.T) {
	vals := []any{int32(-7), int64(-1 << 40), ibg.Date(19000), ibg.Timestamp(1_700_000_000_000_000), "city-42",
		uuid.MustParse("01234567-89ab-cdef-0123-456789abcdef"), true}
	var fields []ibg.NestedField
	var names []string
	for i, typ := range []ibg.Type{ibg.PrimitiveTypes.Int32, ibg.PrimitiveTypes.Int64, ibg.PrimitiveTypes.Date,
		ibg.PrimitiveTypes.Timestamp, ibg.PrimitiveTypes.String, ibg.PrimitiveTypes.UUID, ibg.PrimitiveTypes.Bool} {
		names = append(names, fmt.Sprintf("c%d", i))
		fields = append(fields, ibg.NestedField{ID: i + 1, Name: names[i], Type: typ, Required: true})
	}
	codec, err := newKeyCodec(ibg.NewSchema(0, fields...), names)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := newKeySet(codec, [][]any{vals})
	if err != nil {
		t.Fatal(err)
	}
	r := newKeyRanges(ks)
	for i, v := range ks.keys[0] {
		lit, err := literal(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := lit.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.bound(i, b)
		if want, _ := codec.appendValue(nil, i, v); !ok || got != string(want) {
			t.Errorf("%s bound of %v: %x %v, want %x", codec.types[i], v, got, ok, want)
		}
	}
	// A long column promoted from int: the bounds of files written before are ints
	// (4 bytes), read as the longs they are.
	for _, v := range []int32{-7, 0, 1 << 30} {
		b, err := ibg.Int32Literal(v).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.bound(1, b)
		if want, _ := codec.appendValue(nil, 1, int64(v)); !ok || got != string(want) {
			t.Errorf("int bound %d of a long column: %x %v, want %x", v, got, ok, want)
		}
	}
}

// TestKeyIndexWarmInterleaved: a warm-up that reads one file at a time, with
// resolutions between its batches (each reading the file of its own key when the
// warm-up has not yet): every resolution finds exactly the live rows of its key,
// and each data file is read, and reported, once.
func TestKeyIndexWarmInterleaved(t *testing.T) {
	defer func(n int64) { warmBatchRows = n }(warmBatchRows)
	warmBatchRows = 500
	f := newFixture(t, nil, "warm_interleaved")
	f.seed(t, cityRows(3000), 500)
	tbl := f.table(t)
	r := Resolver{KeyColumns: []string{"id"}, IndexBytes: 64 << 20}
	r.Warm(tbl)
	reads := map[string]int{}
	for i := 0; i < 200 && len(reads) < 6; i++ {
		id := int64(3000 - 500*(i%6)) // the last row of each file, newest first
		res, err := r.Resolve(context.Background(), tbl, [][]any{{id}})
		if err != nil {
			t.Fatal(err)
		}
		samePositions(t, res.Positions(), bruteForce(t, tbl, func(got int64, _ string) bool { return got == id }))
		for _, p := range res.Scanned {
			reads[p]++
		}
		time.Sleep(time.Millisecond)
	}
	for p, n := range reads {
		if n != 1 {
			t.Errorf("%s reported read %d times", p, n)
		}
	}
	if len(reads) != 6 {
		t.Fatalf("%d of 6 data files reported read", len(reads))
	}
}
