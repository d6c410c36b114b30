package read

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// parseReserved are the words that cannot be unquoted column names.
var parseReserved = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true,
	"TRUE": true, "FALSE": true, "BETWEEN": true, "LIKE": true, "ESCAPE": true,
	// Typed literal prefixes are contextual; the tests' formatter quotes them anyway.
	"DATE": true, "TIME": true, "TIMESTAMP": true,
}

// filterNode is the parsed filter before lowering to iceberg-go: NOT is kept as a node
// so that it can be pushed down to the leaves with SQL semantics.
type filterNode interface {
	lower(negated bool) ibg.BooleanExpression
}

// filterBinary is AND (and=true) or OR.
type filterBinary struct {
	and  bool
	l, r filterNode
}

func (b *filterBinary) lower(negated bool) ibg.BooleanExpression {
	l, r := b.l.lower(negated), b.r.lower(negated)
	if b.and != negated { // AND, or NOT of OR (De Morgan)
		return ibg.NewAnd(l, r)
	}
	return ibg.NewOr(l, r)
}

// filterNot is NOT child.
type filterNot struct{ child filterNode }

func (n *filterNot) lower(negated bool) ibg.BooleanExpression { return n.child.lower(!negated) }

// filterLeaf is a predicate with its lowering and the lowering of its SQL negation.
// Under SQL's three-valued logic a predicate on a null is unknown and so is its
// negation: both forms drop null rows (except IS [NOT] NULL, whose negation is exact).
// iceberg-go's own Negate does not always keep that (NotIn keeps nulls), hence both
// forms are built here and the result never contains a Not node.
type filterLeaf struct{ pos, neg ibg.BooleanExpression }

func filterLeafOf(pos, neg ibg.BooleanExpression) *filterLeaf { return &filterLeaf{pos: pos, neg: neg} }

func (l *filterLeaf) lower(negated bool) ibg.BooleanExpression {
	if negated {
		return l.neg
	}
	return l.pos
}

// parseState is a recursive-descent parser over the tokens of one filter.
type parseState struct {
	toks   []lexToken
	i      int
	depth  int
	schema *ibg.Schema
	index  map[string]int // full column name -> field ID
}

// parseColumn is a resolved column operand.
type parseColumn struct {
	name  string // canonical full name
	field ibg.NestedField
	pos   int
}

// parseOperand is one side of a comparison: a column or a literal.
type parseOperand struct {
	col *parseColumn
	lit *filterLit
}

func (p *parseState) tok() lexToken { return p.toks[p.i] }

func (p *parseState) advance() lexToken {
	t := p.toks[p.i]
	if t.kind != lexEOF {
		p.i++
	}
	return t
}

