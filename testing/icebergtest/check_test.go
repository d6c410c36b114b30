package icebergtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
)

// checkSchema is a two-column schema for the invariant tests.
var checkSchema = ibg.NewSchemaWithIdentifiers(0, []int{1},
	ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
	ibg.NestedField{ID: 2, Name: "v", Type: ibg.PrimitiveTypes.String},
)

// fiveRowTable creates a format-version 3 table with one data file of five
// rows and returns it with that file's path.
func fiveRowTable(t *testing.T) (*table.Table, string) {
	t.Helper()

	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.check", checkSchema)
	rows := make([][]any, 5)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprint("v", i)}
	}
	tbl = AppendRecords(t, tbl, Records(t, checkSchema, rows))
	files := DataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("data files = %d, want 1", len(files))
	}

	return tbl, files[0].FilePath()
}

// rawDV writes a DV for path with positions and no merge or range check.
func rawDV(t *testing.T, tbl *table.Table, path string, positions ...int64) ibg.DataFile {
	t.Helper()

	ctx := context.Background()
	fs, err := writeFS(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	meta := tbl.Metadata()
	w := dv.NewDVWriter(fs, func(id int32) *ibg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	if err := w.Add(path, positions, 0, nil); err != nil {
		t.Fatal(err)
	}
	files, err := w.Flush(ctx, fmt.Sprintf("%s/data/%s-deletes.puffin", tbl.Location(), uuid.New()))
	if err != nil {
		t.Fatal(err)
	}

	return files[0]
}

// withCount rebuilds DV df with another record_count.
func withCount(t *testing.T, tbl *table.Table, df ibg.DataFile, count int64) ibg.DataFile {
	t.Helper()

	return rebuiltDV(t, tbl, df, count, df.FileSizeBytes())
}

// rebuiltDV rebuilds DV df with record_count count and file_size_in_bytes size.
func rebuiltDV(t *testing.T, tbl *table.Table, df ibg.DataFile, count, size int64) ibg.DataFile {
	t.Helper()

	spec := tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
	b, err := ibg.NewDataFileBuilder(*spec, df.ContentType(), df.FilePath(), df.FileFormat(),
		df.Partition(), nil, nil, count, size)
	if err != nil {
		t.Fatal(err)
	}

	return b.ReferencedDataFile(*df.ReferencedDataFile()).
		ContentOffset(*df.ContentOffset()).
		ContentSizeInBytes(*df.ContentSizeInBytes()).
		Build()
}

func TestCheckTableValid(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *table.Table
	}{
		{"empty", func(t *testing.T) *table.Table {
			return CreateTable(t, NewLocalCatalog(t).Catalog, "db.empty", checkSchema)
		}},
		{"appended", func(t *testing.T) *table.Table {
			tbl, _ := fiveRowTable(t)

			return tbl
		}},
		{"two successive DV deletes", func(t *testing.T) *table.Table {
			tbl, path := fiveRowTable(t)
			tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {1}})

			return DeleteRowsDV(t, tbl, map[string][]int64{path: {1, 3}})
		}},
		{"DVs on two appends", func(t *testing.T) *table.Table {
			tbl, path := fiveRowTable(t)
			tbl = AppendRecords(t, tbl, Records(t, checkSchema, [][]any{{int64(9), nil}}))
			var other string
			for _, f := range DataFiles(t, tbl) {
				if f.FilePath() != path {
					other = f.FilePath()
				}
			}

			return DeleteRowsDV(t, tbl, map[string][]int64{path: {4}, other: {0}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckTable(context.Background(), tc.build(t)); err != nil {
				t.Fatalf("CheckTable = %v, want nil", err)
			}
		})
	}
}

func TestCheckTablePositionDeletesNextToDV(t *testing.T) {
	ctx := context.Background()
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.upgraded", checkSchema, WithFormatVersion(2))
	tbl = AppendRecords(t, tbl, Records(t, checkSchema, [][]any{{int64(0), "a"}, {int64(1), "b"}, {int64(2), "c"}}))
	path := DataFiles(t, tbl)[0].FilePath()
	tbl = DeletePositionsV2(t, tbl, map[string][]int64{path: {0}})
	RequireValid(t, tbl)

	tx := tbl.NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	RequireValid(t, tbl) // position deletes alone are fine after the upgrade
	tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {2}})
	err = CheckTable(ctx, tbl)
	if err == nil || !errors.Is(err, ErrInvariant) {
		t.Fatalf("CheckTable = %v, want a violation", err)
	}
	if want := "data file " + path + " has position delete file"; !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckTable error lacks %q:\n%v", want, err)
	}
}

