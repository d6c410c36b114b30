package icebergtest

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// DefaultFormatVersion is the format version of tables made by
// [CreateTable] unless [WithFormatVersion] says otherwise.
const DefaultFormatVersion = 3

// TableOption configures [CreateTable].
type TableOption func(*tableConfig)

type tableConfig struct {
	spec          *ibg.PartitionSpec
	props         ibg.Properties
	formatVersion int
	location      string
}

// WithPartitionSpec partitions the new table by spec. Source IDs refer to
// the schema given to CreateTable.
func WithPartitionSpec(spec ibg.PartitionSpec) TableOption {
	return func(c *tableConfig) { c.spec = &spec }
}

// WithProperties adds table properties to the new table.
func WithProperties(props map[string]string) TableOption {
	return func(c *tableConfig) {
		maps.Copy(c.props, props)
	}
}

// WithFormatVersion sets the table's format version (1, 2 or 3).
func WithFormatVersion(v int) TableOption {
	return func(c *tableConfig) { c.formatVersion = v }
}

// WithLocation sets the table location instead of the warehouse default.
func WithLocation(loc string) TableOption {
	return func(c *tableConfig) { c.location = loc }
}

// CreateTable creates the table ident ("ns.name"; the namespace is created
// when missing) with schema sc in cat. The format version is
// [DefaultFormatVersion] unless an option changes it.
func CreateTable(t testing.TB, cat catalog.Catalog, ident string, sc *ibg.Schema, opts ...TableOption) *table.Table {
	t.Helper()

	cfg := tableConfig{props: ibg.Properties{}, formatVersion: DefaultFormatVersion}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.formatVersion < 1 || cfg.formatVersion > 3 {
		t.Fatalf("iceberg: create table %s: format version %d not in [1, 3]", ident, cfg.formatVersion)
	}
	cfg.props[table.PropertyFormatVersion] = strconv.Itoa(cfg.formatVersion)

	ctx := context.Background()
	id := catalog.ToIdentifier(ident)
	if err := ensureNamespace(ctx, cat, catalog.NamespaceFromIdent(id)); err != nil {
		t.Fatalf("iceberg: create table %s: namespace: %v", ident, err)
	}
	copts := []catalog.CreateTableOpt{catalog.WithProperties(cfg.props)}
	if cfg.spec != nil {
		copts = append(copts, catalog.WithPartitionSpec(cfg.spec))
	}
	if cfg.location != "" {
		copts = append(copts, catalog.WithLocation(cfg.location))
	}
	tbl, err := cat.CreateTable(ctx, id, sc, copts...)
	if err != nil {
		t.Fatalf("iceberg: create table %s: %v", ident, err)
	}

	return tbl
}

// tableName is the table's identifier joined with dots, for messages.
func tableName(tbl *table.Table) string {
	id := tbl.Identifier()
	s := ""
	for i, p := range id {
		if i > 0 {
			s += "."
		}
		s += p
	}

	return s
}

// writeFS returns the table's FileIO, which must be writable.
func writeFS(ctx context.Context, tbl *table.Table) (iceio.WriteFileIO, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file IO %T is not writable", fs)
	}

	return wfs, nil
}

// WriteDataFiles writes recs to Parquet data files of tbl with
// table.WriteRecords without committing them. All batches must share one
// schema. The caller keeps its references to recs.
func WriteDataFiles(t testing.TB, tbl *table.Table, recs ...arrow.RecordBatch) []ibg.DataFile {
	t.Helper()

	files, err := writeDataFiles(context.Background(), tbl, recs)
	if err != nil {
		t.Fatalf("iceberg: write %s: %v", tableName(tbl), err)
	}

	return files
}

func writeDataFiles(ctx context.Context, tbl *table.Table, recs []arrow.RecordBatch) ([]ibg.DataFile, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	sc := recs[0].Schema()
	for i, r := range recs[1:] {
		if !r.Schema().Equal(sc) {
			return nil, fmt.Errorf("record batch %d has schema %s, batch 0 has %s", i+1, r.Schema(), sc)
		}
	}
	var seq iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain() // WriteRecords releases what it consumes.
			if !yield(r, nil) {
				return
			}
		}
	}
	var files []ibg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, seq) {
		if err != nil {
			return nil, err
		}
		files = append(files, df)
	}

	return files, nil
}

