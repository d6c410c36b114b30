package read

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// lexKind is the kind of a filter token.
type lexKind int

const (
	lexEOF    lexKind = iota
	lexIdent          // unquoted identifier or keyword
	lexQuoted         // "quoted" or `quoted` identifier
	lexString         // 'string' literal
	lexNumber         // numeric literal, sign included
	lexBinary         // X'0A1B' binary literal
	lexSymbol         // = <> != < <= > >= ( ) , .
)

// lexMaxExponentDigits bounds the exponent of numeric literals, so that scaling a
// literal never builds huge numbers.
const lexMaxExponentDigits = 4

// lexToken is one token of a filter. Pos is the 1-based character (rune) offset.
type lexToken struct {
	kind lexKind
	text string // identifier name, decoded string, number text, symbol, or hex digits
	pos  int
	// runePos holds, for string literals, the source position of every decoded rune.
	runePos []int
}

// keyword reports whether the token is the unquoted keyword kw (upper case).
func (t lexToken) keyword(kw string) bool {
	return t.kind == lexIdent && strings.EqualFold(t.text, kw)
}

// symbol reports whether the token is the symbol s.
func (t lexToken) symbol(s string) bool {
	return t.kind == lexSymbol && t.text == s
}

// describe names the token for error messages.
func (t lexToken) describe() string {
	switch t.kind {
	case lexEOF:
		return "end of filter"
	case lexIdent:
		return filterQuoteForMsg(t.text)
	case lexQuoted:
		return "identifier " + filterQuoteIdent(t.text)
	case lexString:
		return "string " + filterQuoteString(filterTruncate(t.text))
	case lexNumber:
		return "number " + filterTruncate(t.text)
	case lexBinary:
		return "binary X'" + filterTruncate(t.text) + "'"
	default:
		return "'" + t.text + "'"
	}
}

// lexer splits a filter into tokens.
type lexer struct {
	src []rune
	i   int
}

