package cdc

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"
)

// TestReadDVByRange: reading each DV of a Puffin file by its blob range gives the same
// positions as iceberg-go's footer-based dv.ReadDV, and a corrupted blob is an error.
func TestReadDVByRange(t *testing.T) {
	dir := t.TempDir()
	fs := iceio.LocalFS{}
	spec := ibg.NewPartitionSpec()
	w := dv.NewDVWriter(fs, func(int32) *ibg.PartitionSpec { return &spec })
	want := map[string][]int64{
		"file:///d/a.parquet": {0, 5, 9},
		"file:///d/b.parquet": {1},
		"file:///d/c.parquet": {2, 3, 4, 70000, 1 << 33},
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if err := w.Add(p, want[p], 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	puffin := filepath.Join(dir, "dvs.puffin")
	files, err := w.Flush(context.Background(), puffin)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d DV files, want 3", len(files))
	}
	for _, f := range files {
		got, err := readDV(fs, f)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := dv.ReadDV(fs, f)
		if err != nil {
			t.Fatal(err)
		}
		gotPos := slices.Collect(got.Positions())
		if !slices.Equal(gotPos, slices.Collect(ref.Positions())) {
			t.Errorf("%v: readDV %v, dv.ReadDV %v", f.ReferencedDataFile(), gotPos, slices.Collect(ref.Positions()))
		}
		if ref := *f.ReferencedDataFile(); int64(len(gotPos)) != int64(len(want[ref])) {
			t.Errorf("%s: %d positions, want %d", ref, len(gotPos), len(want[ref]))
		}
	}
	// Flip a byte inside the first blob's bitmap: its CRC no longer matches.
	b, err := os.ReadFile(strings.TrimPrefix(puffin, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	off := *files[0].ContentOffset()
	b[off+10] ^= 0xff
	if err := os.WriteFile(puffin, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readDV(fs, files[0]); err == nil {
		t.Error("readDV of a corrupted blob succeeded")
	}
}