// AppendRecords writes recs to data files with table.WriteRecords and
// commits them in one RowDelta (RowDelta.AddRows assigns first_row_id on
// format-version 3, which Transaction.AddDataFiles refuses to do). It
// returns the table after the commit. The caller keeps its references to
// recs.
func AppendRecords(t testing.TB, tbl *table.Table, recs ...arrow.RecordBatch) *table.Table {
	t.Helper()

	out, err := AppendRecordsContext(context.Background(), tbl, recs...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CommitRowDelta commits one RowDelta on tbl adding data files, adding
// delete files and removing (replaced) deletion vectors, without any of the
// checks icebeam's committer adds. Tests use it to build tables, valid or
// not. It returns the table after the commit.
func CommitRowDelta(t testing.TB, tbl *table.Table, data, deletes, removed []ibg.DataFile) *table.Table {
	t.Helper()

	out, err := commitRowDelta(context.Background(), tbl, data, deletes, removed)
	if err != nil {
		t.Fatalf("iceberg: commit row delta %s: %v", tableName(tbl), err)
	}

	return out
}

func commitRowDelta(ctx context.Context, tbl *table.Table, data, deletes, removed []ibg.DataFile) (*table.Table, error) {
	tx := tbl.NewTransaction()
	rd := tx.NewRowDelta(nil).AddRows(data...).AddDeletes(deletes...).RemoveDeletes(removed...)
	if err := rd.Commit(ctx); err != nil {
		return nil, err
	}

	return tx.Commit(ctx)
}

// entries yields the live manifest entries of the current snapshot whose
// manifests have the given content.
func entries(ctx context.Context, tbl *table.Table, content ibg.ManifestContent) iter.Seq2[ibg.ManifestEntry, error] {
	return func(yield func(ibg.ManifestEntry, error) bool) {
		snap := tbl.CurrentSnapshot()
		if snap == nil {
			return
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			yield(nil, err)

			return
		}
		mfs, err := snap.Manifests(fs)
		if err != nil {
			yield(nil, err)

			return
		}
		for _, m := range mfs {
			if m.ManifestContent() != content {
				continue
			}
			for e, err := range m.Entries(fs, true) {
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
	}
}

// DataFiles returns the live data files of tbl's current snapshot.
func DataFiles(t testing.TB, tbl *table.Table) []ibg.DataFile {
	t.Helper()

	out, err := DataFilesContext(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// DeleteFiles returns the live delete files (deletion vectors, position and
// equality delete files) of tbl's current snapshot.
func DeleteFiles(t testing.TB, tbl *table.Table) []ibg.DataFile {
	t.Helper()

	var out []ibg.DataFile
	for e, err := range entries(context.Background(), tbl, ibg.ManifestContentDeletes) {
		if err != nil {
			t.Fatalf("iceberg: list delete files %s: %v", tableName(tbl), err)
		}
		out = append(out, e.DataFile())
	}

	return out
}

// LiveDVs returns the live deletion vectors of tbl's current snapshot by
// the path of the data file they reference. A valid table has at most one
// per data file.
func LiveDVs(t testing.TB, tbl *table.Table) map[string][]ibg.DataFile {
	t.Helper()

	out, err := liveDVs(context.Background(), tbl)
	if err != nil {
		t.Fatalf("iceberg: list deletion vectors %s: %v", tableName(tbl), err)
	}

	return out
}

func liveDVs(ctx context.Context, tbl *table.Table) (map[string][]ibg.DataFile, error) {
	out := map[string][]ibg.DataFile{}
	for e, err := range entries(ctx, tbl, ibg.ManifestContentDeletes) {
		if err != nil {
			return nil, err
		}
		df := e.DataFile()
		if !table.IsDeletionVector(df) {
			continue
		}
		ref := ""
		if r := df.ReferencedDataFile(); r != nil {
			ref = *r
		}
		out[ref] = append(out[ref], df)
	}

	return out, nil
}

// ReadAll reads tbl's current snapshot through iceberg-go's own scan, which
// applies deletion vectors, position and equality deletes: the reference
// icebeam's reads are compared against. A nil filter reads every row; no
// cols reads every column.
func ReadAll(t testing.TB, tbl *table.Table, filter ibg.BooleanExpression, cols ...string) arrow.Table {
	t.Helper()

	opts := []table.ScanOption{}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	if len(cols) > 0 {
		opts = append(opts, table.WithSelectedFields(cols...))
	}
	out, err := tbl.Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("iceberg: read %s: %v", tableName(tbl), err)
	}
	t.Cleanup(out.Release)

	return out
}
