package keyblob

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// entry is one (key, position) pair.
type entry struct{ key, pos int64 }

// layouts returns key columns of n rows in the layouts the index must handle.
func layouts(n int, r *rand.Rand) map[string][]int64 {
	asc := make([]int64, n)
	gaps := make([]int64, n)
	k := int64(-1000)
	for i := range n {
		asc[i] = int64(i)
		k += 1 + r.Int64N(5)
		gaps[i] = k
	}
	shuffled := slices.Clone(asc)
	r.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	dups := make([]int64, n)
	for i := range dups {
		dups[i] = r.Int64N(int64(n)/3 + 1)
	}
	sortedDups := slices.Clone(dups)
	slices.Sort(sortedDups)
	extremes := make([]int64, n)
	for i := range extremes {
		switch r.IntN(4) {
		case 0:
			extremes[i] = math.MinInt64 + r.Int64N(3)
		case 1:
			extremes[i] = math.MaxInt64 - r.Int64N(3)
		default:
			extremes[i] = int64(r.Uint64())
		}
	}
	same := make([]int64, n)
	for i := range same {
		same[i] = -7
	}
	step := make([]int64, n)
	for i := range step {
		step[i] = int64(n-i) * 1000 // descending, equal deltas once sorted
	}
	return map[string][]int64{
		"ascending dense": asc, "ascending gaps": gaps, "shuffled dense": shuffled,
		"duplicates": dups, "sorted duplicates": sortedDups, "extremes": extremes,
		"one key": same, "descending step": step,
	}
}

// want returns the positions of each key and the entries in key order.
func want(keys []int64) (map[int64][]int64, []entry) {
	m := map[int64][]int64{}
	es := make([]entry, len(keys))
	for i, k := range keys {
		m[k] = append(m[k], int64(i))
		es[i] = entry{k, int64(i)}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.pos, b.pos)) })
	return m, es
}

// probesFor returns sorted probes: present keys, absent neighbours, the
// extremes of int64 and duplicates.
func probesFor(keys []int64, r *rand.Rand) []int64 {
	ps := []int64{math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1, 0, -1}
	for range min(len(keys), 300) {
		k := keys[r.IntN(len(keys))]
		ps = append(ps, k, k, k-1, k+1)
	}
	if len(keys) > 0 {
		ps = append(ps, slices.Min(keys)-1, slices.Max(keys)+1)
	}
	slices.Sort(ps)
	return ps
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bs := range []int{1, 2, 7, 64, DefaultBlockSize} {
		for _, n := range []int{0, 1, 2, bs - 1, bs, bs + 1, 3*bs + 5, 5000} {
			if n < 0 {
				continue
			}
			for name, keys := range layouts(n, r) {
				x, err := Open(encode(keys, bs))
				if err != nil {
					t.Fatalf("block size %d, %d rows, %s: %v", bs, n, name, err)
				}
				if x.Rows() != int64(n) {
					t.Errorf("block size %d, %s: Rows %d, want %d", bs, name, x.Rows(), n)
				}
				m, es := want(keys)
				probes := probesFor(keys, r)
				got := make([][]int64, len(probes))
				if err := x.Lookup(probes, func(i int, pos int64) { got[i] = append(got[i], pos) }); err != nil {
					t.Fatalf("block size %d, %d rows, %s: Lookup: %v", bs, n, name, err)
				}
				for i, p := range probes {
					if !slices.Equal(got[i], m[p]) {
						t.Fatalf("block size %d, %d rows, %s: probe %d (%d): positions %v, want %v", bs, n, name, i, p, got[i], m[p])
					}
				}
				var all []entry
				if err := x.All(func(k, pos int64) { all = append(all, entry{k, pos}) }); err != nil {
					t.Fatalf("block size %d, %d rows, %s: All: %v", bs, n, name, err)
				}
				if !slices.Equal(all, es) {
					t.Fatalf("block size %d, %d rows, %s: All returned %d entries differing from the %d in key order", bs, n, name, len(all), len(es))
				}
			}
		}
	}
}

func TestEncodeDefaultImplicit(t *testing.T) {
	keys := []int64{3, 3, 5, 9}
	b := Encode(keys)
	if f := binary.LittleEndian.Uint16(b[6:]); f != flagImplicit {
		t.Errorf("ascending keys: flags %#x, want positions implicit", f)
	}
	b = Encode([]int64{5, 3})
	if f := binary.LittleEndian.Uint16(b[6:]); f != 0 {
		t.Errorf("unsorted keys: flags %#x, want explicit positions", f)
	}
}

