package read

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

var filterUpdate = flag.Bool("update", false, "rewrite the golden files under testdata/filter")

// filterTestSchema has every primitive type, a nested struct, a list, a map and
// names that need quoting.
func filterTestSchema(t testing.TB) *ibg.Schema {
	t.Helper()
	opt := func(id int, name string, typ ibg.Type) ibg.NestedField {
		return ibg.NestedField{ID: id, Name: name, Type: typ}
	}
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		opt(2, "i", ibg.PrimitiveTypes.Int32),
		opt(3, "l", ibg.PrimitiveTypes.Int64),
		opt(4, "f", ibg.PrimitiveTypes.Float32),
		opt(5, "d", ibg.PrimitiveTypes.Float64),
		opt(6, "b", ibg.PrimitiveTypes.Bool),
		opt(7, "s", ibg.PrimitiveTypes.String),
		opt(8, "amount", ibg.DecimalTypeOf(10, 2)),
		opt(9, "dt", ibg.PrimitiveTypes.Date),
		opt(10, "tm", ibg.PrimitiveTypes.Time),
		opt(11, "ts", ibg.PrimitiveTypes.Timestamp),
		opt(12, "tstz", ibg.PrimitiveTypes.TimestampTz),
		opt(13, "tsns", ibg.PrimitiveTypes.TimestampNs),
		opt(14, "u", ibg.PrimitiveTypes.UUID),
		opt(15, "bin", ibg.PrimitiveTypes.Binary),
		opt(16, "fx", ibg.FixedTypeOf(4)),
		opt(17, "my-col", ibg.PrimitiveTypes.String),
		opt(18, "Mixed", ibg.PrimitiveTypes.String),
		opt(19, "addr", &ibg.StructType{FieldList: []ibg.NestedField{
			opt(20, "city", ibg.PrimitiveTypes.String),
			opt(21, "zip", ibg.PrimitiveTypes.Int32),
			opt(22, "geo", &ibg.StructType{FieldList: []ibg.NestedField{
				opt(23, "lat", ibg.PrimitiveTypes.Float64),
				opt(24, "lon", ibg.PrimitiveTypes.Float64),
			}}),
		}}),
		opt(25, "tags", &ibg.ListType{ElementID: 26, Element: ibg.PrimitiveTypes.String}),
		opt(27, "props", &ibg.MapType{KeyID: 28, KeyType: ibg.PrimitiveTypes.String,
			ValueID: 29, ValueType: ibg.PrimitiveTypes.String}),
		opt(30, "in", ibg.PrimitiveTypes.Int32),
		opt(31, `we"ird`, ibg.PrimitiveTypes.Int32),
		opt(32, "tstzns", ibg.PrimitiveTypes.TimestampTzNs),
		opt(33, "Amount2", ibg.DecimalTypeOf(38, 0)),
		opt(34, "date", ibg.PrimitiveTypes.Int32),
	)
}

// filterDebug renders an expression tree with the Go type of each literal, in a
// deterministic order, for golden files.
func filterDebug(e ibg.BooleanExpression) string {
	switch e := e.(type) {
	case ibg.AlwaysTrue:
		return "true"
	case ibg.AlwaysFalse:
		return "false"
	case ibg.NotExpr:
		return "Not(" + filterDebug(e.Negate()) + ")"
	case ibg.UnboundPredicate:
		lits := filterUnboundLiterals(e)
		parts := make([]string, 0, len(lits))
		for _, l := range lits {
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(fmt.Sprintf("%T", l), "iceberg."), filterFormatLiteral(l)))
		}
		sort.Strings(parts)
		name, _ := filterTermName(e.Term())
		if len(parts) == 0 {
			return fmt.Sprintf("%s(%s)", e.Op(), name)
		}
		return fmt.Sprintf("%s(%s, %s)", e.Op(), name, strings.Join(parts, ", "))
	}
	v := &filterDebugVisitor{}
	out, err := ibg.VisitExpr[string](e, v)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

type filterDebugVisitor struct{}

func (*filterDebugVisitor) VisitTrue() string                    { return "true" }
func (*filterDebugVisitor) VisitFalse() string                   { return "false" }
func (*filterDebugVisitor) VisitNot(c string) string             { return "Not(" + c + ")" }
func (*filterDebugVisitor) VisitAnd(l, r string) string          { return "And(" + l + ", " + r + ")" }
func (*filterDebugVisitor) VisitOr(l, r string) string           { return "Or(" + l + ", " + r + ")" }
func (*filterDebugVisitor) VisitBound(ibg.BoundPredicate) string { return "bound" }
func (*filterDebugVisitor) VisitUnbound(p ibg.UnboundPredicate) string {
	return filterDebug(p)
}

// filterCase is one golden case: the input and its expected lines.
type filterCase struct {
	in   string
	want []string // "sql: ...", "expr: ..." or "err: ..."
}

