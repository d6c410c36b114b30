package read

import (
	"fmt"
	"strings"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// FilterError is a problem with a filter expression: where it is, which column it
// concerns (when one does) and what is wrong. It wraps config.ErrInvalidConfig and,
// for valid SQL that icebeam cannot push down (a LIKE pattern other than a prefix,
// a column compared with a column), config.ErrUnsupported.
type FilterError struct {
	Pos    int    // 1-based character offset in the filter; 0 when the error has no position
	Column string // full name of the column concerned, or ""
	Msg    string // what is wrong
	Err    error  // optional cause, such as config.ErrUnsupported
}

// Error reads like `iceberg: filter at position 14 (column "amount"): cannot compare
// decimal(10,2) with 'abc'`.
func (e *FilterError) Error() string {
	var b strings.Builder
	b.WriteString("iceberg: filter")
	if e.Pos > 0 {
		fmt.Fprintf(&b, " at position %d", e.Pos)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, " (column %q)", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns config.ErrInvalidConfig and the cause, so errors.Is works for both.
func (e *FilterError) Unwrap() []error {
	if e.Err == nil {
		return []error{config.ErrInvalidConfig}
	}
	return []error{config.ErrInvalidConfig, e.Err}
}

// filterMaxDepth bounds the nesting of parentheses and NOT, so that no input can
// exhaust the stack.
const filterMaxDepth = 200

// ParseFilter parses a SQL predicate in Calcite syntax (the `filter` key of managed
// Iceberg I/O) into an unbound iceberg-go expression over schema.
//
// Columns are referenced by their full dotted name as the schema spells it (an unquoted
// name that matches no column exactly matches one that differs only in case); every
// literal is converted to the Iceberg type of the column it is compared with, so the
// result binds to schema with ibg.BindExpr. An empty or blank filter yields
// ibg.AlwaysTrue{}. `LIKE 'prefix%'` becomes the equivalent range
// `col >= 'prefix' AND col < successor` (iceberg-go scans cannot evaluate StartsWith).
// NOT is pushed down to the predicates with SQL's null semantics (a row whose column is
// null matches neither a comparison nor its negation), so the result has no Not node;
// `NOT IN (a, b)` becomes `col <> a AND col <> b` because iceberg-go's NotIn keeps nulls.
//
// Every error is a *FilterError naming the position and, when known, the column.
func ParseFilter(filter string, schema *ibg.Schema) (ibg.BooleanExpression, error) {
	if schema == nil {
		return nil, &FilterError{Msg: "no table schema to resolve columns against"}
	}
	if strings.TrimSpace(filter) == "" {
		return ibg.AlwaysTrue{}, nil
	}
	toks, lerr := lexFilter(filter)
	if lerr != nil {
		return nil, lerr
	}
	index, err := ibg.IndexByName(schema)
	if err != nil {
		return nil, &FilterError{Msg: "cannot index the table schema: " + err.Error()}
	}
	p := &parseState{toks: toks, schema: schema, index: index}
	node, perr := p.parseFilter()
	if perr != nil {
		return nil, perr
	}
	expr := node.lower(false)
	if _, err := ibg.BindExpr(schema, expr, true); err != nil {
		return nil, &FilterError{Pos: 1, Msg: "expression does not bind to the table schema: " + err.Error()}
	}
	return expr, nil
}

// errFilterUnsupported marks FilterErrors for valid SQL that cannot be pushed down.
var errFilterUnsupported = fmt.Errorf("filter: %w", config.ErrUnsupported)
