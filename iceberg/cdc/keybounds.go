package cdc

import (
	"slices"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// keyRanges are the values of a resolution's keys column by column, each encoded
// as keyCodec encodes it (bytes that compare in the values' order), sorted: a data
// file whose manifest bounds on a key column hold none of that column's values
// holds none of the keys. Files that compaction wrote sorted by the key (see
// write.executeGroup) hold narrow, disjoint key ranges, so that a window whose
// keys fall in a few ranges reads the key columns of those files only.
type keyRanges struct {
	codec *keyCodec
	cols  [][]string // by key column: the keys' encoded values, sorted
}

func newKeyRanges(ks *keySet) *keyRanges {
	r := &keyRanges{codec: ks.codec, cols: make([][]string, len(ks.codec.types))}
	var buf []byte
	for i := range r.cols {
		vals := make([]string, 0, len(ks.keys))
		for _, k := range ks.keys {
			var err error
			if buf, err = ks.codec.appendValue(buf[:0], i, k[i]); err == nil {
				vals = append(vals, string(buf))
			}
		}
		slices.Sort(vals)
		r.cols[i] = slices.Compact(vals)
	}
	return r
}

// mayHold reports whether data file f may hold one of the keys: false only when,
// for some key column, f's lower and upper bounds are both known and no key's
// value of that column lies between them. Missing or undecodable bounds (no
// statistics, an upper bound iceberg-go could not truncate) hold anything.
func (r *keyRanges) mayHold(f ibg.DataFile) bool {
	lower, upper := f.LowerBoundValues(), f.UpperBoundValues()
	for i, id := range r.codec.ids {
		lo, ok1 := r.bound(i, lower[id])
		hi, ok2 := r.bound(i, upper[id])
		if !ok1 || !ok2 {
			continue
		}
		vals := r.cols[i]
		j, _ := slices.BinarySearch(vals, lo) // the first value at or above lo
		if j == len(vals) || vals[j] > hi {
			return false
		}
	}
	return true
}

// bound decodes b, a bound of key column i in Iceberg's single-value
// serialization, and encodes it as the column's values are. A long column
// promoted from int has int bounds (4 bytes) in the files written before.
func (r *keyRanges) bound(i int, b []byte) (string, bool) {
	if b == nil {
		return "", false
	}
	typ := r.codec.types[i]
	if _, long := typ.(ibg.Int64Type); long && len(b) == 4 {
		typ = ibg.PrimitiveTypes.Int32
	}
	lit, err := ibg.LiteralFromBytes(typ, b)
	if err != nil {
		return "", false
	}
	v, err := row.Normalize(lit.Any(), r.codec.types[i])
	if err != nil {
		return "", false
	}
	enc, err := r.codec.appendValue(nil, i, v)
	return string(enc), err == nil
}
