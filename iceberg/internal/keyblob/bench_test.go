package keyblob

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var (
	benchRows  = flag.Int("keyblob_rows", 100_000, "rows of BenchmarkKeyblob's data file (issue 45's figure: 50000000)")
	benchBlock = flag.Int("keyblob_block", DefaultBlockSize, "block size of BenchmarkKeyblob's index")
)

// BenchmarkKeyblob measures, for each key layout of one data file: Encode;
// Open plus Lookup of 10,000 and 100,000 random present keys (a cold worker:
// nothing cached); All; and for comparison the decode of the same keys from
// Parquet (PLAIN, zstd, 1 MB pages), which a worker does without the index.
func BenchmarkKeyblob(b *testing.B) {
	n := *benchRows
	r := rand.New(rand.NewPCG(45, 1))
	dense := make([]int64, n)
	gaps := make([]int64, n)
	sparse := make([]int64, n)
	k := int64(0)
	for i := range n {
		dense[i] = int64(i)
		k += 1 + r.Int64N(5) // gaps 1..5, average 3
		gaps[i] = k
		sparse[i] = int64(r.Uint64())
	}
	shuffled := slices.Clone(dense)
	r.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, l := range []struct {
		name string
		keys []int64
	}{{"a_dense", dense}, {"b_gaps", gaps}, {"c_shuffled", shuffled}, {"d_sparse", sparse}} {
		b.Run(l.name, func(b *testing.B) { benchLayout(b, l.keys, r) })
	}
}

func benchLayout(b *testing.B, keys []int64, r *rand.Rand) {
	n := len(keys)
	blob := encode(keys, *benchBlock)
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encode(keys, *benchBlock)
		}
		b.ReportMetric(float64(len(blob)), "bytes")
		b.ReportMetric(float64(len(blob))*8/float64(n), "bits/row")
	})
	for _, m := range []int{10_000, 100_000} {
		probes := make([]int64, min(m, n))
		for i := range probes {
			probes[i] = keys[r.IntN(n)]
		}
		slices.Sort(probes)
		b.Run("OpenLookup"+map[int]string{10_000: "10k", 100_000: "100k"}[m], func(b *testing.B) {
			b.ReportAllocs()
			decoded := 0
			for b.Loop() {
				x, err := Open(blob)
				if err != nil {
					b.Fatal(err)
				}
				found := 0
				if err := x.Lookup(probes, func(int, int64) { found++ }); err != nil {
					b.Fatal(err)
				}
				if found < len(probes) {
					b.Fatalf("%d positions for %d probes", found, len(probes))
				}
				decoded = x.decoded
			}
			b.ReportMetric(float64(decoded), "blocks-decoded")
		})
	}
	b.Run("All", func(b *testing.B) {
		for b.Loop() {
			x, err := Open(blob)
			if err != nil {
				b.Fatal(err)
			}
			var sum int64
			if err := x.All(func(k, pos int64) { sum += k ^ pos }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParquetRead", func(b *testing.B) {
		pq := parquetKeys(b, keys)
		b.ResetTimer()
		vals := make([]int64, 64<<10)
		for b.Loop() {
			pr, err := file.NewParquetReader(bytes.NewReader(pq))
			if err != nil {
				b.Fatal(err)
			}
			read := 0
			for g := range pr.NumRowGroups() {
				cr, err := pr.RowGroup(g).Column(0)
				if err != nil {
					b.Fatal(err)
				}
				ir := cr.(*file.Int64ColumnChunkReader)
				for ir.HasNext() {
					_, got, err := ir.ReadBatch(int64(len(vals)), vals, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					read += got
				}
			}
			if read != n {
				b.Fatalf("read %d values, want %d", read, n)
			}
		}
		b.ReportMetric(float64(len(pq)), "bytes")
		b.ReportMetric(float64(len(pq))*8/float64(n), "bits/row")
	})
}

// parquetKeys returns keys as a one-column Parquet file in one row group:
// PLAIN, zstd, 1 MB pages.
func parquetKeys(b *testing.B, keys []int64) []byte {
	b.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	data := array.NewData(arrow.PrimitiveTypes.Int64, len(keys),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(keys))}, nil, 0, 0)
	defer data.Release()
	col := array.NewInt64Data(data)
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, int64(len(keys)))
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.Plain),
		parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageSize(1<<20),
		parquet.WithMaxRowGroupLength(int64(len(keys))+1)), pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