// filterReadGolden reads blocks of `in:` and expectation lines separated by blank lines.
func filterReadGolden(t *testing.T, path string) []filterCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open golden: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	var cases []filterCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "in: "):
			cases = append(cases, filterCase{in: strings.TrimPrefix(line, "in: ")})
		case len(cases) > 0:
			cases[len(cases)-1].want = append(cases[len(cases)-1].want, line)
		default:
			t.Fatalf("%s: line %q before any `in:`", path, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func filterWriteGolden(t *testing.T, path, header string, cases []filterCase) {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	for _, c := range cases {
		b.WriteString("\nin: " + c.in + "\n")
		for _, w := range c.want {
			b.WriteString(w + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// filterOutcome computes the expectation lines for one input.
func filterOutcome(t *testing.T, schema *ibg.Schema, in string) (lines []string, accepted bool) {
	t.Helper()
	e, err := ParseFilter(in, schema)
	if err != nil {
		return []string{"err: " + err.Error()}, false
	}
	return []string{"sql: " + formatFilter(e), "expr: " + filterDebug(e)}, true
}

func TestFilterGolden(t *testing.T) {
	schema := filterTestSchema(t)
	for _, file := range []struct {
		name   string
		accept bool
		header string
	}{
		{"accept.txt", true, "# Accepted filters: input, formatFilter output, expression tree with literal types.\n# Regenerate with: go test -run TestFilterGolden ./iceberg/read/ -update\n"},
		{"reject.txt", false, "# Rejected filters: input and the exact error.\n# Regenerate with: go test -run TestFilterGolden ./iceberg/read/ -update\n"},
	} {
		path := filepath.Join("testdata", "filter", file.name)
		cases := filterReadGolden(t, path)
		min := 40
		if file.accept {
			min = 60
		}
		if len(cases) < min {
			t.Errorf("%s has %d cases, want at least %d", file.name, len(cases), min)
		}
		for i := range cases {
			c := &cases[i]
			t.Run(file.name+"/"+c.in, func(t *testing.T) {
				got, accepted := filterOutcome(t, schema, c.in)
				if accepted != file.accept {
					t.Errorf("ParseFilter(%q): accepted=%v, want %v: %v", c.in, accepted, file.accept, got)
				}
				if *filterUpdate {
					c.want = got
					return
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("ParseFilter(%q):\n got: %s\nwant: %s", c.in, strings.Join(got, "\n      "), strings.Join(c.want, "\n      "))
				}
				if accepted {
					filterCheckAccepted(t, schema, c.in)
				} else {
					filterCheckRejected(t, schema, c.in)
				}
			})
		}
		if *filterUpdate {
			filterWriteGolden(t, path, file.header, cases)
		}
	}
}

// filterCheckAccepted checks what every accepted filter must satisfy: it binds, never
// uses StartsWith, and round-trips through formatFilter.
func filterCheckAccepted(t *testing.T, schema *ibg.Schema, in string) {
	t.Helper()
	e, err := ParseFilter(in, schema)
	if err != nil {
		t.Fatalf("ParseFilter(%q): %v", in, err)
	}
	if _, err := ibg.BindExpr(schema, e, true); err != nil {
		t.Errorf("BindExpr(%s): %v", e, err)
	}
	if strings.Contains(e.String(), "StartsWith") {
		t.Errorf("ParseFilter(%q) uses StartsWith: %s", in, e)
	}
	sql := formatFilter(e)
	e2, err := ParseFilter(sql, schema)
	if err != nil {
		t.Fatalf("ParseFilter(formatFilter(%q) = %q): %v", in, sql, err)
	}
	if !e.Equals(e2) {
		t.Errorf("round trip of %q via %q:\n got %s\nwant %s", in, sql, e2, e)
	}
	for _, col := range filterColumns(e) {
		if _, ok := schema.FindFieldByName(col); !ok {
			t.Errorf("filterColumns(%q) returned %q, not a column", in, col)
		}
	}
}

// filterCheckRejected checks the shape of every rejection.
func filterCheckRejected(t *testing.T, schema *ibg.Schema, in string) {
	t.Helper()
	_, err := ParseFilter(in, schema)
	var fe *FilterError
	if !errors.As(err, &fe) {
		t.Fatalf("ParseFilter(%q) error %v is not a *FilterError", in, err)
	}
	if !errors.Is(err, config.ErrInvalidConfig) {
		t.Errorf("ParseFilter(%q) error does not wrap ErrInvalidConfig", in)
	}
	if n := utf8.RuneCountInString(in); fe.Pos < 1 || fe.Pos > n+1 {
		t.Errorf("ParseFilter(%q) error position %d outside 1..%d", in, fe.Pos, n+1)
	}
}

func TestFilterErrors(t *testing.T) {
	schema := filterTestSchema(t)
	tests := []struct {
		name        string
		in          string
		pos         int
		column      string
		unsupported bool
	}{
		{"type mismatch", "amount > 'abc'", 10, "amount", false},
		{"unknown column", "  amout = 1", 3, "", false},
		{"like infix", "s LIKE 'a%b'", 10, "s", true},
		{"like underscore", "s LIKE 'a_'", 10, "s", true},
		{"column vs column", "i = l", 5, "i", true},
		{"list element", "tags.element = 'x'", 1, "tags.element", true},
		{"int overflow", "i = 3000000000", 5, "i", false},
		{"syntax", "i = 1 AND", 10, "", false},
		{"after escaped quote", "s LIKE 'it''s_'", 14, "s", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFilter(tc.in, schema)
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseFilter(%q) = %v, want *FilterError", tc.in, err)
			}
			if fe.Pos != tc.pos || fe.Column != tc.column {
				t.Errorf("ParseFilter(%q): pos %d column %q, want pos %d column %q (%v)", tc.in, fe.Pos, fe.Column, tc.pos, tc.column, err)
			}
			if got := errors.Is(err, config.ErrUnsupported); got != tc.unsupported {
				t.Errorf("ParseFilter(%q): errors.Is(ErrUnsupported) = %v, want %v", tc.in, got, tc.unsupported)
			}
			if !errors.Is(err, config.ErrInvalidConfig) {
				t.Errorf("ParseFilter(%q): does not wrap ErrInvalidConfig", tc.in)
			}
		})
	}
	t.Run("message", func(t *testing.T) {
		_, err := ParseFilter("amount > 'abc'", schema)
		want := `iceberg: filter at position 10 (column "amount"): cannot compare decimal(10,2) with 'abc'`
		if err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
	})
	t.Run("nil schema", func(t *testing.T) {
		if _, err := ParseFilter("i = 1", nil); !errors.Is(err, config.ErrInvalidConfig) {
			t.Errorf("ParseFilter with nil schema = %v, want ErrInvalidConfig", err)
		}
	})
}

func TestFilterEmpty(t *testing.T) {
	schema := filterTestSchema(t)
	for _, in := range []string{"", "   ", "\n\t "} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			e, err := ParseFilter(in, schema)
			if err != nil || !e.Equals(ibg.AlwaysTrue{}) {
				t.Errorf("ParseFilter(%q) = %v, %v; want AlwaysTrue", in, e, err)
			}
		})
	}
}

