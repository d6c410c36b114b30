package datafile

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/write/commit"
	"github.com/icebeam/icebeam/iceberg/write/internal/writetest"
)

// regionSchema has an id, a region (partitioned by identity) and a timestamp.
func regionSchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "region", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "ts", Type: ibg.PrimitiveTypes.TimestampTz},
	)
}

// regionBatch builds n rows: id i, region regions[i%len], ts i hours.
func regionBatch(t *testing.T, tbl *table.Table, n int, regions ...string) (*arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(regions[i%len(regions)])
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 3600 * 1_000_000))
	}
	return sc, b.NewRecordBatch()
}

func TestWriteDataFiles(t *testing.T) {
	ctx := context.Background()
	regionSpec := func() catalog.CreateTableOpt {
		spec := ibg.NewPartitionSpec(ibg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: ibg.IdentityTransform{}})
		return catalog.WithPartitionSpec(&spec)
	}
	tests := []struct {
		name      string
		partition bool
		opts      Options
		rows      int
		// check inspects the files.
		check func(t *testing.T, files []ibg.DataFile)
	}{
		{
			name: "unpartitioned one file", rows: 100,
			check: func(t *testing.T, files []ibg.DataFile) {
				if len(files) != 1 {
					t.Errorf("files = %d, want 1", len(files))
				}
			},
		},
		{
			name: "identity partition one file per region", partition: true, rows: 90,
			check: func(t *testing.T, files []ibg.DataFile) {
				var got []string
				for _, f := range files {
					got = append(got, f.Partition()[1000].(string))
					if f.Count() != 30 {
						t.Errorf("file %s has %d rows, want 30", f.FilePath(), f.Count())
					}
				}
				sort.Strings(got)
				if want := []string{"eu", "us", "ap"}; len(got) != 3 || got[0] != "ap" || got[1] != "eu" || got[2] != "us" {
					t.Errorf("partitions = %v, want %v", got, want)
				}
			},
		},
		{
			name: "write_properties row group limit", rows: 100,
			opts: Options{WriteProperties: map[string]string{"write.parquet.row-group-limit": "10"}},
			check: func(t *testing.T, files []ibg.DataFile) {
				if len(files) != 1 || len(files[0].SplitOffsets()) != 10 {
					t.Errorf("want 1 file with 10 row groups, got %d files, offsets %v", len(files), files[0].SplitOffsets())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := writetest.NewCatalog(t)
			var opts []catalog.CreateTableOpt
			if tc.partition {
				opts = append(opts, regionSpec())
			}
			tbl := writetest.CreateTable(t, cat, "t", regionSchema(), opts...)
			sc, rec := regionBatch(t, tbl, tc.rows, "eu", "us", "ap")
			files, err := writeDataFiles(ctx, tbl, sc, []arrow.RecordBatch{rec}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, files)
			var rows int64
			for _, f := range files {
				rows += f.Count()
			}
			if rows != int64(tc.rows) {
				t.Errorf("rows in files = %d, want %d", rows, tc.rows)
			}

			// Round trip through the wire form, then commit the decoded files.
			enc, err := Encode(tbl.Metadata(), files)
			if err != nil {
				t.Fatal(err)
			}
			cur, err := cat.LoadTable(ctx, tbl.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(cur.Metadata(), enc)
			if err != nil {
				t.Fatal(err)
			}
			for i := range dec {
				if dec[i].FilePath() != files[i].FilePath() || dec[i].Count() != files[i].Count() ||
					dec[i].FileSizeBytes() != files[i].FileSizeBytes() || dec[i].SpecID() != files[i].SpecID() {
					t.Errorf("decoded file %d differs: %s", i, dec[i].FilePath())
				}
			}
			if _, err := commit.Commit(ctx, cat, tbl.Identifier(), commit.CommitRequest{SinkID: "s", WindowEndMs: 1, DataFiles: dec}); err != nil {
				t.Fatal(err)
			}
			if got := writetest.CountRows(t, cat, tbl.Identifier()); got != int64(tc.rows) {
				t.Errorf("rows = %d, want %d", got, tc.rows)
			}
		})
	}
}

func TestDecodeDataFilesMismatch(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", regionSchema())
	sc, rec := regionBatch(t, tbl, 5, "eu")
	files, err := writeDataFiles(ctx, tbl, sc, []arrow.RecordBatch{rec}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Encode(tbl.Metadata(), files)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(e *Encoded)
	}{
		{"unknown spec", func(e *Encoded) { e.SpecID = 42 }},
		{"unknown schema", func(e *Encoded) { e.SchemaID = 42 }},
		{"other format version", func(e *Encoded) { e.FormatVersion = 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := enc[0]
			tc.mutate(&e)
			if _, err := Decode(tbl.Metadata(), []Encoded{e}); err == nil {
				t.Fatal("decode succeeded")
			}
		})
	}
}

func TestWriteDataFilesReleasesOnError(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", regionSchema())
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	// A batch whose schema does not match the table: WriteRecords rejects it up front.
	sc := arrow.NewSchema([]arrow.Field{{Name: "other", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	b.Field(0).(*array.Int32Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	if _, err := writeDataFiles(ctx, tbl, sc, []arrow.RecordBatch{rec}, Options{}); err == nil {
		t.Fatal("WriteDataFiles accepted a batch of another schema")
	}
}

func TestFileWriterStreams(t *testing.T) {
	ctx := context.Background()
	cat := writetest.NewCatalog(t)
	tbl := writetest.CreateTable(t, cat, "t", regionSchema())
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	sc, empty := regionBatch(t, tbl, 0)
	empty.Release()
	// A target of one byte rolls a file after every batch.
	w, err := NewWriter(ctx, tbl, sc, Options{TargetFileSizeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	const batches = 5
	for range batches {
		_, b := regionBatch(t, tbl, 10, "eu")
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	files, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range files {
		rows += f.Count()
	}
	if len(files) != batches || rows != batches*10 {
		t.Errorf("%d files of %d rows, want %d of %d", len(files), rows, batches, batches*10)
	}

	// After a failure, Write releases what it is given and reports the failure.
	other := arrow.NewSchema([]arrow.Field{{Name: "other", Type: arrow.PrimitiveTypes.Int32}}, nil)
	w, err = NewWriter(ctx, tbl, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for range 3 {
		b := array.NewRecordBuilder(mem, other)
		b.Field(0).(*array.Int32Builder).Append(1)
		if err := w.Write(b.NewRecordBatch()); err != nil {
			failed = err
		}
		b.Release()
	}
	if _, err := w.Close(); err == nil || !strings.Contains(err.Error(), "iceberg: write db.t") {
		t.Errorf("Close = %v (Write = %v), want the writer's failure", err, failed)
	}
}

// writeDataFiles writes batches, whose schema is sc, to new Parquet data files of tbl,
// partitioned by the table's default spec, and returns the complete DataFiles without
// committing them. Each batch is released once consumed, also on error; files written
// before an error stay in storage, unreferenced.
func writeDataFiles(ctx context.Context, tbl *table.Table, sc *arrow.Schema, batches []arrow.RecordBatch, opts Options) ([]ibg.DataFile, error) {
	w, err := NewWriter(ctx, tbl, sc, opts)
	if err != nil {
		for _, b := range batches {
			b.Release()
		}
		return nil, err
	}
	for _, b := range batches {
		w.Write(b) // after an error, Write releases b; Close reports the error
	}
	return w.Close()
}