func (p *parseState) acceptKeyword(kw string) bool {
	if p.tok().keyword(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parseState) unexpected(expected string) *FilterError {
	t := p.tok()
	return &FilterError{Pos: t.pos, Msg: fmt.Sprintf("unexpected %s, expected %s", t.describe(), expected)}
}

func (p *parseState) parseFilter() (filterNode, *FilterError) {
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok().kind != lexEOF {
		return nil, p.unexpected("AND, OR or end of filter")
	}
	return e, nil
}

func (p *parseState) parseOr() (filterNode, *FilterError) {
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.acceptKeyword("OR") {
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		left = &filterBinary{and: false, l: left, r: right}
	}
	return left, nil
}

func (p *parseState) parseAnd() (filterNode, *FilterError) {
	left, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.acceptKeyword("AND") {
		right, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		left = &filterBinary{and: true, l: left, r: right}
	}
	return left, nil
}

func (p *parseState) enter() *FilterError {
	p.depth++
	if p.depth > filterMaxDepth {
		return &FilterError{Pos: p.tok().pos, Msg: fmt.Sprintf("filter nests deeper than %d levels", filterMaxDepth)}
	}
	return nil
}

func (p *parseState) parseNot() (filterNode, *FilterError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	if p.acceptKeyword("NOT") {
		child, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &filterNot{child: child}, nil
	}
	return p.parsePredicate()
}

func (p *parseState) parsePredicate() (filterNode, *FilterError) {
	if p.tok().symbol("(") {
		p.advance()
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if !p.tok().symbol(")") {
			return nil, p.unexpected("')'")
		}
		p.advance()
		return e, nil
	}
	left, err := p.parseOperand()
	if err != nil {
		return nil, err
	}
	t := p.tok()
	switch {
	case t.kind == lexSymbol && parseComparisonOps[t.text] != 0:
		p.advance()
		right, err := p.parseOperand()
		if err != nil {
			return nil, err
		}
		return p.comparison(left, t, right)
	case t.keyword("IS"):
		return p.parseIs(left)
	case t.keyword("NOT"), t.keyword("IN"), t.keyword("BETWEEN"), t.keyword("LIKE"):
		return p.parseNegatable(left)
	}
	// A lone operand: a boolean column or TRUE/FALSE.
	if left.lit != nil {
		if left.lit.kind == filterLitBool {
			if left.lit.b {
				return filterLeafOf(ibg.AlwaysTrue{}, ibg.AlwaysFalse{}), nil
			}
			return filterLeafOf(ibg.AlwaysFalse{}, ibg.AlwaysTrue{}), nil
		}
		return nil, p.unexpected("a comparison operator")
	}
	if _, ok := left.col.field.Type.(ibg.BooleanType); ok {
		ref := ibg.Reference(left.col.name)
		return filterLeafOf(ibg.EqualTo(ref, true), ibg.EqualTo(ref, false)), nil
	}
	return nil, p.unexpected("a comparison operator, IS, IN, BETWEEN or LIKE")
}

// parseComparisonOps maps comparison symbols to operations (zero means none).
var parseComparisonOps = map[string]ibg.Operation{
	"=": ibg.OpEQ, "<>": ibg.OpNEQ, "!=": ibg.OpNEQ,
	"<": ibg.OpLT, "<=": ibg.OpLTEQ, ">": ibg.OpGT, ">=": ibg.OpGTEQ,
}

// parseFlip mirrors a comparison for swapped operands (`5 < i` is `i > 5`).
// iceberg-go's Operation.FlipLR panics on = and <>.
func parseFlip(op ibg.Operation) ibg.Operation {
	switch op {
	case ibg.OpLT:
		return ibg.OpGT
	case ibg.OpLTEQ:
		return ibg.OpGTEQ
	case ibg.OpGT:
		return ibg.OpLT
	case ibg.OpGTEQ:
		return ibg.OpLTEQ
	}
	return op
}

func (p *parseState) comparison(left parseOperand, opTok lexToken, right parseOperand) (filterNode, *FilterError) {
	op := parseComparisonOps[opTok.text]
	switch {
	case left.col != nil && right.col != nil:
		return nil, &FilterError{Pos: right.col.pos, Column: left.col.name, Err: errFilterUnsupported,
			Msg: fmt.Sprintf("comparing column %q with column %q is not supported: compare a column with a literal", left.col.name, right.col.name)}
	case left.lit != nil && right.lit != nil:
		return nil, &FilterError{Pos: opTok.pos, Err: errFilterUnsupported,
			Msg: "comparing two literals is not supported: compare a column with a literal"}
	case left.lit != nil:
		left, right = right, left
		op = parseFlip(op)
	}
	lit, err := p.literalFor(left.col, right.lit)
	if err != nil {
		return nil, err
	}
	ref := ibg.Reference(left.col.name)
	return filterLeafOf(ibg.LiteralPredicate(op, ref, lit), ibg.LiteralPredicate(op.Negate(), ref, lit)), nil
}

func (p *parseState) parseIs(left parseOperand) (filterNode, *FilterError) {
	isTok := p.advance()
	if left.col == nil {
		return nil, &FilterError{Pos: isTok.pos, Msg: "IS needs a column on its left"}
	}
	not := p.acceptKeyword("NOT")
	ref := ibg.Reference(left.col.name)
	switch t := p.tok(); {
	case t.keyword("NULL"):
		p.advance()
		if not {
			return filterLeafOf(ibg.NotNull(ref), ibg.IsNull(ref)), nil
		}
		return filterLeafOf(ibg.IsNull(ref), ibg.NotNull(ref)), nil
	case t.keyword("NAN"):
		p.advance()
		switch left.col.field.Type.(type) {
		case ibg.Float32Type, ibg.Float64Type:
		default:
			return nil, &FilterError{Pos: t.pos, Column: left.col.name,
				Msg: fmt.Sprintf("IS NAN needs a float or double column, not %s", filterTypeName(left.col.field.Type))}
		}
		if not {
			return filterLeafOf(ibg.NotNaN(ref), ibg.IsNaN(ref)), nil
		}
		return filterLeafOf(ibg.IsNaN(ref), ibg.NotNaN(ref)), nil
	}
	return nil, p.unexpected("NULL or NAN")
}

// parseNegatable parses [NOT] IN, [NOT] BETWEEN and [NOT] LIKE after an operand.
func (p *parseState) parseNegatable(left parseOperand) (filterNode, *FilterError) {
	not := p.acceptKeyword("NOT")
	t := p.tok()
	if !t.keyword("IN") && !t.keyword("BETWEEN") && !t.keyword("LIKE") {
		return nil, p.unexpected("IN, BETWEEN or LIKE")
	}
	p.advance()
	if left.col == nil {
		return nil, &FilterError{Pos: t.pos, Err: errFilterUnsupported,
			Msg: strings.ToUpper(t.text) + " needs a column on its left"}
	}
	switch {
	case t.keyword("IN"):
		return p.parseIn(left.col, not)
	case t.keyword("BETWEEN"):
		return p.parseBetween(left.col, not)
	default:
		return p.parseLike(left.col, not)
	}
}

func (p *parseState) parseIn(col *parseColumn, not bool) (filterNode, *FilterError) {
	if !p.tok().symbol("(") {
		return nil, p.unexpected("'(' after IN")
	}
	p.advance()
	var lits []ibg.Literal
	seen := map[string]bool{}
	for {
		op, err := p.parseOperand()
		if err != nil {
			return nil, err
		}
		if op.col != nil {
			return nil, &FilterError{Pos: op.col.pos, Column: col.name, Err: errFilterUnsupported,
				Msg: fmt.Sprintf("IN list holds column %q: only literals are supported", op.col.name)}
		}
		lit, ferr := p.literalFor(col, op.lit)
		if ferr != nil {
			return nil, ferr
		}
		key, kerr := lit.MarshalBinary()
		if kerr != nil || !seen[string(key)] {
			seen[string(key)] = true
			lits = append(lits, lit)
		}
		if p.tok().symbol(",") {
			p.advance()
			continue
		}
		if p.tok().symbol(")") {
			p.advance()
			break
		}
		return nil, p.unexpected("',' or ')' in the IN list")
	}
	// iceberg-go's NotIn keeps rows whose value is null, while SQL's NOT IN drops them
	// (null NOT IN (...) is unknown); `col <> a AND col <> b ...` drops them as SQL does.
	ref := ibg.Reference(col.name)
	in := ibg.SetPredicate(ibg.OpIn, ref, lits)
	var notIn ibg.BooleanExpression = ibg.LiteralPredicate(ibg.OpNEQ, ref, lits[0])
	for _, lit := range lits[1:] {
		notIn = ibg.NewAnd(notIn, ibg.LiteralPredicate(ibg.OpNEQ, ref, lit))
	}
	if not {
		return filterLeafOf(notIn, in), nil
	}
	return filterLeafOf(in, notIn), nil
}

func (p *parseState) parseBetween(col *parseColumn, not bool) (filterNode, *FilterError) {
	lo, err := p.betweenBound(col)
	if err != nil {
		return nil, err
	}
	if !p.acceptKeyword("AND") {
		return nil, p.unexpected("AND in BETWEEN")
	}
	hi, err := p.betweenBound(col)
	if err != nil {
		return nil, err
	}
	ref := ibg.Reference(col.name)
	between := ibg.NewAnd(ibg.LiteralPredicate(ibg.OpGTEQ, ref, lo), ibg.LiteralPredicate(ibg.OpLTEQ, ref, hi))
	outside := ibg.NewOr(ibg.LiteralPredicate(ibg.OpLT, ref, lo), ibg.LiteralPredicate(ibg.OpGT, ref, hi))
	if not {
		return filterLeafOf(outside, between), nil
	}
	return filterLeafOf(between, outside), nil
}

func (p *parseState) betweenBound(col *parseColumn) (ibg.Literal, *FilterError) {
	op, err := p.parseOperand()
	if err != nil {
		return nil, err
	}
	if op.col != nil {
		return nil, &FilterError{Pos: op.col.pos, Column: col.name, Err: errFilterUnsupported,
			Msg: fmt.Sprintf("BETWEEN bound is column %q: only literals are supported", op.col.name)}
	}
	return p.literalFor(col, op.lit)
}

func (p *parseState) parseLike(col *parseColumn, not bool) (filterNode, *FilterError) {
	patTok := p.tok()
	if patTok.kind != lexString {
		return nil, p.unexpected("a string pattern after LIKE")
	}
	p.advance()
	if _, ok := col.field.Type.(ibg.StringType); !ok {
		return nil, &FilterError{Pos: patTok.pos, Column: col.name,
			Msg: fmt.Sprintf("LIKE needs a string column, not %s", filterTypeName(col.field.Type))}
	}
	escape := rune(-1)
	if p.acceptKeyword("ESCAPE") {
		escTok := p.tok()
		if escTok.kind != lexString || utf8.RuneCountInString(escTok.text) != 1 {
			return nil, &FilterError{Pos: escTok.pos, Column: col.name, Msg: "ESCAPE needs a string of exactly one character"}
		}
		p.advance()
		escape, _ = utf8.DecodeRuneInString(escTok.text)
	}
	prefix, exact, ferr := filterLikePrefix(patTok, escape)
	if ferr != nil {
		ferr.Column = col.name
		return nil, ferr
	}
	ref := ibg.Reference(col.name)
	var like, unlike ibg.BooleanExpression
	switch hi, bounded := filterPrefixSuccessor(prefix); {
	case exact:
		like, unlike = ibg.EqualTo(ref, prefix), ibg.NotEqualTo(ref, prefix)
	case !bounded:
		// Every string is >= '' and no string is < '': nulls stay out either way.
		like, unlike = ibg.GreaterThanEqual(ref, prefix), ibg.LessThan(ref, prefix)
	default:
		like = ibg.NewAnd(ibg.GreaterThanEqual(ref, prefix), ibg.LessThan(ref, hi))
		unlike = ibg.NewOr(ibg.LessThan(ref, prefix), ibg.GreaterThanEqual(ref, hi))
	}
	if not {
		return filterLeafOf(unlike, like), nil
	}
	return filterLeafOf(like, unlike), nil
}

// filterLikePrefix analyses a LIKE pattern. It returns the literal text and exact=true
// for a pattern without wildcards, or the prefix for a pattern whose only wildcards are
// trailing '%'. Any other pattern is an unsupported-feature error.
func filterLikePrefix(pat lexToken, escape rune) (string, bool, *FilterError) {
	runes := []rune(pat.text)
	posOf := func(i int) int {
		if i < len(pat.runePos) {
			return pat.runePos[i]
		}
		return pat.pos
	}
	var b strings.Builder
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case r == escape:
			if i+1 >= len(runes) || (runes[i+1] != '%' && runes[i+1] != '_' && runes[i+1] != escape) {
				return "", false, &FilterError{Pos: posOf(i), Msg: "invalid escape sequence in LIKE pattern: the escape character must precede '%', '_' or itself"}
			}
			i++
			b.WriteRune(runes[i])
		case r == '%':
			for j := i + 1; j < len(runes); j++ {
				if runes[j] != '%' {
					return "", false, &FilterError{Pos: posOf(i), Err: errFilterUnsupported,
						Msg: "LIKE pattern " + filterQuoteString(filterTruncate(pat.text)) + " is not supported: only 'prefix%' patterns and exact strings can be pushed down"}
				}
			}
			return b.String(), false, nil
		case r == '_':
			return "", false, &FilterError{Pos: posOf(i), Err: errFilterUnsupported,
				Msg: "LIKE pattern " + filterQuoteString(filterTruncate(pat.text)) + " is not supported: '_' wildcards cannot be pushed down"}
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), true, nil
}

