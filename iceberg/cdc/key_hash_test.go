package cdc

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// fnvMix is hashKey written plainly: FNV-1a over every byte, then mix. Shards are
// assigned by it, so its results must never change.
func fnvMix(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix(h)
}

// TestHashKeyUnrolled checks that the unrolled hash of 8-byte keys (hash8, used by
// hashKey and hashTop) is the byte loop's: keys keep their shards and the key
// index's partitions match Shard.
func TestHashKeyUnrolled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var enc [8]byte
	for i := range 200_000 {
		v := rng.Uint64()
		if i < 1000 {
			v = uint64(i) ^ 1<<63 // small longs, as the key codec encodes them
		}
		binary.BigEndian.PutUint64(enc[:], v)
		want := fnvMix(enc[:])
		if got := hashKey(enc[:]); got != want {
			t.Fatalf("hashKey(%x) = %x, want %x", enc, got, want)
		}
		if got := hashTop(v, 8); got != want {
			t.Fatalf("hashTop(%x, 8) = %x, want %x", v, got, want)
		}
		for n := 1; n < 8; n++ {
			if got, want := hashTop(v, n), fnvMix(enc[:n]); got != want {
				t.Fatalf("hashTop(%x, %d) = %x, want %x", v, n, got, want)
			}
		}
	}
}

// BenchmarkHashKey compares the partition of an 8-byte key by the byte loop with
// hashTop's unrolled hash (a cold key index build hashes every row of the table).
func BenchmarkHashKey(b *testing.B) {
	var sink uint64
	b.Run("loop", func(b *testing.B) {
		var enc [8]byte
		for i := range b.N {
			binary.BigEndian.PutUint64(enc[:], uint64(i))
			sink += fnvMix(enc[:]) % 16
		}
	})
	b.Run("unrolled", func(b *testing.B) {
		for i := range b.N {
			sink += hashTop(uint64(i), 8) % 16
		}
	})
	_ = sink
}
