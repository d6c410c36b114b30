package read

// The filter formatter and column lister below serve the tests only: the golden and
// fuzz tests check that ParseFilter(formatFilter(e)) gives e back, and that the
// columns an expression names are the schema's. Production code carries the SQL the
// user wrote (Spec.Filter), never a formatted expression.

import (
	"encoding/hex"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// formatFilter renders expr as a SQL filter. For an expression that ParseFilter
// returned, ParseFilter(formatFilter(expr), schema) gives an equal expression; it also
// renders other unbound or bound iceberg-go expressions for logs (bound predicates
// print the field's own name, StartsWith prints as LIKE).
func formatFilter(expr ibg.BooleanExpression) string {
	if expr == nil {
		return "TRUE"
	}
	out, err := ibg.VisitExpr[filterFormatted](expr, filterFormatVisitor{})
	if err != nil {
		return expr.String()
	}
	return out.text
}

// Precedences of formatted nodes: a child is parenthesized when it binds looser.
const (
	filterPrecOr = iota + 1
	filterPrecAnd
	filterPrecNot
	filterPrecAtom
)

// filterFormatted is a formatted sub-expression and its precedence.
type filterFormatted struct {
	text string
	prec int
}

// filterFormatVisitor formats an expression bottom-up.
type filterFormatVisitor struct{}

func (filterFormatVisitor) VisitTrue() filterFormatted {
	return filterFormatted{"TRUE", filterPrecAtom}
}

func (filterFormatVisitor) VisitFalse() filterFormatted {
	return filterFormatted{"FALSE", filterPrecAtom}
}

func (filterFormatVisitor) VisitNot(child filterFormatted) filterFormatted {
	return filterFormatted{"NOT (" + child.text + ")", filterPrecNot}
}

func (filterFormatVisitor) VisitAnd(left, right filterFormatted) filterFormatted {
	return filterFormatted{filterWrap(left, filterPrecAnd) + " AND " + filterWrap(right, filterPrecAnd+1), filterPrecAnd}
}

func (filterFormatVisitor) VisitOr(left, right filterFormatted) filterFormatted {
	return filterFormatted{filterWrap(left, filterPrecOr) + " OR " + filterWrap(right, filterPrecOr+1), filterPrecOr}
}

// filterWrap parenthesizes f when it binds looser than minPrec. The right operand of
// AND/OR asks for one more than its own level, so that the tree shape survives
// parsing (which groups to the left).
func filterWrap(f filterFormatted, minPrec int) string {
	if f.prec < minPrec {
		return "(" + f.text + ")"
	}
	return f.text
}

func (filterFormatVisitor) VisitUnbound(p ibg.UnboundPredicate) filterFormatted {
	name, ok := filterTermName(p.Term())
	col := ""
	if ok {
		col = filterFormatColumn(name)
	} else {
		col = p.Term().String()
	}
	lits := filterUnboundLiterals(p)
	return filterFormatted{filterFormatPredicate(p.Op(), col, lits), filterPrecAtom}
}

func (filterFormatVisitor) VisitBound(p ibg.BoundPredicate) filterFormatted {
	col := filterFormatColumn(p.Ref().Field().Name)
	var lits []ibg.Literal
	switch bp := p.(type) {
	case ibg.BoundLiteralPredicate:
		lits = []ibg.Literal{bp.Literal()}
	case ibg.BoundSetPredicate:
		lits = bp.Literals().Members()
	}
	return filterFormatted{filterFormatPredicate(p.Op(), col, lits), filterPrecAtom}
}

// filterUnboundLiterals reads the literals of an unbound iceberg-go predicate.
// iceberg-go v0.7.0 exposes them only on bound predicates, so they are read from
// the unexported `lit` / `lits` fields; a layout change yields no literals and the
// round-trip tests fail.
func filterUnboundLiterals(p ibg.UnboundPredicate) []ibg.Literal {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	read := func(name string) (any, bool) {
		f := v.FieldByName(name)
		if !f.IsValid() || !f.CanAddr() {
			return nil, false
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface(), true
	}
	if x, ok := read("lit"); ok {
		if lit, ok := x.(ibg.Literal); ok && lit != nil {
			return []ibg.Literal{lit}
		}
	}
	if x, ok := read("lits"); ok {
		if set, ok := x.(interface{ Members() []ibg.Literal }); ok && set != nil {
			return set.Members()
		}
	}
	return nil
}

// filterFormatOps spells binary comparison operations.
var filterFormatOps = map[ibg.Operation]string{
	ibg.OpEQ: "=", ibg.OpNEQ: "<>", ibg.OpLT: "<", ibg.OpLTEQ: "<=", ibg.OpGT: ">", ibg.OpGTEQ: ">=",
}

func filterFormatPredicate(op ibg.Operation, col string, lits []ibg.Literal) string {
	switch op {
	case ibg.OpIsNull:
		return col + " IS NULL"
	case ibg.OpNotNull:
		return col + " IS NOT NULL"
	case ibg.OpIsNan:
		return col + " IS NAN"
	case ibg.OpNotNan:
		return col + " IS NOT NAN"
	case ibg.OpIn, ibg.OpNotIn:
		parts := make([]string, len(lits))
		for i, l := range lits {
			parts[i] = filterFormatLiteral(l)
		}
		sort.Strings(parts)
		kw := " IN ("
		if op == ibg.OpNotIn {
			kw = " NOT IN ("
		}
		return col + kw + strings.Join(parts, ", ") + ")"
	case ibg.OpStartsWith, ibg.OpNotStartsWith:
		pat := ""
		if len(lits) == 1 {
			pat = lits[0].String()
		}
		r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
		kw := " LIKE "
		if op == ibg.OpNotStartsWith {
			kw = " NOT LIKE "
		}
		return col + kw + filterQuoteString(r.Replace(pat)+"%") + ` ESCAPE '\'`
	}
	sym, ok := filterFormatOps[op]
	if !ok || len(lits) != 1 {
		return col + " " + op.String() + " ?"
	}
	return col + " " + sym + " " + filterFormatLiteral(lits[0])
}

// filterFormatLiteral renders an iceberg-go literal in filter syntax: numbers bare, strings
// and UUIDs quoted, DATE/TIME/TIMESTAMP typed literals, binary as X'<hex>'.
func filterFormatLiteral(l ibg.Literal) string {
	switch l := l.(type) {
	case ibg.BoolLiteral:
		if l {
			return "TRUE"
		}
		return "FALSE"
	case ibg.Int32Literal:
		return strconv.FormatInt(int64(l), 10)
	case ibg.Int64Literal:
		return strconv.FormatInt(int64(l), 10)
	case ibg.Float32Literal:
		return strconv.FormatFloat(float64(l), 'g', -1, 32)
	case ibg.Float64Literal:
		return strconv.FormatFloat(float64(l), 'g', -1, 64)
	case ibg.DecimalLiteral:
		return l.Val.ToString(int32(l.Scale))
	case ibg.StringLiteral:
		return filterQuoteString(string(l))
	case ibg.UUIDLiteral:
		return filterQuoteString(uuid.UUID(l).String())
	case ibg.DateLiteral:
		return "DATE '" + ibg.Date(l).ToTime().Format("2006-01-02") + "'"
	case ibg.TimeLiteral:
		return "TIME '" + ibg.Time(l).ToTime().Format("15:04:05.999999") + "'"
	case ibg.TimestampLiteral:
		return "TIMESTAMP '" + ibg.Timestamp(l).ToTime().Format("2006-01-02 15:04:05.999999") + "'"
	case ibg.TimestampNsLiteral:
		return "TIMESTAMP '" + ibg.TimestampNano(l).ToTime().Format("2006-01-02 15:04:05.999999999") + "'"
	case ibg.BinaryLiteral:
		return "X'" + strings.ToUpper(hex.EncodeToString(l)) + "'"
	case ibg.FixedLiteral:
		return "X'" + strings.ToUpper(hex.EncodeToString(l)) + "'"
	case nil:
		return "NULL"
	}
	return filterQuoteString(l.String())
}

// filterFormatColumn renders a full column name in filter syntax: each dotted part bare
// when it is a plain identifier and not a keyword, else double-quoted.
func filterFormatColumn(name string) string {
	parts := strings.Split(name, ".")
	for i, part := range parts {
		parts[i] = filterQuoteIdent(part)
	}
	return strings.Join(parts, ".")
}

// filterColumns returns the sorted, distinct full names of the columns that expr
// references. For bound predicates it returns the field's own name.
func filterColumns(expr ibg.BooleanExpression) []string {
	if expr == nil {
		return nil
	}
	v := &filterColumnVisitor{seen: map[string]bool{}}
	if _, err := ibg.VisitExpr[struct{}](expr, v); err != nil {
		return nil
	}
	out := make([]string, 0, len(v.seen))
	for name := range v.seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// filterColumnVisitor collects the column names of an expression.
type filterColumnVisitor struct{ seen map[string]bool }

func (*filterColumnVisitor) VisitTrue() struct{}             { return struct{}{} }
func (*filterColumnVisitor) VisitFalse() struct{}            { return struct{}{} }
func (*filterColumnVisitor) VisitNot(struct{}) struct{}      { return struct{}{} }
func (*filterColumnVisitor) VisitAnd(_, _ struct{}) struct{} { return struct{}{} }
func (*filterColumnVisitor) VisitOr(_, _ struct{}) struct{}  { return struct{}{} }
func (v *filterColumnVisitor) VisitUnbound(p ibg.UnboundPredicate) struct{} {
	if name, ok := filterTermName(p.Term()); ok {
		v.seen[name] = true
	}
	return struct{}{}
}

func (v *filterColumnVisitor) VisitBound(p ibg.BoundPredicate) struct{} {
	v.seen[p.Ref().Field().Name] = true
	return struct{}{}
}

// filterTermName returns the column name of an unbound term that is a plain reference.
func filterTermName(t ibg.UnboundTerm) (string, bool) {
	switch t := t.(type) {
	case ibg.Reference:
		return string(t), true
	}
	return "", false
}
