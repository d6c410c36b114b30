package datafile

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Options tunes how a Writer writes Parquet files.
type Options struct {
	// TargetFileSizeBytes overrides the table's write.target-file-size-bytes when > 0.
	TargetFileSizeBytes int64
	// WriteProperties override the table's write properties for this write only
	// (write.parquet.compression-codec, write.parquet.row-group-limit,
	// write.target-file-size-bytes, write.metadata.metrics.*, ...). They are never
	// committed to the table.
	WriteProperties map[string]string
	// WriteUUID, when set, names the files of this write (otherwise a random UUID).
	WriteUUID *uuid.UUID
}

// writerBatchBuffer bounds the batches table.WriteRecords queues per open file, and so
// how far a producer can run ahead of the Parquet encoding.
const writerBatchBuffer = 4

// Writer writes record batches of one table to new Parquet data files as they
// come: table.WriteRecords runs in a goroutine fed one batch at a time, so encoding
// overlaps with building the next batch, and files roll at the target file size.
// Close waits for the goroutine, which never outlives it. A Writer is not safe for
// concurrent use.
type Writer struct {
	name    string
	batches chan arrow.RecordBatch
	done    chan struct{}
	files   []ibg.DataFile
	err     error
	closed  bool
}

// NewWriter starts a writer of batches of schema sc to data files of tbl, with
// opts. When sc has the _row_id column (LineageSchema), the files store it.
func NewWriter(ctx context.Context, tbl *table.Table, sc *arrow.Schema, opts Options) (*Writer, error) {
	name := strings.Join(tbl.Identifier(), ".")
	if err := checkVariantShredding(tbl, opts.WriteProperties); err != nil {
		return nil, config.WrapOp("write", name, err)
	}
	target, err := FileTable(tbl, opts.WriteProperties)
	if err != nil {
		return nil, config.WrapOp("write", name, err)
	}
	wopts := []table.WriteRecordOption{table.WithRecordBatchBufferSize(writerBatchBuffer)}
	if opts.TargetFileSizeBytes > 0 {
		wopts = append(wopts, table.WithTargetFileSize(opts.TargetFileSizeBytes))
	}
	if opts.WriteUUID != nil {
		wopts = append(wopts, table.WithWriteUUID(*opts.WriteUUID))
	}
	if len(sc.FieldIndices(ibg.RowIDColumnName)) > 0 {
		// Batches of LineageSchema: merge-on-read updates keep their row's _row_id.
		wopts = append(wopts, table.WithPreserveRowLineage(LineageSchema(target.Schema())))
	}
	w := &Writer{name: name, batches: make(chan arrow.RecordBatch, 1), done: make(chan struct{})}
	recs := iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) {
		for b := range w.batches {
			if !yield(b, nil) {
				return
			}
		}
	})
	go func() {
		defer close(w.done)
		for df, err := range table.WriteRecords(ctx, target, sc, recs, wopts...) {
			if err != nil {
				w.err = config.WrapOp("write", name, err)
				return
			}
			w.files = append(w.files, df)
		}
	}()
	return w, nil
}

// Write hands b to the writer, which releases it once written. After a failure of the
// writer, Write releases b and returns the failure (Close returns it too).
func (w *Writer) Write(b arrow.RecordBatch) error {
	select {
	case <-w.done:
		b.Release()
		return w.failure()
	default:
	}
	select {
	case w.batches <- b:
		return nil
	case <-w.done:
		b.Release()
		return w.failure()
	}
}

// failure is the writer's error once it has stopped (done is closed).
func (w *Writer) failure() error {
	if w.err != nil {
		return w.err
	}
	return config.OpErrorf("write", w.name, "file writer stopped early")
}

// Close ends the input, waits for the files and returns them.
func (w *Writer) Close() ([]ibg.DataFile, error) {
	if !w.closed {
		w.closed = true
		close(w.batches)
	}
	<-w.done
	for b := range w.batches { // not consumed after a failure
		b.Release()
	}
	return w.files, w.err
}

// shredVariantsKey is iceberg-go's table (and write) property that shreds the
// top-level variant columns of the Parquet files it writes.
const shredVariantsKey = "write.parquet.shred-variants"

