package icebergtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// ErrInvariant is wrapped by every violation [CheckTable] reports.
var ErrInvariant = errors.New("table invariant violated")

// Snapshot summary keys that CheckTable recomputes from the manifests.
const (
	SummaryTotalRecords         = "total-records"
	SummaryTotalDataFiles       = "total-data-files"
	SummaryTotalDeleteFiles     = "total-delete-files"
	SummaryTotalPositionDeletes = "total-position-deletes"
	SummaryTotalEqualityDeletes = "total-equality-deletes"
)

// RowPositionFieldID is the field id of the row position metadata column
// (_pos, 2147483645), which a deletion vector blob lists in its Puffin
// metadata's fields as Iceberg Java writes it.
const RowPositionFieldID = 2147483645

// Puffin blob properties of deletion-vector-v1 blobs (Iceberg spec).
const (
	blobPropReferencedDataFile = "referenced-data-file"
	blobPropCardinality        = "cardinality"
)

// RequireValid fails the test unless [CheckTable] finds tbl valid.
func RequireValid(t testing.TB, tbl *table.Table) {
	t.Helper()

	if err := CheckTable(context.Background(), tbl); err != nil {
		t.Fatal(err)
	}
}

// checker collects violations of one table.
type checker struct {
	name string
	errs []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("iceberg: check %s: %w: %s", c.name, ErrInvariant, fmt.Sprintf(format, args...)))
}

