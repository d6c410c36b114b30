//go:build interop

package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/icebeam/icebeam/iceberg"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// sparkRows is SPARK_ROWS in engines.py: ids 0..sparkRows-1 of spark.v3_mor.
const sparkRows = 100_000

// checkSparkChanges reads the changelog of spark.v3_mor (Spark: append, DELETE,
// UPDATE, DELETE, all merge-on-read with deletion vectors) with icebeam's
// ReadChanges and checks every change row against what the SQL did: the table
// has no identifier fields, so an update is a DELETE of the old row and an INSERT
// of the new one in the same snapshot.
func checkSparkChanges(t *testing.T) {
	cat, err := icebergtest.NewLocalCatalogAt(catalogDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	dir := t.TempDir()
	cols := []string{"id", "category", "qty", "_change_type", "_commit_snapshot_id", "_commit_snapshot_sequence_number"}
	p, s := beam.NewPipelineWithRoot()
	changes, err := iceberg.TryReadChanges(s, iceberg.ChangesConfig{
		Table: "spark.v3_mor", CatalogName: cat.Name, CatalogProperties: cat.Props,
		Keep: []string{"id", "category", "qty"},
	})
	if err != nil {
		t.Fatal(err)
	}
	beam.ParDo0(s, &sinkFn{Dir: dir}, beam.ParDo(s, &canonFn{Cols: cols}, changes))
	if _, err := beam.Run(context.Background(), "prism", p); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.rows"))
	if err != nil {
		t.Fatal(err)
	}
	// got[sequence number][change type] = the ids, with the qty and category of each.
	got := map[int64]map[string]map[int64]string{}
	rows := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			v := strings.Split(line, "|")
			id, _ := strconv.ParseInt(v[0], 10, 64)
			seq, _ := strconv.ParseInt(v[5], 10, 64)
			if got[seq] == nil {
				got[seq] = map[string]map[int64]string{}
			}
			if got[seq][v[3]] == nil {
				got[seq][v[3]] = map[int64]string{}
			}
			if _, dup := got[seq][v[3]][id]; dup {
				t.Errorf("sequence %d: %s of id %d twice", seq, v[3], id)
			}
			got[seq][v[3]][id] = v[2] + "|" + v[1] // qty|category
			rows++
		}
	}
	seqs := slices.Sorted(func(yield func(int64) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	if len(seqs) != 4 {
		t.Fatalf("changes in %d snapshots (sequence numbers %v), want 4 (append, delete, update, delete)", len(seqs), seqs)
	}
	category := func(id int64) string {
		if id%13 == 0 {
			return `\N`
		}
		return "c" + strconv.FormatInt(id%7, 10)
	}
	want := []map[string]map[int64]string{{"INSERT": {}}, {"DELETE": {}}, {"DELETE": {}, "INSERT": {}}, {"DELETE": {}}}
	for id := int64(0); id < sparkRows; id++ {
		qty, cat := strconv.FormatInt(id%100, 10), category(id)
		want[0]["INSERT"][id] = qty + "|" + cat
		if id%10 == 3 {
			want[1]["DELETE"][id] = qty + "|" + cat
			continue
		}
		if id%25 == 7 {
			want[2]["DELETE"][id] = qty + "|" + cat
			qty, cat = strconv.FormatInt(id%100+1000, 10), "upd"
			want[2]["INSERT"][id] = qty + "|" + cat
		}
		if (id >= 500 && id <= 600) || id%1000 == 999 {
			want[3]["DELETE"][id] = qty + "|" + cat
		}
	}
	for i, seq := range seqs {
		for _, kind := range []string{"INSERT", "DELETE", "UPDATE_BEFORE", "UPDATE_AFTER"} {
			g, w := got[seq][kind], want[i][kind]
			if len(g) != len(w) {
				t.Errorf("snapshot %d (sequence %d): %d %s rows, want %d", i+1, seq, len(g), kind, len(w))
				continue
			}
			for id, v := range w {
				if g[id] != v {
					t.Errorf("snapshot %d (sequence %d): %s of id %d = %q, want %q", i+1, seq, kind, id, g[id], v)
					break
				}
			}
		}
	}
	fmt.Printf("interop: ok   icebeam   spark        v3_mor changelog: %d change rows over %d snapshots match the SQL\n", rows, len(seqs))
}
