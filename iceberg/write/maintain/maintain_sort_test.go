package maintain

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/cdc"
	"github.com/icebeam/icebeam/iceberg/internal/keyblob"
	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// keyedSchema is writetest.IDNameSchema with id as the identifier field.
func keyedSchema() *ibg.Schema {
	return ibg.NewSchemaWithIdentifiers(0, []int{1}, writetest.IDNameSchema().Fields()...)
}

// shuffledTable creates db.<name> (sc) holding ids 0..n-1 shuffled over
// files data files, one commit each, then deletes every tenth id with DVs. It
// returns the table and the live ids.
func shuffledTable(t *testing.T, cat catalog.Catalog, name string, sc *ibg.Schema, n, files int, opts ...catalog.CreateTableOpt) (*table.Table, []int64) {
	t.Helper()
	ctx := context.Background()
	tbl := writetest.CreateTable(t, cat, name, sc, opts...)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	rand.New(rand.NewPCG(7, 8)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for f := range files {
		part := ids[f*n/files : (f+1)*n/files]
		if _, err := writetest.FastCommitter.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{SinkID: "seed", WindowEndMs: int64(f + 1), DataFiles: writetest.WriteIDs(t, tbl, part)}); err != nil {
			t.Fatal(err)
		}
	}
	var gone []any
	var live []int64
	for i := range int64(n) {
		if i%10 == 3 {
			gone = append(gone, i)
		} else {
			live = append(live, i)
		}
	}
	tbl, err := cat.LoadTable(ctx, tbl.Identifier())
	if err == nil {
		tbl, _, err = icebergtest.DeleteKeysDV(ctx, tbl, "id", gone)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tbl, live
}

// tasksByLowerID plans tbl's files, in the order of their lower id bound.
func tasksByLowerID(t *testing.T, tbl *table.Table) []table.FileScanTask {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int {
		return int(int64(binary.LittleEndian.Uint64(a.File.LowerBoundValues()[1])) - int64(binary.LittleEndian.Uint64(b.File.LowerBoundValues()[1])))
	})
	return tasks
}

// fileIDs returns the ids of each live data file of tbl in file order, with the
// file's manifest bounds on id.
func fileIDs(t *testing.T, tbl *table.Table) (ids [][]int64, lower, upper []int64) {
	t.Helper()
	ctx := context.Background()
	tasks := tasksByLowerID(t, tbl)
	for _, task := range tasks {
		_, recs, err := tbl.Scan(table.WithSelectedFields("id")).ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for rec, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rec.Column(0).(*array.Int64).Int64Values()...)
		}
		ids = append(ids, got)
		lower = append(lower, int64(binary.LittleEndian.Uint64(task.File.LowerBoundValues()[1])))
		upper = append(upper, int64(binary.LittleEndian.Uint64(task.File.UpperBoundValues()[1])))
	}
	return ids, lower, upper
}

