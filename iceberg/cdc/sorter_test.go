package cdc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

func TestSorterSpills(t *testing.T) {
	dir := t.TempDir()
	s := NewSorter(1<<20, dir) // 1 MiB: forces several spills
	rng := rand.New(rand.NewPCG(1, 2))
	type rec struct {
		key  string
		seq  int64
		kind Kind
		row  string
	}
	var want []rec
	for i := range 60000 {
		k := make([]byte, 8)
		binary.BigEndian.PutUint64(k, uint64(rng.IntN(5000)))
		r := rec{string(k), int64(rng.IntN(10)), Kind(1 + rng.IntN(4)), fmt.Sprintf("row-%d-%s", i, bytes.Repeat([]byte("x"), rng.IntN(40)))}
		want = append(want, r)
		if err := s.Add([]byte(r.key), r.seq, r.kind, []byte(r.row)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Spills() < 3 {
		t.Fatalf("%d spills, want several", s.Spills())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temp dir holds %d entries, want the sorter's folder", len(ents))
	}
	slices.SortStableFunc(want, func(a, b rec) int {
		return Compare(&Record{Key: []byte(a.key), Seq: a.seq, Kind: a.kind}, &Record{Key: []byte(b.key), Seq: b.seq, Kind: b.kind})
	})
	i := 0
	for r, err := range s.Sorted() {
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if string(r.Key) != w.key || r.Seq != w.seq || r.Kind != w.kind {
			t.Fatalf("record %d = (%x,%d,%s), want (%x,%d,%s)", i, r.Key, r.Seq, r.Kind, w.key, w.seq, w.kind)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d records, want %d", i, len(want))
	}
	if err := s.Add([]byte("k"), 1, Insert, nil); err == nil {
		t.Fatal("Add after Sorted succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("temp files left: %d", len(ents))
	}
}

func TestSorterInMemory(t *testing.T) {
	s := NewSorter(64<<20, t.TempDir())
	defer s.Close()
	for _, k := range []string{"b", "a", "c", "a"} {
		if err := s.Add([]byte(k), 1, Insert, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	for r, err := range s.Sorted() {
		if err != nil {
			t.Fatal(err)
		}
		got += string(r.Key)
	}
	if got != "aabc" || s.Spills() != 0 {
		t.Fatalf("got %q with %d spills", got, s.Spills())
	}
}

// TestSorterKeyPrefix: keys shorter and longer than the 8-byte prefix the in-memory
// sort compares first, keys that are prefixes of others, and keys holding 0x00
// (equal zero-padded prefixes) sort bytewise, then by sequence number and kind.
func TestSorterKeyPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 1, 'a', 0xff}
	var want []Record
	s := NewSorter(64<<20, t.TempDir())
	defer s.Close()
	for range 20000 {
		k := make([]byte, rng.IntN(12))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		r := Record{Key: k, Seq: int64(rng.IntN(3)), Kind: Kind(1 + rng.IntN(4))}
		want = append(want, r)
		if err := s.Add(r.Key, r.Seq, r.Kind, nil); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(want, func(a, b Record) int { return Compare(&a, &b) })
	i := 0
	for r, err := range s.Sorted() {
		if err != nil {
			t.Fatal(err)
		}
		if w := want[i]; !bytes.Equal(r.Key, w.Key) || r.Seq != w.Seq || r.Kind != w.Kind {
			t.Fatalf("record %d = (%x,%d,%s), want (%x,%d,%s)", i, r.Key, r.Seq, r.Kind, w.Key, w.Seq, w.Kind)
		}
		i++
	}
	if i != len(want) || s.Spills() != 0 {
		t.Fatalf("%d records, want %d; %d spills, want 0", i, len(want), s.Spills())
	}
}

// BenchmarkSorter adds 100,000 changes with random 8-byte keys (a long key column)
// and 40-byte rows to an in-memory sorter and reads them back sorted.
func BenchmarkSorter(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(nil, rng.Uint64())
	}
	row := bytes.Repeat([]byte("r"), 40)
	b.ReportAllocs()
	for b.Loop() {
		s := NewSorter(64<<20, b.TempDir())
		for i, k := range keys {
			if err := s.Add(k, int64(i), UpdateAfter, row); err != nil {
				b.Fatal(err)
			}
		}
		for _, err := range s.Sorted() {
			if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}