// forgeSummary commits a snapshot that reuses the current manifest list
// but carries summary value for key, straight through the catalog.
func forgeSummary(t *testing.T, cat *LocalCatalog, tbl *table.Table, key, value string) *table.Table {
	t.Helper()

	cur := tbl.CurrentSnapshot()
	meta := tbl.Metadata()
	props := maps.Clone(cur.Summary.Properties)
	props[key] = value
	next := meta.NextRowID()
	var zero int64
	snap := &table.Snapshot{
		SnapshotID:       cur.SnapshotID + 1,
		ParentSnapshotID: &cur.SnapshotID,
		SequenceNumber:   meta.LastSequenceNumber() + 1,
		TimestampMs:      cur.TimestampMs + 1,
		ManifestList:     cur.ManifestList,
		Summary:          &table.Summary{Operation: table.OpAppend, Properties: props},
		SchemaID:         cur.SchemaID,
		FirstRowID:       &next,
		AddedRows:        &zero,
	}
	ctx := context.Background()
	_, _, err := cat.Catalog.CommitTable(ctx, tbl.Identifier(),
		[]table.Requirement{table.AssertRefSnapshotID("main", &cur.SnapshotID)},
		[]table.Update{
			table.NewAddSnapshotUpdate(snap),
			table.NewSetSnapshotRefUpdate("main", snap.SnapshotID, table.BranchRef, -1, -1, -1),
		})
	if err != nil {
		t.Fatalf("forge summary: %v", err)
	}
	out, err := cat.Catalog.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}

	return out
}

func TestCheckTableSummaryTotals(t *testing.T) {
	for _, key := range []string{SummaryTotalRecords, SummaryTotalDataFiles, SummaryTotalDeleteFiles,
		SummaryTotalPositionDeletes, SummaryTotalEqualityDeletes} {
		t.Run(key, func(t *testing.T) {
			cat := NewLocalCatalog(t)
			tbl := CreateTable(t, cat.Catalog, "db.sum", checkSchema)
			tbl = AppendRecords(t, tbl, Records(t, checkSchema, [][]any{{int64(1), "a"}, {int64(2), "b"}}))
			tbl = DeleteRowsDV(t, tbl, map[string][]int64{DataFiles(t, tbl)[0].FilePath(): {0}})
			RequireValid(t, tbl)
			tbl = forgeSummary(t, cat, tbl, key, "42")
			err := CheckTable(context.Background(), tbl)
			if err == nil || !errors.Is(err, ErrInvariant) {
				t.Fatalf("CheckTable = %v, want a violation", err)
			}
			if want := "summary " + key + "=42, manifests give"; !strings.Contains(err.Error(), want) {
				t.Fatalf("CheckTable error lacks %q:\n%v", want, err)
			}
		})
	}
}