func TestFilterColumns(t *testing.T) {
	schema := filterTestSchema(t)
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"i = 1", []string{"i"}},
		{"s LIKE 'a%' OR i IN (1, 2) AND NOT (addr.geo.lat > 1.5) AND i < 5", []string{"addr.geo.lat", "i", "s"}},
		{`"my-col" IS NULL AND ADDR.CITY = 'x' AND "in" BETWEEN 1 AND 2`, []string{"addr.city", "in", "my-col"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseFilter(tc.in, schema)
			if err != nil {
				t.Fatal(err)
			}
			if got := filterColumns(e); !slices.Equal(got, tc.want) {
				t.Errorf("filterColumns(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("bound", func(t *testing.T) {
		e, err := ParseFilter("i = 1 OR s = 'x'", schema)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := ibg.BindExpr(schema, e, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := filterColumns(bound); !slices.Equal(got, []string{"i", "s"}) {
			t.Errorf("filterColumns(bound) = %q", got)
		}
	})
}

// TestFilterPrefixSuccessor checks that the LIKE range is exactly the prefix test on
// valid UTF-8 strings compared bytewise, over prefixes and strings built from an
// alphabet of boundary code points.
func TestFilterPrefixSuccessor(t *testing.T) {
	alphabet := []rune{'a', 'b', 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, utf8.MaxRune}
	var strs []string
	var gen func(prefix []rune, depth int)
	gen = func(prefix []rune, depth int) {
		strs = append(strs, string(prefix))
		if depth == 0 {
			return
		}
		for _, r := range alphabet {
			gen(append(slices.Clone(prefix), r), depth-1)
		}
	}
	gen(nil, 3)
	for _, p := range strs {
		if utf8.RuneCountInString(p) > 2 {
			continue
		}
		succ, ok := filterPrefixSuccessor(p)
		if ok && !utf8.ValidString(succ) {
			t.Fatalf("successor of %q is not valid UTF-8: %q", p, succ)
		}
		for _, s := range strs {
			inRange := s >= p && (!ok || s < succ)
			if inRange != strings.HasPrefix(s, p) {
				t.Fatalf("prefix %q succ %q (ok=%v): string %q in range=%v, HasPrefix=%v", p, succ, ok, s, inRange, !inRange)
			}
		}
	}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"abc", "abd", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF", "", false},
		{"", "", false},
		{"\uD7FF", "\uE000", true},
		{"é", "ê", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := filterPrefixSuccessor(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("filterPrefixSuccessor(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}
