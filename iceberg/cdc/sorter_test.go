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