// CheckTable checks the current snapshot of tbl against the invariants of
// the Iceberg spec that icebeam's writers must keep, and returns every
// violation at once (joined; each wraps [ErrInvariant] and names the file),
// or nil:
//
//   - no data file path is live twice;
//   - deletion vectors only on format-version 3 or later;
//   - at most one live deletion vector per data file, across all delete
//     manifests;
//   - each deletion vector references a data file of the snapshot; its
//     content offset and size point at a deletion-vector-v1 blob of its
//     Puffin file whose referenced-data-file property is that data file,
//     with snapshot-id and sequence-number -1, fields [RowPositionFieldID]
//     and no compression-codec; the Puffin file's size is the delete file's
//     file_size_in_bytes;
//     its record_count equals the blob's cardinality property and the
//     cardinality of the decoded bitmap; no position is at or past the data
//     file's record count;
//   - on format-version 3, no position delete file for a data file that
//     also has a deletion vector;
//   - the snapshot summary's total-records, total-data-files,
//     total-delete-files, total-position-deletes and total-equality-deletes
//     agree with the live manifest entries;
//   - the manifest list, every manifest and every live data and delete file
//     exists in the table's FileIO (with the recorded size, where the FileIO
//     reports one);
//   - no live Parquet data file has a column for a field of the current
//     schema of type unknown (writers omit it; its footer is read only when
//     the schema has such a field).
//
// Errors that prevent checking (metadata that cannot be read) are returned
// as they are, without [ErrInvariant].
func CheckTable(ctx context.Context, tbl *table.Table) error {
	c := &checker{name: tableName(tbl)}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("iceberg: check %s: %w", c.name, err)
	}
	version := tbl.Metadata().Version()

	c.checkExists(fs, snap.ManifestList, -1, "manifest list")
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return fmt.Errorf("iceberg: check %s: read manifest list: %w", c.name, err)
	}

	var dataFiles, deleteFiles []ibg.DataFile
	for _, m := range mfs {
		c.checkExists(fs, m.FilePath(), m.Length(), "manifest")
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return fmt.Errorf("iceberg: check %s: read manifest %s: %w", c.name, m.FilePath(), err)
			}
			if m.ManifestContent() == ibg.ManifestContentData {
				dataFiles = append(dataFiles, e.DataFile())
			} else {
				deleteFiles = append(deleteFiles, e.DataFile())
			}
		}
	}

	// Data files: unique paths, present in storage.
	byPath := map[string]ibg.DataFile{}
	counted := map[string]int{}
	var totalRecords int64
	var unique []ibg.DataFile
	for _, df := range dataFiles {
		totalRecords += df.Count()
		counted[df.FilePath()]++
		if counted[df.FilePath()] == 2 {
			c.fail("data file %s is live more than once", df.FilePath())
		}
		if _, ok := byPath[df.FilePath()]; !ok {
			byPath[df.FilePath()] = df
			unique = append(unique, df)
			c.checkExists(fs, df.FilePath(), df.FileSizeBytes(), "data file")
		}
	}
	c.checkUnknownColumns(fs, tbl.Schema(), unique)

	// Delete files.
	dvsByRef := map[string][]ibg.DataFile{}
	posByRef := map[string][]ibg.DataFile{}
	var totalPos, totalEq int64
	seenDelete := map[string]bool{}
	puffins := map[string]*puffinFile{}
	for _, df := range deleteFiles {
		if !seenDelete[df.FilePath()] {
			seenDelete[df.FilePath()] = true
			c.checkExists(fs, df.FilePath(), df.FileSizeBytes(), "delete file")
		}
		switch df.ContentType() {
		case ibg.EntryContentEqDeletes:
			totalEq += df.Count()

			continue
		case ibg.EntryContentPosDeletes:
			totalPos += df.Count()
		default:
			c.fail("delete manifest holds %s file %s", df.ContentType(), df.FilePath())

			continue
		}
		if !table.IsDeletionVector(df) {
			if ref := positionDeleteTarget(df); ref != "" {
				posByRef[ref] = append(posByRef[ref], df)
			}

			continue
		}
		if version < 3 {
			c.fail("deletion vector %s on a format-version %d table", df.FilePath(), version)
		}
		ref := ""
		if r := df.ReferencedDataFile(); r != nil {
			ref = *r
		}
		if ref == "" {
			c.fail("deletion vector %s has no referenced data file", df.FilePath())

			continue
		}
		dvsByRef[ref] = append(dvsByRef[ref], df)
		data, ok := byPath[ref]
		if !ok {
			c.fail("deletion vector %s references data file %s, which is not in the snapshot", df.FilePath(), ref)
		}
		pf, ok := puffins[df.FilePath()]
		if !ok {
			pf = openPuffin(fs, df.FilePath())
			puffins[df.FilePath()] = pf
		}
		c.checkDV(pf, df, ref, data)
	}
	for _, pf := range puffins {
		pf.close()
	}

	for _, ref := range sortedKeys(dvsByRef) {
		dvs := dvsByRef[ref]
		if len(dvs) > 1 {
			paths := make([]string, len(dvs))
			for i, d := range dvs {
				paths[i] = d.FilePath()
			}
			c.fail("data file %s has %d live deletion vectors %v (at most one allowed)", ref, len(dvs), paths)
		}
		if version >= 3 {
			for _, p := range posByRef[ref] {
				c.fail("data file %s has position delete file %s next to deletion vector %s", ref, p.FilePath(), dvs[0].FilePath())
			}
		}
	}

	if snap.Summary != nil {
		want := map[string]int64{
			SummaryTotalRecords:         totalRecords,
			SummaryTotalDataFiles:       int64(len(dataFiles)),
			SummaryTotalDeleteFiles:     int64(len(deleteFiles)),
			SummaryTotalPositionDeletes: totalPos,
			SummaryTotalEqualityDeletes: totalEq,
		}
		for _, key := range sortedKeys(want) {
			s, ok := snap.Summary.Properties[key]
			if !ok {
				continue
			}
			got, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				c.fail("snapshot %d summary %s=%q is not a number", snap.SnapshotID, key, s)

				continue
			}
			if got != want[key] {
				c.fail("snapshot %d summary %s=%d, manifests give %d", snap.SnapshotID, key, got, want[key])
			}
		}
	}

	return errors.Join(c.errs...)
}

// positionDeleteTarget returns the one data file a (Parquet) position
// delete file applies to, from referenced_data_file or from equal
// file_path bounds, or "" when it may apply to several.
func positionDeleteTarget(df ibg.DataFile) string {
	if r := df.ReferencedDataFile(); r != nil && *r != "" {
		return *r
	}
	lo, hi := df.LowerBoundValues()[posDeleteFilePathID], df.UpperBoundValues()[posDeleteFilePathID]
	if lo != nil && string(lo) == string(hi) {
		return string(lo)
	}

	return ""
}

// checkExists reports path missing from fs, or (size >= 0) of another size.
func (c *checker) checkExists(fs iceio.IO, path string, size int64, what string) {
	if path == "" {
		return
	}
	f, err := fs.Open(path)
	if err != nil {
		c.fail("%s %s does not exist in the file IO: %v", what, path, err)

		return
	}
	defer f.Close()
	if size < 0 {
		return
	}
	if st, err := f.Stat(); err == nil && st.Size() != size {
		c.fail("%s %s has %d bytes, metadata says %d", what, path, st.Size(), size)
	}
}

