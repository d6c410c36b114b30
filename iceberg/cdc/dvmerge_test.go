package cdc

import (
	"cmp"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/puffin"

	"github.com/icebeam/icebeam/iceberg/cdc/dvfile"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// TestPuffinGroups: the k-th blob of each length goes to the k-th Puffin file, each
// file in strictly increasing length, stable in path order among equal lengths.
func TestPuffinGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		want  [][]int64
	}{
		{"none", nil, nil},
		{"one", []int64{9}, [][]int64{{9}}},
		{"all different", []int64{40, 12, 30, 13}, [][]int64{{12, 13, 30, 40}}},
		{"ties", []int64{5, 3, 5, 7, 3, 5}, [][]int64{{3, 5, 7}, {3, 5}, {5}}},
		{"all equal", []int64{4, 4, 4}, [][]int64{{4}, {4}, {4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var blobs []dvBlob
			for i, s := range tc.sizes {
				blobs = append(blobs, dvBlob{DataFile: string(rune('a' + i)), Data: make([]byte, s)})
			}
			groups := dvfile.Groups(blobs)
			var got [][]int64
			n := 0
			for _, g := range groups {
				var sizes []int64
				for i, b := range g {
					sizes = append(sizes, int64(len(b.Data)))
					if i > 0 && len(b.Data) == len(g[i-1].Data) {
						t.Errorf("equal lengths in one file: %v", g)
					}
				}
				got = append(got, sizes)
				n += len(g)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) || n != len(tc.sizes) {
				t.Fatalf("groups %v, want %v", got, tc.want)
			}
			if len(groups) > 1 && groups[1][0].DataFile < groups[0][0].DataFile && len(groups[1][0].Data) == len(groups[0][0].Data) {
				t.Errorf("equal lengths out of path order: %v", groups)
			}
		})
	}
}

// TestMergeDVsLayoutAcrossCommits replaces DVs over three commits, with DVs of equal
// and different lengths in each: every Puffin file holds its blobs in strictly
// increasing length, a commit writes as many Puffin files as its most frequent DV
// length has DVs, no other Puffin file is left, and the table matches its model
// after every commit (one live DV per data file, icebergtest's checks).
func TestMergeDVsLayoutAcrossCommits(t *testing.T) {
	f := newFixture(t, nil, "layout")
	seed := cityRows(1200)
	model := map[int64]string{}
	for _, r := range seed {
		model[r[0].(int64)] = r[1].(string) + "|" + r[2].(string)
	}
	f.seed(t, seed, 200) // data file i holds ids 200i+1 .. 200i+200
	// ids returns the ids lo+step*k of data file file, k < n.
	ids := func(file, lo, step, n int) []int64 {
		var out []int64
		for k := range n {
			out = append(out, int64(200*file+lo+step*k))
		}
		return out
	}
	seen := map[string]bool{}
	seq := int64(0)
	for i, deletes := range [][][]int64{
		// Three 1-position DVs (equal lengths: three files), one of 50 positions.
		{ids(0, 5, 1, 1), ids(1, 5, 1, 1), ids(2, 5, 1, 1), ids(3, 2, 2, 50)},
		// Replaces the DVs of files 0, 1 and 3 (one long, two of 2 positions), adds a
		// 1-position DV on file 4.
		{ids(0, 3, 3, 40), ids(1, 7, 1, 1), ids(3, 1, 2, 30), ids(4, 9, 1, 1), ids(2, 7, 1, 1)},
		// Replaces again, the longest DV on the file first in path order.
		{ids(0, 100, 2, 50), ids(1, 9, 1, 1), ids(2, 9, 1, 1), ids(4, 11, 1, 1), ids(5, 1, 1, 1)},
	} {
		var changes []row.Row
		for _, d := range deletes {
			for _, id := range d {
				seq++
				changes = append(changes, change("d", id, "", "", seq))
				delete(model, id)
			}
		}
		res := f.apply(t, changes, false)
		if res.DVsRemoved == 0 && i > 0 {
			t.Fatalf("commit %d replaced no DV: %+v", i+1, res)
		}
		if d := diffModel(f.contents(t), model); d != "" {
			t.Fatalf("commit %d: table differs from the model:\n%s", i+1, d)
		}
		byFile := map[string][]ibg.DataFile{}
		for _, dvs := range icebergtest.LiveDVs(t, f.table(t)) {
			for _, d := range dvs {
				if !seen[d.FilePath()] {
					byFile[d.FilePath()] = append(byFile[d.FilePath()], d)
				}
			}
		}
		lengths := map[int64]int{}
		added := 0
		for path, dvs := range byFile {
			seen[path] = true
			slices.SortFunc(dvs, func(a, b ibg.DataFile) int { return cmp.Compare(*a.ContentOffset(), *b.ContentOffset()) })
			for j, d := range dvs {
				lengths[*d.ContentSizeInBytes()]++
				if j > 0 && *d.ContentSizeInBytes() <= *dvs[j-1].ContentSizeInBytes() {
					t.Errorf("commit %d: %s: blob of %d bytes after one of %d", i+1, path, *d.ContentSizeInBytes(), *dvs[j-1].ContentSizeInBytes())
				}
			}
			added += len(dvs)
		}
		most := 0
		for _, n := range lengths {
			most = max(most, n)
		}
		if added != res.DVsAdded || len(byFile) != most || most < 2 {
			t.Fatalf("commit %d: %d DVs in %d Puffin files, most frequent length %d times; result %+v", i+1, added, len(byFile), most, res)
		}
	}
	dir := strings.TrimPrefix(f.table(t).Location(), "file://") + "/data"
	puffins, _ := filepath.Glob(dir + "/*.puffin")
	if len(puffins) != len(seen) {
		t.Fatalf("%d .puffin files in %s, %d referenced", len(puffins), dir, len(seen))
	}
}

