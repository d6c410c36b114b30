package write

import (
	"errors"
	"fmt"
	"strings"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// errNoDestination is wrapped when a row's destination table cannot be rendered from
// the table template: the placeholder's column is missing or null, or its value cannot
// name a table. Such rows go to the dead letter output.
var errNoDestination = errors.New("no destination")

// Template is a parsed table template such as "db.events_{region}" or
// "db.t_{col.nested}": literal text with {column} placeholders filled from each row.
// A template without placeholders names one static table.
type Template struct {
	raw   string
	parts []templatePart
}

type templatePart struct {
	literal string
	column  []string // dotted path of a placeholder; nil for a literal
}

// ParseTemplate parses a table template. Braces must balance and a placeholder must
// name a column; a template must name a namespace and a table.
func ParseTemplate(s string) (Template, error) {
	t := Template{raw: s}
	rest := s
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if close := strings.IndexByte(rest, '}'); close >= 0 && (open < 0 || close < open) {
			return Template{}, config.Errorf(config.KeyTable, "unmatched } in table template %q", s)
		}
		if open < 0 {
			t.parts = append(t.parts, templatePart{literal: rest})
			break
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{literal: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return Template{}, config.Errorf(config.KeyTable, "unclosed { in table template %q", s)
		}
		inner := strings.TrimSpace(rest[open+1 : open+end])
		if inner == "" || strings.ContainsAny(inner, "{") {
			return Template{}, config.Errorf(config.KeyTable, "bad placeholder {%s} in table template %q", inner, s)
		}
		path := strings.Split(inner, ".")
		for _, p := range path {
			if strings.TrimSpace(p) == "" {
				return Template{}, config.Errorf(config.KeyTable, "bad placeholder {%s} in table template %q", inner, s)
			}
		}
		t.parts = append(t.parts, templatePart{column: path})
		rest = rest[open+end+1:]
	}
	if t.IsStatic() {
		if _, err := parseIdent(s); err != nil {
			return Template{}, config.Errorf(config.KeyTable, "%v", err)
		}
	} else if !strings.Contains(s, ".") {
		return Template{}, config.Errorf(config.KeyTable, "table template %q names no namespace", s)
	}
	return t, nil
}

// String returns the template as written.
func (t Template) String() string { return t.raw }

// IsStatic reports whether the template has no placeholders.
func (t Template) IsStatic() bool {
	for _, p := range t.parts {
		if p.column != nil {
			return false
		}
	}
	return true
}

// Columns returns the dotted column paths of the placeholders, in order.
func (t Template) Columns() []string {
	var out []string
	for _, p := range t.parts {
		if p.column != nil {
			out = append(out, strings.Join(p.column, "."))
		}
	}
	return out
}

// getter returns the value at a column path of one row, and whether the path exists.
type getter func(path []string) (any, bool)

// rowGetter returns the getter of r; nested struct values are Rows.
func rowGetter(r row.Row) getter {
	return func(path []string) (any, bool) {
		cur := r
		for i, name := range path {
			v, ok := cur.Get(name)
			if !ok {
				return nil, false
			}
			if i == len(path)-1 {
				return v, true
			}
			next, ok := v.(row.Row)
			if !ok {
				return nil, v == nil // a null parent makes the field null, not missing
			}
			cur = next
		}
		return nil, false
	}
}

// Render fills the placeholders from get and returns the table name. Values render as
// decimal integers, true/false, dates as YYYY_MM_DD, strings and UUIDs with every
// character other than ASCII letters, digits and '_' replaced by '_' (so a value can
// never add a namespace level or escape the template). A missing or null column, an
// empty value or a value of another type is an error wrapping errNoDestination.
func (t Template) Render(get getter) (string, error) {
	if t.IsStatic() {
		return t.raw, nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.column == nil {
			b.WriteString(p.literal)
			continue
		}
		col := strings.Join(p.column, ".")
		v, ok := get(p.column)
		if !ok {
			return "", fmt.Errorf("%w: row has no column %q", errNoDestination, col)
		}
		s, err := renderValue(v)
		if err != nil {
			return "", fmt.Errorf("%w: column %q: %w", errNoDestination, col, err)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func renderValue(v any) (string, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return "", errors.New("null")
	case string:
		s = x
	case int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool:
		s = fmt.Sprint(x) // decimal digits; true or false
	case ibg.Date:
		s = x.ToTime().Format("2006_01_02")
	case uuid.UUID:
		s = x.String()
	default:
		return "", fmt.Errorf("a %T value cannot name a table", v)
	}
	s = sanitize(s)
	if s == "" {
		return "", errors.New("empty value")
	}
	return s, nil
}

// sanitize replaces every character other than ASCII letters, digits and '_' by '_'.
func sanitize(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			out = append(out, byte(r))
		default:
			out = append(out, '_')
		}
	}
	return string(out)
}

// parseIdent splits "ns1.ns2.table" into an identifier with a namespace.
func parseIdent(s string) (table.Identifier, error) {
	ident := catalog.ToIdentifier(s)
	if len(ident) < 2 {
		return nil, fmt.Errorf("table %q names no namespace (want namespace.table)", s)
	}
	for _, p := range ident {
		if p == "" {
			return nil, fmt.Errorf("table %q has an empty name part", s)
		}
	}
	return ident, nil
}
