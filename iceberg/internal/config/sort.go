package config

import (
	"errors"
	"fmt"
	"strings"
)

// SortField is one parsed entry of sort_fields: a term (a column or a partition transform
// of one) with a direction and a null order.
type SortField struct {
	Source     string // the source column
	Transform  string // one of the Transform* constants; identity for a plain column
	Param      int    // N of bucket or W of truncate; 0 otherwise
	Descending bool   // desc; false is asc
	NullsFirst bool   // nulls first; the default is first for asc and last for desc
}

// Term returns the sort term as a PartitionField (source, transform, parameter).
func (f SortField) Term() PartitionField {
	return PartitionField{Source: f.Source, Transform: f.Transform, Param: f.Param}
}

// String returns the field in full form, e.g. "bucket[16](id) desc nulls last".
// ParseSortField reads it back.
func (f SortField) String() string {
	dir, nulls := "asc", "last"
	if f.Descending {
		dir = "desc"
	}
	if f.NullsFirst {
		nulls = "first"
	}
	return fmt.Sprintf("%s %s nulls %s", f.Term(), dir, nulls)
}

// ParseSortField reads one sort_fields entry: "<term> [asc|desc] [nulls first|nulls last]",
// where the term is a column or a transform accepted by ParsePartitionField, such as
// "bucket(16, id)" or "day(ts)". The direction defaults to asc; nulls default to first for
// asc and last for desc. Keywords are case-insensitive.
func ParseSortField(s string) (SortField, error) {
	f, err := parseSort(s)
	if err != nil {
		return SortField{}, fmt.Errorf("%w %q: %w", errTerm, s, err)
	}
	return f, nil
}

func parseSort(s string) (SortField, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return SortField{}, errors.New("empty")
	}
	var term, rest string
	if strings.IndexByte(s, '(') >= 0 {
		end := strings.IndexByte(s, ')')
		if end < 0 {
			return SortField{}, errors.New("missing )")
		}
		term, rest = s[:end+1], s[end+1:]
	} else {
		term = firstWord(s)
		rest = s[len(term):]
	}
	p, err := parseTerm(term)
	if err != nil {
		return SortField{}, err
	}
	f := SortField{Source: p.Source, Transform: p.Transform, Param: p.Param}
	words := strings.Fields(strings.ToLower(rest))
	dirSet := false
	if len(words) > 0 && (words[0] == "asc" || words[0] == "desc") {
		f.Descending, dirSet = words[0] == "desc", true
		words = words[1:]
	}
	f.NullsFirst = !f.Descending
	if len(words) >= 2 && words[0] == "nulls" && (words[1] == "first" || words[1] == "last") {
		f.NullsFirst = words[1] == "first"
		words = words[2:]
	}
	if len(words) > 0 {
		want := "asc, desc, nulls first or nulls last"
		if dirSet {
			want = "nulls first or nulls last"
		}
		return SortField{}, fmt.Errorf("unexpected %q, want %s", words[0], want)
	}
	return f, nil
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// ParseSortFields parses every entry of a sort_fields list and reports a term sorted twice.
func ParseSortFields(list []string) ([]SortField, error) {
	var errs Errors
	out := make([]SortField, 0, len(list))
	seen := map[PartitionField]bool{}
	for _, s := range list {
		f, err := ParseSortField(s)
		if err != nil {
			errs.Add(&ConfigError{Key: KeySortFields, Err: err})
			continue
		}
		if seen[f.Term()] {
			errs.Add(Errorf(KeySortFields, "term %s is sorted twice", f.Term()))
			continue
		}
		seen[f.Term()] = true
		out = append(out, f)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