// filterPrefixSuccessor returns the smallest string greater than every string that
// starts with prefix: the prefix cut after its last code point below U+10FFFF, with
// that code point incremented (skipping the surrogate range). UTF-8 preserves code
// point order under bytewise comparison, so for valid UTF-8 strings s:
// strings.HasPrefix(s, prefix) == (s >= prefix && s < successor). ok is false when
// every code point is U+10FFFF (or prefix is empty): then no upper bound exists.
func filterPrefixSuccessor(prefix string) (succ string, ok bool) {
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		r := runes[i]
		if r >= utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		return string(runes[:i]) + string(r), true
	}
	return "", false
}

// parseOperand parses a column path or a literal.
func (p *parseState) parseOperand() (parseOperand, *FilterError) {
	t := p.tok()
	switch t.kind {
	case lexString:
		p.advance()
		return parseOperand{lit: &filterLit{kind: filterLitString, text: t.text, pos: t.pos}}, nil
	case lexNumber:
		p.advance()
		return parseOperand{lit: &filterLit{kind: filterLitNumber, text: t.text, pos: t.pos}}, nil
	case lexBinary:
		p.advance()
		return parseOperand{lit: &filterLit{kind: filterLitBinary, text: t.text, pos: t.pos}}, nil
	case lexQuoted:
		return p.parseColumnPath()
	case lexIdent:
		upper := strings.ToUpper(t.text)
		switch upper {
		case "TRUE", "FALSE":
			p.advance()
			return parseOperand{lit: &filterLit{kind: filterLitBool, b: upper == "TRUE", text: upper, pos: t.pos}}, nil
		case "NULL":
			p.advance()
			return parseOperand{lit: &filterLit{kind: filterLitNull, text: upper, pos: t.pos}}, nil
		case "DATE", "TIME", "TIMESTAMP":
			if next := p.toks[p.i+1]; next.kind == lexString {
				p.i += 2
				kind := map[string]filterLitKind{"DATE": filterLitDate, "TIME": filterLitTime, "TIMESTAMP": filterLitTimestamp}[upper]
				return parseOperand{lit: &filterLit{kind: kind, text: next.text, pos: t.pos}}, nil
			}
		}
		if parseReserved[upper] && upper != "DATE" && upper != "TIME" && upper != "TIMESTAMP" {
			err := p.unexpected("a column or a literal")
			err.Msg += fmt.Sprintf(" (a column named like a keyword must be quoted: %s)", filterQuoteIdent(t.text))
			return parseOperand{}, err
		}
		return p.parseColumnPath()
	}
	return parseOperand{}, p.unexpected("a column or a literal")
}

