package icebergtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/cdc/dvfile"
)

// Field IDs of the reserved position delete columns.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// dataFileIndex returns the live data files of tbl's current snapshot by
// path.
func dataFileIndex(ctx context.Context, tbl *table.Table) (map[string]ibg.DataFile, error) {
	out := map[string]ibg.DataFile{}
	for e, err := range entries(ctx, tbl, ibg.ManifestContentData) {
		if err != nil {
			return nil, err
		}
		out[e.DataFile().FilePath()] = e.DataFile()
	}

	return out, nil
}

// sortedKeys returns the keys of m in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	return keys
}

// WriteDVs writes one Puffin file holding a deletion vector for each data
// file in positions (data file path -> row positions), merged with the data
// file's live deletion vector when it has one, without committing. It
// returns the new DVs and the live DVs they replace.
func WriteDVs(t testing.TB, tbl *table.Table, positions map[string][]int64) (added, replaced []ibg.DataFile) {
	t.Helper()

	added, replaced, err := writeDVs(context.Background(), tbl, positions, true)
	if err != nil {
		t.Fatalf("iceberg: write deletion vectors %s: %v", tableName(tbl), err)
	}

	return added, replaced
}

func writeDVs(ctx context.Context, tbl *table.Table, positions map[string][]int64, merge bool) (added, replaced []ibg.DataFile, err error) {
	if v := tbl.Metadata().Version(); v < 3 {
		return nil, nil, fmt.Errorf("deletion vectors need format version 3, table has %d", v)
	}
	fs, err := writeFS(ctx, tbl)
	if err != nil {
		return nil, nil, err
	}
	files, err := dataFileIndex(ctx, tbl)
	if err != nil {
		return nil, nil, err
	}
	live, err := liveDVs(ctx, tbl)
	if err != nil {
		return nil, nil, err
	}
	var blobs []dvfile.Blob
	for _, path := range sortedKeys(positions) {
		df, ok := files[path]
		if !ok {
			return nil, nil, fmt.Errorf("data file %s is not in the current snapshot", path)
		}
		bm := dv.NewRoaringPositionBitmap()
		for _, p := range positions[path] {
			if p < 0 || p >= df.Count() {
				return nil, nil, fmt.Errorf("position %d out of range for data file %s with %d rows", p, path, df.Count())
			}
			bm.Set(uint64(p))
		}
		if merge {
			for _, old := range live[path] {
				prev, err := dv.ReadDV(fs, old)
				if err != nil {
					return nil, nil, fmt.Errorf("read live deletion vector of %s: %w", path, err)
				}
				bm.Or(prev)
				replaced = append(replaced, old)
			}
		}
		if bm.Cardinality() == 0 {
			continue
		}
		b, err := dv.SerializeDV(bm)
		if err != nil {
			return nil, nil, err
		}
		blobs = append(blobs, dvfile.Blob{DataFile: path, Data: b, Cardinality: int64(bm.Cardinality()),
			SpecID: df.SpecID(), Partition: df.Partition()})
	}
	if len(blobs) == 0 {
		return nil, replaced, nil
	}
	// The blobs icebeam's merge-on-read writes (fields [2147483645], as Iceberg
	// Java writes them), so that CheckTable holds for these tables too.
	loc := fmt.Sprintf("%s/data/%s-deletes.puffin", tbl.Location(), uuid.New())
	added, err = dvfile.Write(fs, tbl.Metadata(), loc, blobs)
	if err != nil {
		return nil, nil, err
	}

	return added, replaced, nil
}

