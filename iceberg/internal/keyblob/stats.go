package keyblob

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"
)

// Properties of a key index blob, in its Puffin footer and in the table
// metadata's blob metadata (which holds no offset: PropOffset and PropLength say
// where the blob is, so a reader needs no read of the Puffin footer).
const (
	// PropDataFile is the path of the data file the blob indexes.
	PropDataFile = "data-file"
	// PropRows is the data file's record count when it was indexed.
	PropRows = "rows"
	// PropOffset and PropLength locate the blob in its Puffin file.
	PropOffset = "offset"
	PropLength = "length"
)

// Ref locates the key index blob of a data file.
type Ref struct {
	// Stats is the statistics (Puffin) file; Offset and Length the blob in it.
	Stats          string
	Offset, Length int64
	// Rows is the record count of the indexed data file.
	Rows int64
}

// Refs returns the key index blobs of key column field that meta's statistics
// files hold, by data file path. A file indexed twice (by two runs) maps to
// either: they index the same immutable file.
func Refs(meta table.Metadata, field int) map[string]Ref {
	var out map[string]Ref
	for sf := range meta.Statistics() {
		for _, b := range sf.BlobMetadata {
			if b.Type != BlobType || len(b.Fields) != 1 || int(b.Fields[0]) != field {
				continue
			}
			path := b.Properties[PropDataFile]
			rows, err1 := strconv.ParseInt(b.Properties[PropRows], 10, 64)
			off, err2 := strconv.ParseInt(b.Properties[PropOffset], 10, 64)
			n, err3 := strconv.ParseInt(b.Properties[PropLength], 10, 64)
			if path == "" || err1 != nil || err2 != nil || err3 != nil || off < 0 || n <= 0 {
				continue // not one of ours as written: ignored, the key column is read
			}
			if out == nil {
				out = map[string]Ref{}
			}
			out[path] = Ref{Stats: sf.StatisticsPath, Offset: off, Length: n, Rows: rows}
		}
	}
	return out
}

// Read reads and opens the blob r locates, of a data file of rows records.
func Read(fs iceio.IO, r Ref, rows int64) (*Index, error) {
	if r.Rows != rows {
		return nil, fmt.Errorf("keyblob: %s indexes %d rows, the data file has %d", r.Stats, r.Rows, rows)
	}
	f, err := fs.Open(r.Stats)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, r.Length)
	if _, err := f.ReadAt(b, r.Offset); err != nil && err != io.EOF {
		return nil, fmt.Errorf("keyblob: read %s: %w", r.Stats, err)
	}
	x, err := Open(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Stats, err)
	}
	if x.Rows() != rows {
		return nil, fmt.Errorf("keyblob: %s: blob of %d rows, the data file has %d", r.Stats, x.Rows(), rows)
	}
	return x, nil
}

// Blob is the key index of one data file, to write.
type Blob struct {
	// DataFile is the data file's path; Rows its record count.
	DataFile string
	Rows     int64
	// Data is the index (Encode).
	Data []byte
}

// Write writes blobs, key indexes of key column field computed from snapshot
// snap, as one Puffin file at path and returns its statistics file, to set on
// snap (table.NewSetStatisticsUpdate).
func Write(fs iceio.WriteFileIO, path string, snap *table.Snapshot, field int, blobs []Blob) (table.StatisticsFile, error) {
	var buf bytes.Buffer
	pw, err := puffin.NewWriter(&buf)
	if err != nil {
		return table.StatisticsFile{}, err
	}
	sf := table.StatisticsFile{SnapshotID: snap.SnapshotID, StatisticsPath: path}
	end := int64(puffin.MagicSize)
	for _, b := range blobs {
		props := map[string]string{PropDataFile: b.DataFile, PropRows: strconv.FormatInt(b.Rows, 10)}
		m, err := pw.AddBlob(puffin.BlobMetadataInput{
			Type: BlobType, SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
			Fields: []int32{int32(field)}, Properties: props,
		}, b.Data)
		if err != nil {
			return table.StatisticsFile{}, fmt.Errorf("key index of %s: %w", b.DataFile, err)
		}
		props[PropOffset], props[PropLength] = strconv.FormatInt(m.Offset, 10), strconv.FormatInt(m.Length, 10)
		end = m.Offset + m.Length
		sf.BlobMetadata = append(sf.BlobMetadata, table.BlobMetadata{
			Type: BlobType, SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber,
			Fields: []int32{int32(field)}, Properties: props,
		})
	}
	if err := pw.Finish(); err != nil {
		return table.StatisticsFile{}, err
	}
	sf.FileSizeInBytes = int64(buf.Len())
	sf.FileFooterSizeInBytes = sf.FileSizeInBytes - end
	if err := fs.WriteFile(path, buf.Bytes()); err != nil {
		return table.StatisticsFile{}, fmt.Errorf("write %s: %w", path, err)
	}
	return sf, nil
}