// lexFilter tokenizes the whole filter. The last token is always lexEOF.
func lexFilter(filter string) ([]lexToken, *FilterError) {
	if !utf8.ValidString(filter) {
		pos := 1
		for i := 0; i < len(filter); {
			r, size := utf8.DecodeRuneInString(filter[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
			pos++
		}
		return nil, &FilterError{Pos: pos, Msg: "filter is not valid UTF-8"}
	}
	lx := &lexer{src: []rune(filter)}
	var toks []lexToken
	for {
		tok, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, tok)
		if tok.kind == lexEOF {
			return toks, nil
		}
	}
}

func (lx *lexer) peek(off int) rune {
	if lx.i+off < len(lx.src) {
		return lx.src[lx.i+off]
	}
	return 0
}

func lexIsIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func lexIsIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func lexIsDigit(r rune) bool { return r >= '0' && r <= '9' }

func (lx *lexer) next() (lexToken, *FilterError) {
	for lx.i < len(lx.src) && unicode.IsSpace(lx.src[lx.i]) {
		lx.i++
	}
	pos := lx.i + 1
	if lx.i >= len(lx.src) {
		return lexToken{kind: lexEOF, pos: pos}, nil
	}
	r := lx.src[lx.i]
	switch {
	case (r == 'x' || r == 'X') && lx.peek(1) == '\'':
		return lx.binary(pos)
	case lexIsIdentStart(r):
		start := lx.i
		for lx.i < len(lx.src) && lexIsIdentPart(lx.src[lx.i]) {
			lx.i++
		}
		return lexToken{kind: lexIdent, text: string(lx.src[start:lx.i]), pos: pos}, nil
	case r == '"' || r == '`':
		s, _, err := lx.quoted(r, pos)
		if err != nil {
			return lexToken{}, err
		}
		if s == "" {
			return lexToken{}, &FilterError{Pos: pos, Msg: "empty quoted identifier"}
		}
		return lexToken{kind: lexQuoted, text: s, pos: pos}, nil
	case r == '\'':
		s, rp, err := lx.quoted(r, pos)
		if err != nil {
			return lexToken{}, err
		}
		return lexToken{kind: lexString, text: s, pos: pos, runePos: rp}, nil
	case lexIsDigit(r) || (r == '.' && lexIsDigit(lx.peek(1))):
		return lx.number(pos)
	case (r == '-' || r == '+') && (lexIsDigit(lx.peek(1)) || (lx.peek(1) == '.' && lexIsDigit(lx.peek(2)))):
		return lx.number(pos)
	}
	two := string(r) + string(lx.peek(1))
	switch two {
	case "<>", "!=", "<=", ">=":
		lx.i += 2
		return lexToken{kind: lexSymbol, text: two, pos: pos}, nil
	}
	switch r {
	case '=', '<', '>', '(', ')', ',', '.':
		lx.i++
		return lexToken{kind: lexSymbol, text: string(r), pos: pos}, nil
	}
	return lexToken{}, &FilterError{Pos: pos, Msg: "unexpected character " + filterQuoteForMsg(string(r))}
}

// quoted reads a literal or identifier delimited by q, where a doubled q stands for one.
func (lx *lexer) quoted(q rune, pos int) (string, []int, *FilterError) {
	lx.i++ // opening quote
	var b strings.Builder
	var runePos []int
	for lx.i < len(lx.src) {
		r := lx.src[lx.i]
		if r == q {
			if lx.peek(1) == q {
				runePos = append(runePos, lx.i+1)
				b.WriteRune(q)
				lx.i += 2
				continue
			}
			lx.i++
			return b.String(), runePos, nil
		}
		runePos = append(runePos, lx.i+1)
		b.WriteRune(r)
		lx.i++
	}
	what := "string literal"
	if q != '\'' {
		what = "quoted identifier"
	}
	return "", nil, &FilterError{Pos: pos, Msg: "unterminated " + what}
}

func (lx *lexer) binary(pos int) (lexToken, *FilterError) {
	lx.i++ // X
	s, _, err := lx.quoted('\'', pos)
	if err != nil {
		return lexToken{}, err
	}
	if len(s)%2 != 0 {
		return lexToken{}, &FilterError{Pos: pos, Msg: "binary literal needs an even number of hex digits"}
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return lexToken{}, &FilterError{Pos: pos, Msg: "binary literal has a character that is not a hex digit"}
		}
	}
	return lexToken{kind: lexBinary, text: strings.ToUpper(s), pos: pos}, nil
}

func (lx *lexer) number(pos int) (lexToken, *FilterError) {
	start := lx.i
	if r := lx.src[lx.i]; r == '-' || r == '+' {
		lx.i++
	}
	for lx.i < len(lx.src) && lexIsDigit(lx.src[lx.i]) {
		lx.i++
	}
	if lx.peek(0) == '.' {
		lx.i++
		for lx.i < len(lx.src) && lexIsDigit(lx.src[lx.i]) {
			lx.i++
		}
	}
	if r := lx.peek(0); r == 'e' || r == 'E' {
		lx.i++
		if r := lx.peek(0); r == '-' || r == '+' {
			lx.i++
		}
		digits := 0
		for lx.i < len(lx.src) && lexIsDigit(lx.src[lx.i]) {
			lx.i++
			digits++
		}
		if digits == 0 {
			return lexToken{}, &FilterError{Pos: pos, Msg: "number has an exponent without digits"}
		}
		if digits > lexMaxExponentDigits {
			return lexToken{}, &FilterError{Pos: pos, Msg: "number has an out-of-range exponent"}
		}
	}
	if lx.i < len(lx.src) && (lexIsIdentPart(lx.src[lx.i]) || lx.src[lx.i] == '.') {
		return lexToken{}, &FilterError{Pos: pos, Msg: "malformed number " + filterQuoteForMsg(string(lx.src[start:lx.i+1]))}
	}
	return lexToken{kind: lexNumber, text: string(lx.src[start:lx.i]), pos: pos}, nil
}

// filterQuoteIdent quotes one identifier part when needed.
func filterQuoteIdent(s string) string {
	plain := s != "" && !parseReserved[strings.ToUpper(s)]
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && (r >= '0' && r <= '9' || r == '$'))) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
