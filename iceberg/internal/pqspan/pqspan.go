// Package pqspan reads one leaf column of a Parquet file straight from its pages,
// into reused buffers and without building Arrow arrays, in spans that goroutines
// read in parallel: ranges of row groups, or the pages of one large row group cut
// by its offset index. cdc reads key columns with it (the expected keys' scan,
// plain resolutions, the key index build).
package pqspan

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"golang.org/x/sync/errgroup"
)

// spanReader returns the reader of span of the file src, read by pr: pr itself,
// but for a part of a row group (pageSpans), a reader sharing pr's metadata whose
// column chunk reads fetch the span's pages only. pr reads a whole column chunk
// into memory when a page reader starts, so each part would otherwise read (from
// object storage: download) and hold the whole chunk.
func spanReader(src parquet.ReaderAtSeeker, pr *file.Reader, span Span) (*file.Reader, error) {
	if span.Bytes <= 0 {
		return pr, nil
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = span.Bytes
	// The struct hides src's Close from the reader's.
	return file.NewParquetReader(struct{ parquet.ReaderAtSeeker }{src}, file.WithReadProps(props), file.WithMetadata(pr.MetaData()))
}

// ErrNotDirect is returned by a read (Read, ReadLeaf) of a column stored as another
// physical type than the read's: the caller then reads it through Arrow.
var ErrNotDirect = errors.New("key column is not stored as the direct read's type")

// MinSpanRows is the fewest rows a span of a parallel read holds: a file of fewer
// rows is read by one goroutine. A variable for tests.
var MinSpanRows int64 = 1 << 20

// Span is a range of consecutive row groups [Lo, Hi) of a Parquet file and the
// position (Base) of its first row; when Keep is not nil, only the row groups rg
// of the range with Keep[rg] are read. When Rows > 0, the span is part of one row
// group (Hi = Lo+1): its rows [First, First+Rows), starting at a page boundary,
// whose pages are Bytes long.
type Span struct {
	Lo, Hi      int
	Base        int64
	Keep        []bool
	First, Rows int64
	Bytes       int64
}

// Spans splits the row groups of pr into at most par spans of about
// equal rows to read, none of fewer than MinSpanRows rows but when the file has
// fewer. When keep is not nil, only the row groups rg with keep[rg] are to be
// read: the spans share those rows, and a span holding none of them is left out
// (no span at all when keep holds none).
//
// When fewer row groups than par are to be read, the large ones are split at
// page boundaries of the leaf column instead (pageSpans): writers that roll row
// groups by size, as Spark and Java Iceberg do (128 MB), leave one row group of
// tens of millions of rows in a compacted file.
func Spans(pr *file.Reader, leaf, par int, keep []bool) []Span {
	n := pr.NumRowGroups()
	kept := func(rg int) bool { return keep == nil || keep[rg] }
	var total int64
	groups := 0
	for rg := range n {
		if kept(rg) {
			total += pr.MetaData().RowGroup(rg).NumRows()
			groups++
		}
	}
	if keep != nil && groups == 0 {
		return nil
	}
	if par > groups && total >= 2*MinSpanRows {
		if out := pageSpans(pr, leaf, par, keep); out != nil {
			return out
		}
	}
	par = int(min(int64(max(par, 1)), int64(max(groups, 1)), max(total/MinSpanRows, 1)))
	out := make([]Span, 0, par)
	var pos, done, start int64
	lo, reads := 0, 0
	for rg := range n {
		r := pr.MetaData().RowGroup(rg).NumRows()
		pos += r
		if kept(rg) {
			done += r
			reads++
		}
		// A span ends once the spans so far hold their share of the rows to read.
		if rg == n-1 || done*int64(par) >= total*int64(len(out)+1) {
			if reads > 0 || keep == nil {
				out = append(out, Span{Lo: lo, Hi: rg + 1, Base: start, Keep: keep})
			}
			lo, start, reads = rg+1, pos, 0
		}
	}
	return out
}

// pageSpans splits the row groups of pr to read (keep) into at most
// par spans, each row group into a share of them in proportion to its rows, of
// at least MinSpanRows rows each, cut at page boundaries of the leaf column found
// in its offset index (the Parquet page index). A row group without an offset
// index is one span: its pages cannot be found without reading them. It returns
// nil when it splits no row group.
func pageSpans(pr *file.Reader, leaf, par int, keep []bool) []Span {
	type group struct {
		rg         int
		base, rows int64
		k          int64 // spans
	}
	var groups []group
	var pos int64
	for rg := range pr.NumRowGroups() {
		rows := pr.MetaData().RowGroup(rg).NumRows()
		if keep == nil || keep[rg] {
			groups = append(groups, group{rg: rg, base: pos, rows: rows, k: 1})
		}
		pos += rows
	}
	// The spans beyond one per row group go, one at a time, to the row group
	// whose spans are the largest.
	for range par - len(groups) {
		best := -1
		for i, g := range groups {
			if g.rows/(g.k+1) >= MinSpanRows && (best < 0 || g.rows*groups[best].k > groups[best].rows*g.k) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		groups[best].k++
	}
	var out []Span
	split := false
	for _, g := range groups {
		var pages []*metadata.PageLocation
		if g.k > 1 {
			pages = pageLocations(pr, g.rg, leaf)
		}
		if len(pages) < 2 {
			out = append(out, Span{Lo: g.rg, Hi: g.rg + 1, Base: g.base, Keep: keep})
			continue
		}
		// Cut at the page whose first row is nearest each share's end.
		first, n := int64(0), len(out)
		cc, err := pr.MetaData().RowGroup(g.rg).ColumnChunk(leaf)
		if err != nil {
			return nil
		}
		// The chunk's bytes, as file.RowGroupReader finds them; the first span
		// holds the dictionary page, if any.
		at := cc.DataPageOffset()
		if d := cc.DictionaryPageOffset(); cc.HasDictionaryPage() && d > 0 && d < at {
			at = d
		}
		chunkEnd := at + cc.TotalCompressedSize()
		for i := int64(1); i <= g.k; i++ {
			end, endAt := g.rows, chunkEnd
			if i < g.k {
				target := g.rows * i / g.k
				j := sort.Search(len(pages), func(j int) bool { return pages[j].FirstRowIndex >= target })
				if j > 0 && (j == len(pages) || target-pages[j-1].FirstRowIndex < pages[j].FirstRowIndex-target) {
					j--
				}
				if j == len(pages) || pages[j].FirstRowIndex <= first {
					continue // no page boundary left in this share
				}
				end, endAt = pages[j].FirstRowIndex, pages[j].Offset
			}
			out = append(out, Span{Lo: g.rg, Hi: g.rg + 1, Base: g.base + first, First: first, Rows: end - first, Bytes: endAt - at})
			first, at = end, endAt
		}
		split = split || len(out)-n > 1
	}
	if !split {
		return nil
	}
	return out
}

// pageLocations returns the pages of the leaf column's chunk in row group rg of
// pr from its offset index, or nil when it has none.
func pageLocations(pr *file.Reader, rg, leaf int) []*metadata.PageLocation {
	idx, err := pr.GetPageIndexReader().RowGroup(rg)
	if err != nil || idx == nil {
		return nil
	}
	oidx, err := idx.GetOffsetIndex(leaf)
	if err != nil || oidx == nil {
		return nil
	}
	return oidx.GetPageLocations()
}

// Kept is the row groups of pr whose chunk of the leaf column leaf skip
// does not report, or nil (every row group) when skip is nil or reports none.
func Kept(pr *file.Reader, leaf int, skip func(*metadata.ColumnChunkMetaData) bool) []bool {
	if skip == nil {
		return nil
	}
	keep := make([]bool, pr.NumRowGroups())
	all := true
	for rg := range keep {
		cc, err := pr.MetaData().RowGroup(rg).ColumnChunk(leaf)
		keep[rg] = err != nil || !skip(cc)
		all = all && keep[rg]
	}
	if all {
		return nil
	}
	return keep
}

// Int64Batch is the BatchFunc of an INT64 column.
func Int64Batch(cr file.ColumnChunkReader, n int64, vals []int64, defs []int16) (int64, int, bool, error) {
	ir, ok := cr.(*file.Int64ColumnChunkReader)
	if !ok {
		return 0, 0, false, nil
	}
	rows, read, err := ir.ReadBatch(n, vals, defs, nil)
	return rows, read, true, err
}

// ByteArrayBatch is the BatchFunc of a BYTE_ARRAY column: one page at a time, the
// values slices of the decoded page, valid until the next call.
func ByteArrayBatch(cr file.ColumnChunkReader, n int64, vals []parquet.ByteArray, defs []int16) (int64, int, bool, error) {
	br, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return 0, 0, false, nil
	}
	// One page at a time: the values alias the page (ReadBatch copies them).
	rows, read, err := br.ReadBatchInPage(n, vals, defs, nil)
	return rows, read, true, err
}

// EachValue calls fn with each value of a batch of ReadLeaf (null values have none)
// and the position of its row.
func EachValue[T any](vals []T, defs []int16, maxDef int16, base int64, fn func(v T, pos int64)) {
	if defs == nil {
		for j, v := range vals {
			fn(v, base+int64(j))
		}
		return
	}
	k := 0
	for j, d := range defs {
		if d == maxDef {
			fn(vals[k], base+int64(j))
			k++
		}
	}
}

// ReadLeaf reads the leaf column leaf of pr, of physical type typ (else
// ErrNotDirect), in batches of reused buffers through readBatch, which reports
// false for a column chunk reader of another type: fn gets each batch's non-null
// values, in row order, with the position of the batch's first row and, when the
// column can hold nulls, its definition levels (a row holds a value where its
// level is maxDef).
//
// It reads the row groups of span only (or, for part of one row group, its rows).
func ReadLeaf[T any](ctx context.Context, pr *file.Reader, path string, leaf int, typ parquet.Type,
	readBatch BatchFunc[T], span Span, fn func(vals []T, defs []int16, maxDef int16, base int64) error) error {
	col := pr.MetaData().Schema.Column(leaf)
	if col.PhysicalType() != typ {
		return ErrNotDirect
	}
	maxDef := col.MaxDefinitionLevel()
	const batch = 1 << 16
	vals := make([]T, batch)
	var defs []int16
	if maxDef > 0 {
		defs = make([]int16, batch)
	}
	base := span.Base
	for rg := span.Lo; rg < span.Hi; rg++ {
		if span.Keep != nil && !span.Keep[rg] {
			base += pr.MetaData().RowGroup(rg).NumRows()
			continue
		}
		cr, err := pr.RowGroup(rg).Column(leaf)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		left := int64(-1) // rows left to read, -1: the whole row group
		if span.Rows > 0 {
			// Part of the row group: SeekToRow jumps to the span's first page by
			// the offset index (and reads the chunk's dictionary page, if any).
			left = span.Rows
			if span.First > 0 {
				if err := cr.SeekToRow(span.First); err != nil {
					return fmt.Errorf("read %s: row %d of row group %d: %w", path, span.First, rg, err)
				}
			}
		}
		for left != 0 && cr.HasNext() {
			if err := ctx.Err(); err != nil {
				return err
			}
			want := int64(batch)
			if left > 0 {
				want = min(want, left)
			}
			rows, n, ok, err := readBatch(cr, want, vals, defs)
			if !ok {
				return ErrNotDirect
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			if rows == 0 {
				break
			}
			var d []int16
			if defs != nil {
				d = defs[:rows]
			}
			if err := fn(vals[:n], d, maxDef, base); err != nil {
				return err
			}
			base += rows
			if left > 0 {
				left -= rows
			}
		}
	}
	return nil
}

// ChunkBytes is the stored (compressed) size of the leaf columns leaves in the row
// groups of pr to read (keep, or every one when keep is nil): what reading them
// costs.
func ChunkBytes(pr *file.Reader, leaves []int, keep []bool) int64 {
	var n int64
	for rg := range pr.NumRowGroups() {
		if keep != nil && !keep[rg] {
			continue
		}
		md := pr.MetaData().RowGroup(rg)
		for _, l := range leaves {
			if cc, err := md.ColumnChunk(l); err == nil {
				n += cc.TotalCompressedSize()
			}
		}
	}
	return n
}

// BatchFunc reads up to n rows of cr into vals and defs (as the column chunk
// readers' ReadBatch): the rows, the values read, and false when cr is not of the
// reader type it reads.
type BatchFunc[T any] func(cr file.ColumnChunkReader, n int64, vals []T, defs []int16) (rows int64, read int, ok bool, err error)

// Read reads the leaf column leaf of pr (the file src, at path), stored as typ,
// with ReadLeaf: the spans of its row groups to read (keep, see Spans) in up to
// par goroutines, sharing src (an io.ReaderAt may be read concurrently). fn is
// called concurrently for different spans, with the span's number (0 to par-1, in
// row order), and in row order within a span. It returns ErrNotDirect when the
// column is stored as another physical type.
func Read[T any](ctx context.Context, src parquet.ReaderAtSeeker, pr *file.Reader, path string, leaf int, typ parquet.Type,
	readBatch BatchFunc[T], par int, keep []bool, fn func(span int, vals []T, defs []int16, maxDef int16, base int64) error) error {
	spans := Spans(pr, leaf, par, keep)
	if len(spans) == 1 {
		return ReadLeaf(ctx, pr, path, leaf, typ, readBatch, spans[0], func(vals []T, defs []int16, maxDef int16, base int64) error {
			return fn(0, vals, defs, maxDef, base)
		})
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range spans {
		g.Go(func() error {
			spr, err := spanReader(src, pr, s)
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			return ReadLeaf(gctx, spr, path, leaf, typ, readBatch, s, func(vals []T, defs []int16, maxDef int16, base int64) error {
				return fn(i, vals, defs, maxDef, base)
			})
		})
	}
	return g.Wait()
}
