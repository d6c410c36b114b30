package row

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// view is one Arrow record batch seen as rows: the rows AppendViews returns refer to
// it by record index. Each row's values are converted once, when first needed, and
// kept, so a row read many times boxes its values once; concurrent readers may both
// convert a row, and one result is kept.
type view struct {
	rec  arrow.RecordBatch // keeps the columns alive while rows refer to them
	gets []getFn           // one per column, bound to rec's arrays
	mat  []atomic.Pointer[[]any]
}

// cached returns the values of record i if they were converted, else nil.
func (v *view) cached(i int) []any {
	if p := v.mat[i].Load(); p != nil {
		return *p
	}
	return nil
}

// values returns the values of record i, converting them on first use.
func (v *view) values(i int) []any {
	if vals := v.cached(i); vals != nil {
		return vals
	}
	vals := make([]any, len(v.gets))
	for j, get := range v.gets {
		vals[j] = get(i)
	}
	if v.mat[i].CompareAndSwap(nil, &vals) {
		return vals
	}
	return *v.mat[i].Load()
}

// AppendViews appends one row per record of rec to dst, as AppendRows does, but the
// rows are views of rec: no value is converted until a row's values are asked for
// (Value, Get, Values, encoding, comparing). The rows keep rec alive; rec must not be
// released while they are in use (with Go's allocator, simply never release it).
func (c *ArrowReader) AppendViews(rec arrow.RecordBatch, dst []Row) ([]Row, error) {
	if err := c.check(rec); err != nil {
		return dst, err
	}
	n := int(rec.NumRows())
	v := &view{rec: rec, gets: make([]getFn, len(c.cols)), mat: make([]atomic.Pointer[[]any], n)}
	for j, col := range c.cols {
		v.gets[j] = col.get(rec.Column(j))
	}
	for i := range n {
		dst = append(dst, Row{schema: c.schema, view: v, i: i})
	}
	return dst, nil
}