// TestCompactSortsByIdentifierFields: compaction of a table whose ids are shuffled
// over several files (with DVs) writes each file's rows sorted by the identifier
// field, or by the key columns it is given when the table has none (inline
// maintenance: the sink's equality columns), so that files of one group hold
// disjoint, tight id ranges; the table holds the same live ids and passes the
// invariant checks.
//
// The compacted files of at least cdc.MinBlobRows rows (lowered to 1,000) get
// their key index blobs in the table's key index file: each blob finds every id
// of its file at its row position.
func TestCompactSortsByIdentifierFields(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	defer func(n int64) { cdc.MinBlobRows = n }(cdc.MinBlobRows)
	cdc.MinBlobRows = 1000
	for _, tc := range []struct {
		name   string
		target int64 // compaction target file size: small makes one group write several files
		minOut int
		keys   []string // compaction's key columns; set: a table without identifier fields
	}{{"one file", 0, 1, nil}, {"several files", 16 << 10, 3, nil}, {"sink keys", 16 << 10, 3, []string{"id"}}} {
		t.Run(tc.name, func(t *testing.T) {
			// Row groups of 4096 rows: the writer rolls files on flushed bytes.
			props := catalog.WithProperties(ibg.Properties{"format-version": "3", table.ParquetRowGroupLimitKey: "4096"})
			sc := keyedSchema()
			if tc.keys != nil {
				sc = writetest.IDNameSchema()
			}
			tbl, live := shuffledTable(t, cat, "sorted_"+strings.ReplaceAll(tc.name, " ", "_"), sc, 60000, 6, props)
			if tc.target == 0 {
				compactAll(t, cat, tbl.Identifier(), CompactOptions{RewriteAll: true})
			} else {
				compactOneGroup(t, cat, tbl, CompactOptions{RewriteAll: true, TargetFileSize: tc.target, KeyColumns: tc.keys})
			}
			tbl, err := cat.LoadTable(ctx, tbl.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			files, lower, upper := fileIDs(t, tbl)
			if len(files) < tc.minOut {
				t.Fatalf("compaction wrote %d files, want at least %d", len(files), tc.minOut)
			}
			var all []int64
			for i, ids := range files {
				if !slices.IsSorted(ids) {
					t.Errorf("file %d: ids not sorted: %v...", i, ids[:min(10, len(ids))])
				}
				if ids[0] != lower[i] || ids[len(ids)-1] != upper[i] {
					t.Errorf("file %d: bounds [%d, %d], ids from %d to %d", i, lower[i], upper[i], ids[0], ids[len(ids)-1])
				}
				if i > 0 && lower[i] <= upper[i-1] {
					t.Errorf("file %d: bounds [%d, %d] overlap file %d's [%d, %d]", i, lower[i], upper[i], i-1, lower[i-1], upper[i-1])
				}
				all = append(all, ids...)
			}
			if !slices.Equal(all, live) {
				t.Fatalf("compacted table holds %d ids, want the %d live ones", len(all), len(live))
			}
			checkKeyBlobs(t, tbl, files)
		})
	}
}

// TestCompactSortLimit: a group whose rows are more than sortMemoryLimit in memory
// is rewritten unsorted, in iceberg-go's streaming rewrite, and loses no row; under
// the limit the same table is sorted.
func TestCompactSortLimit(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	for _, tc := range []struct {
		name   string
		limit  int64
		sorted bool
	}{{"over", 64 << 10, false}, {"under", 64 << 20, true}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old int64) { sortMemoryLimit = old }(sortMemoryLimit)
			sortMemoryLimit = tc.limit
			props := catalog.WithProperties(ibg.Properties{"format-version": "3"})
			tbl, live := shuffledTable(t, cat, "sort_limit_"+tc.name, keyedSchema(), 60000, 6, props) // about 1.4 MB in Arrow
			compactAll(t, cat, tbl.Identifier(), CompactOptions{RewriteAll: true})
			tbl, err := cat.LoadTable(ctx, tbl.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			icebergtest.RequireValid(t, tbl)
			files, _, _ := fileIDs(t, tbl)
			var all []int64
			for _, ids := range files {
				all = append(all, ids...)
			}
			if got := slices.IsSorted(all); got != tc.sorted {
				t.Errorf("limit %d: compacted ids sorted %v, want %v", tc.limit, got, tc.sorted)
			}
			slices.Sort(all)
			if !slices.Equal(all, live) {
				t.Fatalf("compacted table holds %d ids, want the %d live ones", len(all), len(live))
			}
		})
	}
}

// compactOneGroup rewrites every live file of tbl as one group with target file
// size target, and commits it.
func compactOneGroup(t *testing.T, cat catalog.Catalog, tbl *table.Table, o CompactOptions) {
	t.Helper()
	ctx := context.Background()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := CompactionGroup{Table: "db." + tbl.Identifier()[1], Partition: "all"}
	for _, task := range tasks {
		g.Files = append(g.Files, task.File.FilePath())
		g.Bytes += task.File.FileSizeBytes()
	}
	if _, err := CompactGroup(ctx, writetest.FastCommitter, cat, tbl.Identifier(), g, o); err != nil {
		t.Fatal(err)
	}
}