// parsePart is one dotted part of a column path.
type parsePart struct {
	name   string
	quoted bool
}

func (p *parseState) parseColumnPath() (parseOperand, *FilterError) {
	start := p.tok().pos
	var parts []parsePart
	for {
		t := p.tok()
		switch {
		case t.kind == lexQuoted:
			parts = append(parts, parsePart{name: t.text, quoted: true})
		case t.kind == lexIdent && !parseReserved[strings.ToUpper(t.text)],
			t.kind == lexIdent && len(parts) > 0:
			// After a dot any word is a field name, keywords included.
			parts = append(parts, parsePart{name: t.text})
		case t.kind == lexIdent && (t.keyword("DATE") || t.keyword("TIME") || t.keyword("TIMESTAMP")):
			parts = append(parts, parsePart{name: t.text})
		default:
			return parseOperand{}, p.unexpected("a column name")
		}
		p.advance()
		if !p.tok().symbol(".") {
			break
		}
		p.advance()
	}
	col, err := p.resolve(parts, start)
	if err != nil {
		return parseOperand{}, err
	}
	return parseOperand{col: col}, nil
}

// resolve finds the column a path names: the exact full name first, then (for unquoted
// parts) a unique match that differs only in case.
func (p *parseState) resolve(parts []parsePart, pos int) (*parseColumn, *FilterError) {
	names := make([]string, len(parts))
	for i, part := range parts {
		names[i] = part.name
	}
	full := strings.Join(names, ".")
	name := ""
	if _, ok := p.index[full]; ok {
		name = full
	} else {
		var matches []string
		for cand := range p.index {
			if parseMatchesFold(cand, parts) {
				matches = append(matches, cand)
			}
		}
		sort.Strings(matches)
		switch len(matches) {
		case 0:
			msg := "unknown column " + filterQuoteForMsg(full)
			if near := filterClosest(full, p.index); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return nil, &FilterError{Pos: pos, Msg: msg}
		case 1:
			name = matches[0]
		default:
			return nil, &FilterError{Pos: pos, Msg: fmt.Sprintf("column %s is ambiguous: it matches %s; quote it to match case exactly",
				filterQuoteForMsg(full), strings.Join(matches, ", "))}
		}
	}
	field, ok := p.schema.FindFieldByName(name)
	if !ok {
		return nil, &FilterError{Pos: pos, Msg: "unknown column " + filterQuoteForMsg(name)}
	}
	// A field inside a list or map has no single value per row.
	for i := strings.IndexByte(name, '.'); i >= 0; {
		if parent, ok := p.schema.FindFieldByName(name[:i]); ok {
			switch parent.Type.(type) {
			case *ibg.ListType, *ibg.MapType:
				return nil, &FilterError{Pos: pos, Column: name, Err: errFilterUnsupported,
					Msg: fmt.Sprintf("column is inside %s %q: only columns outside lists and maps can be filtered", filterTypeName(parent.Type), name[:i])}
			}
		}
		next := strings.IndexByte(name[i+1:], '.')
		if next < 0 {
			break
		}
		i += next + 1
	}
	if _, ok := field.Type.(ibg.PrimitiveType); !ok {
		return nil, &FilterError{Pos: pos, Column: name,
			Msg: fmt.Sprintf("column is a %s, not a primitive column: filter on its fields instead", filterTypeName(field.Type))}
	}
	return &parseColumn{name: name, field: field, pos: pos}, nil
}

// parseMatchesFold reports whether a candidate full name matches parts, with unquoted
// parts compared case-insensitively and quoted parts exactly.
func parseMatchesFold(cand string, parts []parsePart) bool {
	off := 0
	for i, part := range parts {
		if i > 0 {
			if off >= len(cand) || cand[off] != '.' {
				return false
			}
			off++
		}
		if len(cand)-off < len(part.name) {
			return false
		}
		seg := cand[off : off+len(part.name)]
		if part.quoted {
			if seg != part.name {
				return false
			}
		} else if !strings.EqualFold(seg, part.name) {
			return false
		}
		off += len(part.name)
	}
	return off == len(cand)
}

// filterClosest returns the column name nearest to name, if close (config.Closest over
// the sorted names, so the hint is deterministic).
func filterClosest(name string, index map[string]int) string {
	names := make([]string, 0, len(index))
	for cand := range index {
		names = append(names, cand)
	}
	sort.Strings(names)
	return config.Closest(name, names)
}