func TestCheckTableCorrupt(t *testing.T) {
	tests := []struct {
		name string
		// corrupt returns the broken table and substrings the error must hold.
		corrupt func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string)
	}{
		{"two live DVs for one data file", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {0}})
			second := rawDV(t, tbl, path, 1)
			tbl = CommitRowDelta(t, tbl, nil, []ibg.DataFile{second}, nil) // no removal

			return tbl, []string{"data file " + path + " has 2 live deletion vectors", second.FilePath()}
		}},
		{"DV with a wrong cardinality", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			bad := withCount(t, tbl, rawDV(t, tbl, path, 0, 2), 3)
			tbl = CommitRowDelta(t, tbl, nil, []ibg.DataFile{bad}, nil)

			return tbl, []string{bad.FilePath(), "record_count 3, bitmap holds 2 positions", `cardinality property "2"`}
		}},
		{"DV blob without the row position field (iceberg-go's DVWriter)", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			bad := rawDV(t, tbl, path, 1)
			tbl = CommitRowDelta(t, tbl, nil, []ibg.DataFile{bad}, nil)

			return tbl, []string{bad.FilePath(), "blob fields [], want [2147483645]"}
		}},
		{"DV with a wrong file_size_in_bytes", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			good, _ := WriteDVs(t, tbl, map[string][]int64{path: {1, 2}})
			bad := rebuiltDV(t, tbl, good[0], 2, good[0].FileSizeBytes()+7)
			tbl = CommitRowDelta(t, tbl, nil, []ibg.DataFile{bad}, nil)

			return tbl, []string{bad.FilePath(), fmt.Sprintf("file_size_in_bytes %d, the Puffin file has %d bytes", bad.FileSizeBytes(), good[0].FileSizeBytes())}
		}},
		{"DV position past the end of the data file", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			bad := rawDV(t, tbl, path, 1, 5)
			tbl = CommitRowDelta(t, tbl, nil, []ibg.DataFile{bad}, nil)

			return tbl, []string{"deletes position 5 of data file " + path + ", which has 5 rows"}
		}},
		{"DV left behind by a copy-on-write delete", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			tbl = DeleteRowsDV(t, tbl, map[string][]int64{path: {0}})
			tbl, err := tbl.Delete(context.Background(), ibg.AlwaysTrue{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(LiveDVs(t, tbl)[path]) == 0 {
				t.Fatal("iceberg-go v0.7.0 leaves the DV live after a copy-on-write delete of its data file; it no longer does: build the dangling DV another way")
			}

			return tbl, []string{"references data file " + path + ", which is not in the snapshot"}
		}},
		{"data file path twice", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			files := DataFiles(t, tbl)
			tbl = CommitRowDelta(t, tbl, files, nil, nil)

			return tbl, []string{"data file " + path + " is live more than once"}
		}},
		{"data file missing from storage", func(t *testing.T, tbl *table.Table, path string) (*table.Table, []string) {
			u, err := url.Parse(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(u.Path); err != nil {
				t.Fatal(err)
			}

			return tbl, []string{"data file " + path + " does not exist"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, path := fiveRowTable(t)
			tbl, wants := tc.corrupt(t, tbl, path)
			err := CheckTable(context.Background(), tbl)
			if err == nil {
				t.Fatal("CheckTable = nil, want violations")
			}
			if !errors.Is(err, ErrInvariant) {
				t.Errorf("CheckTable error does not wrap ErrInvariant: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "iceberg: check db.check: ") {
				t.Errorf("error %q does not start with the table", err)
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CheckTable error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestCheckTableUnknownColumn: a data file with a column for a field of type unknown
// (as iceberg-go's own writer writes one: INT32 annotated Null) is a violation naming
// the file and the field.
func TestCheckTableUnknownColumn(t *testing.T) {
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "u", Type: ibg.PrimitiveTypes.Unknown},
	)
	if ids := UnknownFieldIDs(sc); len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("UnknownFieldIDs = %v, want [2]", ids)
	}
	cat := NewLocalCatalog(t)
	tbl := CreateTable(t, cat.Catalog, "db.unknown", sc)
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(`[{"id": 1, "u": null}, {"id": 2, "u": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	tbl = AppendRecords(t, tbl, rec)
	files := DataFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("data files = %d, want 1", len(files))
	}
	err = CheckTable(context.Background(), tbl)
	if !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), "data file "+files[0].FilePath()+" has a column for field 2, of type unknown") {
		t.Fatalf("CheckTable = %v, want the violation of data file %s and field 2", err, files[0].FilePath())
	}
}