// TestMergeDVsPuffinFooter reads back the Puffin footers of the DVs a commit wrote:
// each blob has the metadata Iceberg Java writes (fields [2147483645], the row
// position column; snapshot-id and sequence-number -1; no compression-codec) at the
// content offset and size of its delete file, whose file_size_in_bytes is the
// Puffin file's length.
func TestMergeDVsPuffinFooter(t *testing.T) {
	f := newFixture(t, nil, "footer")
	f.seed(t, cityRows(600), 200)
	var changes []row.Row
	for i, id := range []int64{3, 250, 251, 420, 421, 422} {
		changes = append(changes, change("d", id, "", "", int64(i+1)))
	}
	if res := f.apply(t, changes, false); res.DVsAdded != 3 {
		t.Fatalf("result %+v, want 3 DVs", res)
	}
	n := 0
	for ref, dvs := range icebergtest.LiveDVs(t, f.table(t)) {
		for _, d := range dvs {
			n++
			path := strings.TrimPrefix(d.FilePath(), "file://")
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			st, err := fh.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != d.FileSizeBytes() {
				t.Errorf("%s: file_size_in_bytes %d, file has %d bytes", path, d.FileSizeBytes(), st.Size())
			}
			r, err := puffin.NewReader(fh)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(r.Blobs(), func(b puffin.BlobMetadata) bool {
				return b.Offset == *d.ContentOffset() && b.Length == *d.ContentSizeInBytes()
			})
			if i < 0 {
				t.Fatalf("%s: no blob at content offset %d size %d: %+v", path, *d.ContentOffset(), *d.ContentSizeInBytes(), r.Blobs())
			}
			b := r.Blobs()[i]
			if !slices.Equal(b.Fields, []int32{2147483645}) || b.SnapshotID != -1 || b.SequenceNumber != -1 ||
				b.CompressionCodec != nil || b.Type != puffin.BlobTypeDeletionVector || b.Properties["referenced-data-file"] != ref {
				t.Errorf("%s: blob %+v, want a deletion-vector-v1 blob of %s with fields [2147483645], snapshot-id and sequence-number -1, no compression", path, b, ref)
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d live DVs, want 3", n)
	}
	icebergtest.RequireValid(t, f.table(t))
}

// BenchmarkCommitReplacingDVs commits 10 windows of 2,000 random deletes to a
// 200,000-row table of 100 data files, each window replacing the DVs of most files,
// and reports the Puffin files and DVs per commit and the commit time.
func BenchmarkCommitReplacingDVs(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime=1x")
	}
	const rows, perFile, windows, perWindow = 200_000, 2_000, 10, 2_000
	f := newFixture(b, nil, "replacing")
	f.seed(b, cityRows(rows), perFile)
	perm := rand.New(rand.NewPCG(5, 5)).Perm(rows)
	seen := map[string]bool{}
	var commit time.Duration
	puffins, most, dvs := 0, 0, 0
	for w := range windows {
		var changes []row.Row
		for _, p := range perm[w*perWindow : (w+1)*perWindow] {
			changes = append(changes, change("d", int64(p+1), "", "", int64(w+1)))
		}
		win := f.prepare(b, changes, false)
		start := time.Now()
		res := f.commit(b, win)
		commit += time.Since(start)
		n := 0
		for _, ds := range icebergtest.LiveDVs(b, f.table(b)) {
			for _, d := range ds {
				if !seen[d.FilePath()] {
					seen[d.FilePath()] = true
					n++
				}
			}
		}
		puffins, most, dvs = puffins+n, max(most, n), dvs+res.DVsAdded
	}
	b.ReportMetric(float64(puffins)/windows, "puffin-files/commit")
	b.ReportMetric(float64(most), "max-puffin-files/commit")
	b.ReportMetric(float64(dvs)/windows, "dvs/commit")
	b.ReportMetric(float64(commit.Milliseconds())/windows, "commit-ms")
}
