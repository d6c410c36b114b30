package icebergtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// maxDiffRows bounds how many missing and extra rows a diff lists.
const maxDiffRows = 20

// EqualRows fails the test unless want and got hold the same rows as
// multisets (row order does not matter, duplicates do). Columns are matched
// by name; both tables must have the same column names. The failure lists
// the rows missing from got and the extra rows in got.
func EqualRows(t testing.TB, want, got arrow.Table) {
	t.Helper()

	if diff := DiffRows(want, got); diff != "" {
		t.Fatalf("rows differ (-want +got):\n%s", diff)
	}
}

// DiffRows compares want and got as multisets of rows, columns matched by
// name, and returns "" when they are equal, otherwise a readable list of
// the rows missing from got (-) and the extra rows in got (+).
func DiffRows(want, got arrow.Table) string {
	wantCols := columnNames(want.Schema())
	gotCols := columnNames(got.Schema())
	ws, gs := slices.Clone(wantCols), slices.Clone(gotCols)
	slices.Sort(ws)
	slices.Sort(gs)
	if !slices.Equal(ws, gs) {
		return fmt.Sprintf("columns differ: want %v, got %v\n", wantCols, gotCols)
	}

	wantRows := RowStrings(want, wantCols)
	gotRows := RowStrings(got, wantCols)
	counts := map[string]int{}
	for _, r := range wantRows {
		counts[r]++
	}
	for _, r := range gotRows {
		counts[r]--
	}
	var missing, extra []string
	for _, r := range wantRows {
		if counts[r] > 0 {
			missing = append(missing, r)
			counts[r]--
		}
	}
	for _, r := range gotRows {
		if counts[r] < 0 {
			extra = append(extra, r)
			counts[r]++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}

	var b strings.Builder
	fmt.Fprintf(&b, "want %d rows, got %d; %d missing, %d extra\n", len(wantRows), len(gotRows), len(missing), len(extra))
	list := func(sign string, rows []string) {
		slices.Sort(rows)
		for i, r := range rows {
			if i == maxDiffRows {
				fmt.Fprintf(&b, "%s ... %d more\n", sign, len(rows)-i)

				break
			}
			fmt.Fprintf(&b, "%s %s\n", sign, r)
		}
	}
	list("-", missing)
	list("+", extra)

	return b.String()
}

func columnNames(sc *arrow.Schema) []string {
	out := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		out[i] = f.Name
	}

	return out
}

// RowStrings renders every row of tbl as "{col=value, ...}" with the
// columns in the given order (all columns, in schema order, when cols is
// empty). Equal rows render equally; nulls render as null, top-level
// strings quoted, other values as arrow's ValueStr (nested values as JSON).
func RowStrings(tbl arrow.Table, cols []string) []string {
	if len(cols) == 0 {
		cols = columnNames(tbl.Schema())
	}
	n := int(tbl.NumRows())
	rows := make([]strings.Builder, n)
	for ci, name := range cols {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) == 0 {
			continue
		}
		row := 0
		for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
			for i := range chunk.Len() {
				b := &rows[row]
				if ci > 0 {
					b.WriteString(", ")
				}
				b.WriteString(name)
				b.WriteByte('=')
				switch c := chunk.(type) {
				case *array.String:
					if c.IsNull(i) {
						b.WriteString("null")
					} else {
						b.WriteString(strconv.Quote(c.Value(i)))
					}
				case *array.LargeString:
					if c.IsNull(i) {
						b.WriteString("null")
					} else {
						b.WriteString(strconv.Quote(c.Value(i)))
					}
				default:
					if chunk.IsNull(i) {
						b.WriteString("null")
					} else {
						b.WriteString(chunk.ValueStr(i))
					}
				}
				row++
			}
		}
	}
	out := make([]string, n)
	for i := range rows {
		out[i] = "{" + rows[i].String() + "}"
	}

	return out
}