// TestCompactionSortColumns: the table's sort order sorts first, each term by its
// source column as iceberg-go's writer sorts batches (bucket and void terms too),
// and the identifier fields (or, in a table without them, the key columns given)
// break its ties.
func TestCompactionSortColumns(t *testing.T) {
	cat := writetest.NewCatalog(t)
	order := func(fields ...table.SortField) catalog.CreateTableOpt {
		so, err := table.NewSortOrder(1, fields)
		if err != nil {
			t.Fatal(err)
		}
		return catalog.WithSortOrder(so)
	}
	name := func(tr ibg.Transform, dir table.SortDirection, nulls table.NullOrder) table.SortField {
		return table.SortField{SourceIDs: []int{2}, Transform: tr, Direction: dir, NullOrder: nulls}
	}
	for _, tc := range []struct {
		name string
		sc   *ibg.Schema
		opts []catalog.CreateTableOpt
		keys []string
		want string
	}{
		{"identifier", keyedSchema(), nil, nil, "id asc first"},
		{"identifier over keys", keyedSchema(), nil, []string{"name"}, "id asc first"},
		{"no identifier", writetest.IDNameSchema(), nil, nil, ""},
		{"no identifier, keys", writetest.IDNameSchema(), nil, []string{"name", "id"}, "name asc first, id asc first"},
		{"order then identifier", keyedSchema(), []catalog.CreateTableOpt{order(name(ibg.TruncateTransform{Width: 2}, table.SortDESC, table.NullsLast))}, nil, "name desc last, id asc first"},
		{"order then keys", writetest.IDNameSchema(), []catalog.CreateTableOpt{order(name(ibg.TruncateTransform{Width: 2}, table.SortDESC, table.NullsLast))}, []string{"id"}, "name desc last, id asc first"},
		{"bucket", keyedSchema(), []catalog.CreateTableOpt{order(name(ibg.BucketTransform{NumBuckets: 4}, table.SortASC, table.NullsFirst))}, nil, "name asc first, id asc first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := writetest.CreateTable(t, cat, "cols_"+strings.ReplaceAll(tc.name, " ", "_"), tc.sc, tc.opts...)
			var got []string
			for _, c := range sortColumns(tbl, tc.keys) {
				s := c.name + " asc"
				if c.key.Order == compute.SortOrderDescending {
					s = c.name + " desc"
				}
				if c.key.NullPlacement == compute.SortNullsAtEnd {
					s += " last"
				} else {
					s += " first"
				}
				got = append(got, s)
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Fatalf("sort columns %q, want %q", g, tc.want)
			}
		})
	}
}

// TestCompactSortsEveryType: compaction sorts and rewrites rows of every Iceberg
// type (primitives, struct, list, map; nulls), keeping them all: three appended
// files, each with ids 0..399, become files sorted by id holding the same rows.
func TestCompactSortsEveryType(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := icebergtest.CreateTable(t, cat, "db.every_type", icebergtest.SampleSchema())
	for seed := range int64(3) {
		rec := icebergtest.SampleRecords(t, 400, seed)
		tbl = icebergtest.AppendRecords(t, tbl, rec)
		rec.Release()
	}
	before := icebergtest.ReadAll(t, tbl, nil)
	defer before.Release()
	compactAll(t, cat, tbl.Identifier(), CompactOptions{RewriteAll: true})
	tbl, err := cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	icebergtest.RequireValid(t, tbl)
	after := icebergtest.ReadAll(t, tbl, nil)
	defer after.Release()
	icebergtest.EqualRows(t, before, after)
	files, _, _ := fileIDs(t, tbl)
	if len(files) != 1 || !slices.IsSorted(files[0]) {
		t.Fatalf("compacted files' ids: %d files, first sorted %v", len(files), len(files) > 0 && slices.IsSorted(files[0]))
	}
}

// checkKeyBlobs requires the table's key index file to hold a blob of each of
// its data files (files: their ids in row order, by lower bound) that finds
// every id at its row position.
func checkKeyBlobs(t *testing.T, tbl *table.Table, files [][]int64) {
	t.Helper()
	ctx := context.Background()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := keyblob.Refs(fs, tbl.Properties()[keyblob.IndexProperty], 1)
	if err != nil || len(refs) != len(files) {
		t.Fatalf("key index file %q: %d blobs for %d compacted files, %v", tbl.Properties()[keyblob.IndexProperty], len(refs), len(files), err)
	}
	tasks := tasksByLowerID(t, tbl)
	for i, task := range tasks {
		x, err := keyblob.Read(fs, refs[task.File.FilePath()], task.File.Count())
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		pos, probe, err := x.Hits(files[i], func(int64) bool { return true })
		if err != nil || len(pos) != len(files[i]) {
			t.Fatalf("file %d: %d of %d ids found, %v", i, len(pos), len(files[i]), err)
		}
		for j := range pos {
			if pos[j] != int64(probe[j]) {
				t.Fatalf("file %d: id %d at position %d, the blob says %d", i, files[i][probe[j]], probe[j], pos[j])
			}
		}
	}
}