func TestLookupProbesMustAscend(t *testing.T) {
	x, err := Open(Encode([]int64{1, 2, 3}))
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Lookup([]int64{2, 1}, func(int, int64) {}); err == nil {
		t.Error("Lookup of descending probes: no error")
	}
}

// TestArithmeticBlocks checks that dense keys (key width 0) are found without
// decoding a block, ordered or shuffled, and that other keys are decoded.
func TestArithmeticBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 20*DefaultBlockSize + 3
	ls := layouts(n, r)
	for name, decodes := range map[string]bool{"ascending dense": false, "shuffled dense": false, "descending step": false, "one key": false, "ascending gaps": true} {
		keys := ls[name]
		x, err := Open(Encode(keys))
		if err != nil {
			t.Fatal(err)
		}
		probes := slices.Clone(keys)
		slices.Sort(probes)
		probes = slices.Compact(probes)
		found := 0
		if err := x.Lookup(probes, func(i int, pos int64) {
			if keys[pos] != probes[i] {
				t.Fatalf("%s: probe %d at position %d holding %d", name, probes[i], pos, keys[pos])
			}
			found++
		}); err != nil {
			t.Fatal(err)
		}
		if found != len(keys) {
			t.Errorf("%s: %d positions found, want %d", name, found, len(keys))
		}
		if got := x.decoded > 0; got != decodes {
			t.Errorf("%s: %d blocks decoded, want decoding %v", name, x.decoded, decodes)
		}
	}
}

// TestLookupDecodesProbedBlocks checks that Lookup decodes only the blocks
// holding a probe, each once.
func TestLookupDecodesProbedBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	keys := layouts(40*DefaultBlockSize, r)["ascending gaps"]
	x, err := Open(Encode(keys))
	if err != nil {
		t.Fatal(err)
	}
	// Two keys of block 3, one of block 17, the first of block 30, one above
	// every key.
	probes := []int64{keys[3*DefaultBlockSize+1], keys[4*DefaultBlockSize-1], keys[17*DefaultBlockSize+9],
		keys[30*DefaultBlockSize], keys[len(keys)-1] + 1}
	if err := x.Lookup(probes, func(int, int64) {}); err != nil {
		t.Fatal(err)
	}
	if x.decoded != 3 {
		t.Errorf("%d blocks decoded for probes in blocks 3, 17 and 30, want 3", x.decoded)
	}
}

func TestCorruption(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for name, keys := range layouts(3*DefaultBlockSize+11, r) {
		b := Encode(keys)
		step := max(1, len(b)/3000)
		for i := 0; i < len(b); i += step {
			c := slices.Clone(b)
			c[i] ^= 1 << r.IntN(8)
			if _, err := Open(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: byte %d of %d flipped: Open error %v, want ErrCorrupt", name, i, len(b), err)
			}
		}
		for n := 0; n < len(b); n += max(1, len(b)/500) {
			if _, err := Open(b[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: truncated to %d of %d bytes: Open error %v, want ErrCorrupt", name, n, len(b), err)
			}
		}
	}
}

// TestForgedChecksum flips bytes and recomputes the checksum, as a buggy writer
// could: Open, Lookup and All must return an error or results, never panic,
// and never a position past the rows.
func TestForgedChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for name, keys := range layouts(2*64+9, r) {
		b := encode(keys, 64)
		probes := probesFor(keys, r)
		for i := 0; i < len(b)-trailerLen; i++ {
			c := slices.Clone(b)
			c[i] ^= byte(1 + r.IntN(255))
			body := len(c) - trailerLen
			binary.LittleEndian.PutUint32(c[body:], crc32.Checksum(c[:body], castagnoli))
			x, err := Open(c)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: byte %d: Open error %v, want ErrCorrupt", name, i, err)
				}
				continue
			}
			check := func(pos int64) {
				if pos < 0 || pos >= x.Rows() {
					t.Fatalf("%s: byte %d: position %d outside %d rows", name, i, pos, x.Rows())
				}
			}
			_ = x.Lookup(probes, func(_ int, pos int64) { check(pos) })
			_ = x.All(func(_, pos int64) { check(pos) })
		}
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(Encode([]int64{5, 1, 9, 9, 2}))
	f.Add(Encode([]int64{1, 2, 3, 4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= trailerLen {
			body := len(b) - trailerLen
			binary.LittleEndian.PutUint32(b[body:], crc32.Checksum(b[:body], castagnoli))
		}
		x, err := Open(b)
		if err != nil || x.Rows() > 1<<20 {
			// A few bytes can claim 2^32 rows of one key: valid, but slow to list.
			return
		}
		_ = x.Lookup([]int64{math.MinInt64, 0, 1, 2, 5, 9, math.MaxInt64}, func(int, int64) {})
		_ = x.All(func(int64, int64) {})
	})
}
