package keyblob

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
)

// IndexProperty is the table property naming the table's key index file: a
// Puffin file of key index blobs, one a data file. Table properties are free-form
// and every engine ignores a key it does not know; the table metadata's
// statistics list would be the natural home, but PyIceberg 0.12 refuses to load a
// table whose statistics list a blob type other than the two standard ones.
const IndexProperty = "icebeam.key-index-file"

// Properties of a key index blob in the Puffin footer.
const (
	// PropDataFile is the path of the data file the blob indexes.
	PropDataFile = "data-file"
	// PropRows is the data file's record count when it was indexed.
	PropRows = "rows"
)

// Ref locates the key index blob of a data file.
type Ref struct {
	// File is the key index file; Offset and Length the blob in it.
	File           string
	Offset, Length int64
	// Rows is the record count of the indexed data file.
	Rows int64
}

// Refs returns the key index blobs of key column field in the key index file
// at path (IndexProperty; none when empty), by data file path, reading the file's
// Puffin footer.
func Refs(fs iceio.IO, path string, field int) (map[string]Ref, error) {
	if path == "" {
		return nil, nil
	}
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pr, err := puffin.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("key index file %s: %w", path, err)
	}
	out := map[string]Ref{}
	for _, b := range pr.Blobs() {
		if b.Type != BlobType || len(b.Fields) != 1 || int(b.Fields[0]) != field || b.CompressionCodec != nil {
			continue
		}
		rows, err := strconv.ParseInt(b.Properties[PropRows], 10, 64)
		if d := b.Properties[PropDataFile]; d != "" && err == nil {
			out[d] = Ref{File: path, Offset: b.Offset, Length: b.Length, Rows: rows}
		}
	}
	return out, nil
}

// ReadBytes reads the blob r locates.
func ReadBytes(fs iceio.IO, r Ref) ([]byte, error) {
	f, err := fs.Open(r.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, r.Length)
	if _, err := f.ReadAt(b, r.Offset); err != nil && err != io.EOF {
		return nil, fmt.Errorf("keyblob: read %s: %w", r.File, err)
	}
	return b, nil
}

// Read reads and opens the blob r locates, of a data file of rows records.
func Read(fs iceio.IO, r Ref, rows int64) (*Index, error) {
	if r.Rows != rows {
		return nil, fmt.Errorf("keyblob: %s indexes %d rows, the data file has %d", r.File, r.Rows, rows)
	}
	b, err := ReadBytes(fs, r)
	if err != nil {
		return nil, err
	}
	x, err := Open(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.File, err)
	}
	if x.Rows() != rows {
		return nil, fmt.Errorf("keyblob: %s: blob of %d rows, the data file has %d", r.File, x.Rows(), rows)
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
// snapID (sequence number seq), as a key index file at path.
func Write(fs iceio.WriteFileIO, path string, snapID, seq int64, field int, blobs []Blob) error {
	var buf bytes.Buffer
	pw, err := puffin.NewWriter(&buf)
	if err != nil {
		return err
	}
	for _, b := range blobs {
		if _, err := pw.AddBlob(puffin.BlobMetadataInput{
			Type: BlobType, SnapshotID: snapID, SequenceNumber: seq, Fields: []int32{int32(field)},
			Properties: map[string]string{PropDataFile: b.DataFile, PropRows: strconv.FormatInt(b.Rows, 10)},
		}, b.Data); err != nil {
			return fmt.Errorf("key index of %s: %w", b.DataFile, err)
		}
	}
	if err := pw.Finish(); err != nil {
		return err
	}
	if err := fs.WriteFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