// DeleteRowsDV deletes rows by position (data file path -> row positions)
// with deletion vectors on a format-version 3 table: each data file's live
// DV is read, unioned with the new positions and removed in the same
// RowDelta, so a data file keeps at most one live DV. It returns the table
// after the commit.
func DeleteRowsDV(t testing.TB, tbl *table.Table, positions map[string][]int64) *table.Table {
	t.Helper()

	out, err := DeleteRowsDVContext(context.Background(), tbl, positions)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// DeletePositionsV2 deletes rows by position (data file path -> row
// positions) with classic Parquet position delete files, one per data file,
// on a format-version 2 table. It returns the table after the commit.
func DeletePositionsV2(t testing.TB, tbl *table.Table, positions map[string][]int64) *table.Table {
	t.Helper()

	ctx := context.Background()
	out, err := deletePositionsV2(ctx, tbl, positions)
	if err != nil {
		t.Fatalf("iceberg: delete positions %s: %v", tableName(tbl), err)
	}

	return out
}

func deletePositionsV2(ctx context.Context, tbl *table.Table, positions map[string][]int64) (*table.Table, error) {
	if v := tbl.Metadata().Version(); v != 2 {
		return nil, fmt.Errorf("position delete files need format version 2, table has %d", v)
	}
	fs, err := writeFS(ctx, tbl)
	if err != nil {
		return nil, err
	}
	files, err := dataFileIndex(ctx, tbl)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	var deletes []ibg.DataFile
	for _, path := range sortedKeys(positions) {
		df, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("data file %s is not in the current snapshot", path)
		}
		pos := slices.Clone(positions[path])
		slices.Sort(pos)
		pos = slices.Compact(pos)
		if len(pos) == 0 {
			continue
		}
		if pos[0] < 0 || pos[len(pos)-1] >= df.Count() {
			return nil, fmt.Errorf("positions [%d, %d] out of range for data file %s with %d rows", pos[0], pos[len(pos)-1], path, df.Count())
		}
		buf, err := positionDeleteParquet(path, pos)
		if err != nil {
			return nil, err
		}
		loc := fmt.Sprintf("%s/data/%s-pos-deletes.parquet", tbl.Location(), uuid.New())
		if err := fs.WriteFile(loc, buf); err != nil {
			return nil, err
		}
		spec := meta.PartitionSpecByID(int(df.SpecID()))
		if spec == nil {
			return nil, fmt.Errorf("unknown partition spec %d of data file %s", df.SpecID(), path)
		}
		b, err := ibg.NewDataFileBuilder(*spec, ibg.EntryContentPosDeletes, loc, ibg.ParquetFile,
			df.Partition(), nil, nil, int64(len(pos)), int64(len(buf)))
		if err != nil {
			return nil, err
		}
		lo, hi := make([]byte, 8), make([]byte, 8)
		binary.LittleEndian.PutUint64(lo, uint64(pos[0]))
		binary.LittleEndian.PutUint64(hi, uint64(pos[len(pos)-1]))
		deletes = append(deletes, b.
			ReferencedDataFile(path).
			ValueCounts(map[int]int64{posDeleteFilePathID: int64(len(pos)), posDeletePosID: int64(len(pos))}).
			NullValueCounts(map[int]int64{posDeleteFilePathID: 0, posDeletePosID: 0}).
			LowerBoundValues(map[int][]byte{posDeleteFilePathID: []byte(path), posDeletePosID: lo}).
			UpperBoundValues(map[int][]byte{posDeleteFilePathID: []byte(path), posDeletePosID: hi}).
			Build())
	}
	if len(deletes) == 0 {
		return tbl, nil
	}

	return commitRowDelta(ctx, tbl, nil, deletes, nil)
}

// positionDeleteParquet encodes (path, pos) rows, pos sorted, as a Parquet
// position delete file.
func positionDeleteParquet(path string, pos []int64) ([]byte, error) {
	sc := table.PositionalDeleteArrowSchema
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, p := range pos {
		b.Field(0).(*array.StringBuilder).Append(path)
		b.Field(1).(*array.Int64Builder).Append(p)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := fw.Write(rec); err != nil {
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}

	return buf.Bytes(), nil
}

// DeleteEquality deletes every row whose cols equal one of the rows of keys
// with an equality delete file (format version 2 or later). keys holds the
// key columns, by name, in any order. Rows added in the same or a later
// commit are not deleted (the spec's sequence-number rule); float and double
// columns cannot be keys. It returns the table after the commit. The caller
// keeps its reference to keys.
func DeleteEquality(t testing.TB, tbl *table.Table, cols []string, keys arrow.RecordBatch) *table.Table {
	t.Helper()

	out, err := deleteEquality(context.Background(), tbl, cols, keys)
	if err != nil {
		t.Fatalf("iceberg: equality delete %s: %v", tableName(tbl), err)
	}

	return out
}

func deleteEquality(ctx context.Context, tbl *table.Table, cols []string, keys arrow.RecordBatch) (*table.Table, error) {
	sc := tbl.Schema()
	ids := make([]int, 0, len(cols))
	for _, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return nil, fmt.Errorf("no column %q", c)
		}
		ids = append(ids, f.ID)
	}
	// Rebuild the batch on the delete schema (field IDs, table order).
	delSc, err := sc.Select(true, cols...)
	if err != nil {
		return nil, err
	}
	arrowSc, err := table.SchemaToArrowSchema(delSc, nil, true, false)
	if err != nil {
		return nil, err
	}
	arrs := make([]arrow.Array, 0, arrowSc.NumFields())
	for _, f := range arrowSc.Fields() {
		idx := keys.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("key batch has %d columns named %q, want 1", len(idx), f.Name)
		}
		col := keys.Column(idx[0])
		if !arrow.TypeEqual(col.DataType(), f.Type) {
			return nil, fmt.Errorf("key column %q has type %s, want %s", f.Name, col.DataType(), f.Type)
		}
		arrs = append(arrs, col)
	}
	rec := array.NewRecordBatch(arrowSc, arrs, keys.NumRows())
	var seq iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) {
		yield(rec, nil)
	}
	tx := tbl.NewTransaction()
	files, err := tx.WriteEqualityDeletes(ctx, ids, seq)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return tbl, nil
	}
	if err := tx.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
		return nil, err
	}

	return tx.Commit(ctx)
}