// puffinFile is an opened Puffin file, or the error opening it.
type puffinFile struct {
	f    iceio.File
	r    *puffin.Reader
	size int64 // the file's length, as the reader found its footer
	err  error
}

func openPuffin(fs iceio.IO, path string) *puffinFile {
	f, err := fs.Open(path)
	if err != nil {
		return &puffinFile{err: err}
	}
	r, err := puffin.NewReader(f)
	if err != nil {
		_ = f.Close()

		return &puffinFile{err: err}
	}

	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()

		return &puffinFile{err: err}
	}

	return &puffinFile{f: f, r: r, size: size}
}

func (p *puffinFile) close() {
	if p.f != nil {
		_ = p.f.Close()
	}
}

// checkDV checks one deletion vector df referencing ref (data, nil when
// not in the snapshot) against its Puffin blob.
func (c *checker) checkDV(pf *puffinFile, df ibg.DataFile, ref string, data ibg.DataFile) {
	path := df.FilePath()
	if pf.err != nil {
		c.fail("deletion vector %s: cannot read Puffin file: %v", path, pf.err)

		return
	}
	if df.FileSizeBytes() != pf.size {
		c.fail("deletion vector %s for %s: file_size_in_bytes %d, the Puffin file has %d bytes", path, ref, df.FileSizeBytes(), pf.size)
	}
	off, size := df.ContentOffset(), df.ContentSizeInBytes()
	if off == nil || size == nil {
		c.fail("deletion vector %s for %s has no content offset or size", path, ref)

		return
	}
	var blob *puffin.BlobMetadata
	for _, b := range pf.r.Blobs() {
		if b.Offset == *off && b.Length == *size {
			blob = &b

			break
		}
	}
	if blob == nil {
		c.fail("deletion vector %s for %s: no blob at offset %d with size %d", path, ref, *off, *size)

		return
	}
	if blob.Type != puffin.BlobTypeDeletionVector {
		c.fail("deletion vector %s for %s: blob at offset %d has type %q, want %q", path, ref, *off, blob.Type, puffin.BlobTypeDeletionVector)

		return
	}
	// The metadata Iceberg Java's BaseDVFileWriter writes: snapshot-id and
	// sequence-number -1 (the spec requires them), fields [2147483645] (the row
	// position column; the spec also allows none, icebeam writes Java's), and no
	// compression-codec (deletion-vector-v1 blobs are never compressed).
	if blob.SnapshotID != -1 || blob.SequenceNumber != -1 {
		c.fail("deletion vector %s for %s: blob snapshot-id %d and sequence-number %d, want -1 and -1",
			path, ref, blob.SnapshotID, blob.SequenceNumber)
	}
	if len(blob.Fields) != 1 || blob.Fields[0] != RowPositionFieldID {
		c.fail("deletion vector %s for %s: blob fields %v, want [%d] (the row position column)", path, ref, blob.Fields, RowPositionFieldID)
	}
	if blob.CompressionCodec != nil {
		c.fail("deletion vector %s for %s: blob has compression-codec %q, want none", path, ref, *blob.CompressionCodec)
	}
	if got := blob.Properties[blobPropReferencedDataFile]; got != ref {
		c.fail("deletion vector %s: blob at offset %d references %q, manifest says %s", path, *off, got, ref)
	}
	if s, ok := blob.Properties[blobPropCardinality]; !ok {
		c.fail("deletion vector %s for %s: blob has no %s property", path, ref, blobPropCardinality)
	} else if n, err := strconv.ParseInt(s, 10, 64); err != nil || n != df.Count() {
		c.fail("deletion vector %s for %s: record_count %d, blob cardinality property %q", path, ref, df.Count(), s)
	}
	buf := make([]byte, *size)
	if _, err := pf.r.ReadAt(buf, *off); err != nil {
		c.fail("deletion vector %s for %s: read blob: %v", path, ref, err)

		return
	}
	bm, err := dv.DeserializeDV(buf, -1)
	if err != nil {
		c.fail("deletion vector %s for %s: decode blob: %v", path, ref, err)

		return
	}
	if n := bm.Cardinality(); n != df.Count() {
		c.fail("deletion vector %s for %s: record_count %d, bitmap holds %d positions", path, ref, df.Count(), n)
	}
	if data == nil {
		return
	}
	var maxPos int64 = -1
	for p := range bm.Positions() {
		maxPos = max(maxPos, int64(p))
	}
	if maxPos >= data.Count() {
		c.fail("deletion vector %s deletes position %d of data file %s, which has %d rows", path, maxPos, ref, data.Count())
	}
}