// checkVariantShredding refuses, wrapping ErrUnsupported, a write that would shred
// variant columns: arrow-go v18.8.0's shredding builder (used by iceberg-go v0.7.0)
// writes an object lacking a field shredded as an array as if the field held a
// one-element array of a missing value, so it reads back changed, and fails the write
// on a value that is not an object (a variant null included) in a column shredded
// as objects with an array field. write_properties override the table's property.
func checkVariantShredding(tbl *table.Table, writeProps map[string]string) error {
	v, ok := writeProps[shredVariantsKey]
	if !ok {
		v = tbl.Properties()[shredVariantsKey]
	}
	if on, _ := strconv.ParseBool(v); !on {
		return nil
	}
	for _, f := range tbl.Schema().Fields() {
		if _, ok := f.Type.(ibg.VariantType); ok {
			return fmt.Errorf("%w: %s=true with variant column %q: the variant shredding of arrow-go v18.8.0 writes wrong data "+
				"(an object without a field shredded as an array reads back with a one-element array) or fails "+
				"(a value other than an object in a column shredded as objects); unset the table property, or set write_properties %s: false",
				config.ErrUnsupported, shredVariantsKey, f.Name, shredVariantsKey)
		}
	}
	return nil
}

// Encoded is a DataFile in a form that crosses workers: the Avro manifest-entry
// encoding of iceberg-go's codec package plus what the receiver needs to decode it.
type Encoded struct {
	// Data is codec.EncodeDataFile's output.
	Data []byte
	// SpecID is the partition spec the file was written with.
	SpecID int
	// SchemaID is the table schema the file was encoded with.
	SchemaID int
	// FormatVersion is the table's format version at encoding.
	FormatVersion int
	// Path is the file's location (for logs and deduplication without decoding).
	Path string
	// Rows is the file's record count.
	Rows int64
}

// Encode encodes files of the table described by meta (whose current schema
// they were written with).
func Encode(meta table.Metadata, files []ibg.DataFile) ([]Encoded, error) {
	sc := meta.CurrentSchema()
	out := make([]Encoded, 0, len(files))
	for _, f := range files {
		spec := meta.PartitionSpecByID(int(f.SpecID()))
		if spec == nil {
			return nil, fmt.Errorf("encode data file %s: unknown partition spec %d", f.FilePath(), f.SpecID())
		}
		b, err := codec.EncodeDataFile(f, *spec, sc, meta.Version())
		if err != nil {
			return nil, err
		}
		out = append(out, Encoded{Data: b, SpecID: spec.ID(), SchemaID: sc.ID,
			FormatVersion: meta.Version(), Path: f.FilePath(), Rows: f.Count()})
	}
	return out, nil
}

// Decode decodes files encoded by Encode against meta, which must
// still hold their partition spec and schema and have the same format version.
func Decode(meta table.Metadata, enc []Encoded) ([]ibg.DataFile, error) {
	schemas := make(map[int]*ibg.Schema)
	for _, s := range meta.Schemas() {
		schemas[s.ID] = s
	}
	out := make([]ibg.DataFile, 0, len(enc))
	for _, e := range enc {
		if e.FormatVersion != meta.Version() {
			return nil, fmt.Errorf("decode data file %s: written for format version %d, table is version %d",
				e.Path, e.FormatVersion, meta.Version())
		}
		spec := meta.PartitionSpecByID(e.SpecID)
		if spec == nil {
			return nil, fmt.Errorf("decode data file %s: table has no partition spec %d", e.Path, e.SpecID)
		}
		sc, ok := schemas[e.SchemaID]
		if !ok {
			return nil, fmt.Errorf("decode data file %s: table has no schema %d", e.Path, e.SchemaID)
		}
		df, err := codec.DecodeDataFile(e.Data, *spec, sc, e.FormatVersion)
		if err != nil {
			return nil, err
		}
		out = append(out, df)
	}
	return out, nil
}

// String returns the file's path and row count.
func (e Encoded) String() string {
	return e.Path + " (" + strconv.FormatInt(e.Rows, 10) + " rows)"
}

// LineageSchema returns sc with the _row_id column (iceberg-go's row lineage
// schema without _last_updated_sequence_number: rows written without it take the
// data file's sequence number, which is what an updated row needs).
func LineageSchema(sc *ibg.Schema) *ibg.Schema {
	return ibg.SchemaWithRowLineageColumns(sc, true, false)
}
