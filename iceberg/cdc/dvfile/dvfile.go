// Package dvfile writes deletion vectors into Puffin files with the blob metadata
// Iceberg Java writes. Merge-on-read commits (iceberg/cdc) and the fixtures of
// testing/icebergtest both write through it, so that the checks of CheckTable see
// the blobs icebeam makes. It is not under an internal/ folder: testing/icebergtest
// imports it, and the examples (as users' programs) link it through iceberg/cdc.
package dvfile

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	ibg "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
)

// RowPositionFieldID is the field id of the row position metadata column (_pos:
// Integer.MAX_VALUE - 2, Iceberg Java's MetadataColumns.ROW_POSITION), the field a
// deletion vector blob lists in its Puffin metadata.
const RowPositionFieldID = math.MaxInt32 - 2

// Blob properties of deletion-vector-v1 blobs (Iceberg spec, Puffin).
const (
	PropCardinality        = "cardinality"
	PropReferencedDataFile = "referenced-data-file"
)

// Blob is one deletion vector to write.
type Blob struct {
	// DataFile is the path of the data file whose rows the DV deletes.
	DataFile string
	// Data is the serialized DV (dv.SerializeDV).
	Data []byte
	// Cardinality is the number of positions Data holds.
	Cardinality int64
	// SpecID and Partition are the data file's partition spec and partition.
	SpecID    int32
	Partition map[int]any
}

// Write writes blobs (at most one per data file) as one Puffin file at path, in
// their order, and returns their delete files in that order, to commit in a
// RowDelta. Each blob's metadata is what Iceberg Java's BaseDVFileWriter writes:
// type deletion-vector-v1, fields [RowPositionFieldID], snapshot-id and
// sequence-number -1 (inherited from the manifest entry), no compression-codec, the
// cardinality and referenced-data-file properties. iceberg-go v0.7.0's
// dv.DVWriter writes fields [] (which the spec allows too) and offers no way to set
// them; readers that follow Java, such as BigQuery's, are the safe side.
func Write(fs iceio.WriteFileIO, meta table.Metadata, path string, blobs []Blob) ([]ibg.DataFile, error) {
	var buf bytes.Buffer
	pw, err := puffin.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	metas := make([]puffin.BlobMetadata, len(blobs))
	for i, b := range blobs {
		metas[i], err = pw.AddBlob(puffin.BlobMetadataInput{
			Type: puffin.BlobTypeDeletionVector, SnapshotID: -1, SequenceNumber: -1,
			Fields: []int32{RowPositionFieldID},
			Properties: map[string]string{
				PropCardinality:        strconv.FormatInt(b.Cardinality, 10),
				PropReferencedDataFile: b.DataFile,
			},
		}, b.Data)
		if err != nil {
			return nil, fmt.Errorf("deletion vector of %s: %w", b.DataFile, err)
		}
	}
	if err := pw.Finish(); err != nil {
		return nil, err
	}
	size := int64(buf.Len())
	out := make([]ibg.DataFile, len(blobs))
	for i, b := range blobs {
		spec := meta.PartitionSpecByID(int(b.SpecID))
		if spec == nil {
			return nil, fmt.Errorf("data file %s: unknown partition spec %d", b.DataFile, b.SpecID)
		}
		bld, err := ibg.NewDataFileBuilder(*spec, ibg.EntryContentPosDeletes, path, ibg.PuffinFile,
			b.Partition, nil, nil, b.Cardinality, size)
		if err != nil {
			return nil, fmt.Errorf("deletion vector of %s: %w", b.DataFile, err)
		}
		out[i] = bld.ReferencedDataFile(b.DataFile).ContentOffset(metas[i].Offset).ContentSizeInBytes(metas[i].Length).Build()
	}
	if err := fs.WriteFile(path, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return out, nil
}

// Groups lays the DVs of one commit out in Puffin files, each file's blobs in
// strictly increasing length: the k-th blob of each length goes to the k-th file, so
// there are as many files as the most frequent length has blobs (one per commit when
// all lengths differ).
//
// The order keeps DuckDB 1.5.5 from applying one data file's DV to another. Its
// iceberg extension (duckdb-iceberg 45163a28, IcebergMultiFileList::ScanPuffinFile
// in src/core/deletes/iceberg_deletion_vector.cpp) reads a blob with
// CachingFileHandle::Read (duckdb src/storage/caching_file_system.cpp) and decodes
// buf_handle.Ptr(), the start of the cached range that served the read, not the
// blob's offset in it. Read widens a range up to the next cached one when the gap is
// no longer than the read (ShouldExpandToFillGap), so a read of blob A can cache a
// range that also holds a later blob B, whose DV DuckDB then decodes from A's bytes.
// That range must span the bytes between A and the end of B, at least B's length;
// with B longer than A the gap is longer than A's read and the range is never
// widened over B, whatever order or cache state DuckDB reads the file in. One blob
// per file would be safe too, at one file per DV. duckdb-iceberg fixed the read in
// 8b2e25f4c, after 1.5.5 (testing/interop/README.md).
func Groups(blobs []Blob) [][]Blob {
	sorted := slices.Clone(blobs)
	slices.SortStableFunc(sorted, func(a, b Blob) int { return cmp.Compare(len(a.Data), len(b.Data)) })
	var groups [][]Blob
	for i, k := 0, 0; i < len(sorted); i++ {
		if i > 0 && len(sorted[i].Data) == len(sorted[i-1].Data) {
			k++
		} else {
			k = 0
		}
		if k == len(groups) {
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], sorted[i])
	}
	return groups
}

// CheckIncreasing reports a Puffin file whose blobs are not in strictly increasing
// length (see Groups).
func CheckIncreasing(added []ibg.DataFile) error {
	for i := 1; i < len(added); i++ {
		if *added[i].ContentSizeInBytes() <= *added[i-1].ContentSizeInBytes() {
			return fmt.Errorf("puffin file %s: deletion vector of %s (%d bytes) not longer than the one before it (%d bytes)",
				added[i].FilePath(), *added[i].ReferencedDataFile(), *added[i].ContentSizeInBytes(), *added[i-1].ContentSizeInBytes())
		}
	}
	return nil
}
