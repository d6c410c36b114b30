package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Partition transform names, as Iceberg spells them.
const (
	TransformIdentity = "identity"
	TransformBucket   = "bucket"
	TransformTruncate = "truncate"
	TransformYear     = "year"
	TransformMonth    = "month"
	TransformDay      = "day"
	TransformHour     = "hour"
	TransformVoid     = "void"
)

// errTerm is wrapped by every partition and sort term syntax error.
var errTerm = errors.New("bad term")

// PartitionField is one parsed entry of partition_fields: a source column and the
// transform applied to it. Param is the bucket count or truncate width, 0 otherwise.
type PartitionField struct {
	Source    string // the source column, e.g. "ts" or "a.b"
	Transform string // one of the Transform* constants
	Param     int    // N of bucket[N] or W of truncate[W]; 0 for other transforms
}

// String returns the field in Iceberg's notation: "col", "bucket[16](col)", "day(ts)".
// ParsePartitionField reads it back.
func (p PartitionField) String() string {
	switch p.Transform {
	case TransformIdentity:
		return p.Source
	case TransformBucket, TransformTruncate:
		return fmt.Sprintf("%s[%d](%s)", p.Transform, p.Param, p.Source)
	}
	return fmt.Sprintf("%s(%s)", p.Transform, p.Source)
}

// ParsePartitionField reads one partition_fields entry: an identity column "col";
// "bucket(N, col)", "bucket(col, N)" or Iceberg's "bucket[N](col)"; the same three forms
// for truncate; "year(col)", "month(col)", "day(col)", "hour(col)", "void(col)" (the plural
// forms years, months, days, hours and "identity(col)" are accepted too). Transform names are
// case-insensitive; N must be a positive integer.
func ParsePartitionField(s string) (PartitionField, error) {
	p, err := parseTerm(s)
	if err != nil {
		return PartitionField{}, fmt.Errorf("%w %q: %w", errTerm, s, err)
	}
	return p, nil
}

var transformAliases = map[string]string{
	"identity": TransformIdentity,
	"bucket":   TransformBucket,
	"truncate": TransformTruncate,
	"year":     TransformYear, "years": TransformYear,
	"month": TransformMonth, "months": TransformMonth,
	"day": TransformDay, "days": TransformDay,
	"hour": TransformHour, "hours": TransformHour,
	"void": TransformVoid,
}

func parseTerm(s string) (PartitionField, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PartitionField{}, errors.New("empty")
	}
	open := strings.IndexAny(s, "([")
	if open < 0 {
		if err := checkName(s); err != nil {
			return PartitionField{}, err
		}
		return PartitionField{Source: s, Transform: TransformIdentity}, nil
	}
	name := strings.ToLower(strings.TrimSpace(s[:open]))
	tr, ok := transformAliases[name]
	if !ok {
		return PartitionField{}, fmt.Errorf("unknown transform %q (want identity, bucket, truncate, year, month, day, hour or void)", s[:open])
	}
	rest := s[open:]
	param, hasBracket := 0, false
	if rest[0] == '[' {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return PartitionField{}, errors.New("missing ]")
		}
		if tr != TransformBucket && tr != TransformTruncate {
			return PartitionField{}, fmt.Errorf("%s takes no [N] parameter", tr)
		}
		n, err := parseParam(rest[1:end])
		if err != nil {
			return PartitionField{}, err
		}
		param, hasBracket = n, true
		rest = strings.TrimSpace(rest[end+1:])
	}
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return PartitionField{}, fmt.Errorf("want %s(...)", tr)
	}
	inner := rest[1 : len(rest)-1]
	if strings.ContainsAny(inner, "()[]") {
		return PartitionField{}, errors.New("nested or unbalanced parentheses")
	}
	args := strings.Split(inner, ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	withParam := (tr == TransformBucket || tr == TransformTruncate) && !hasBracket
	if !withParam {
		if len(args) != 1 {
			return PartitionField{}, fmt.Errorf("%s takes one column, got %d arguments", tr, len(args))
		}
		if err := checkName(args[0]); err != nil {
			return PartitionField{}, err
		}
		if hasBracket {
			return PartitionField{Source: args[0], Transform: tr, Param: param}, nil
		}
		return PartitionField{Source: args[0], Transform: tr}, nil
	}
	if len(args) != 2 {
		return PartitionField{}, fmt.Errorf("%s takes a width and a column, e.g. %s(16, col), got %d arguments", tr, tr, len(args))
	}
	_, err0 := strconv.Atoi(args[0])
	_, err1 := strconv.Atoi(args[1])
	var col, num string
	switch {
	case err0 == nil && err1 == nil:
		return PartitionField{}, fmt.Errorf("ambiguous: both arguments of %s are numbers", tr)
	case err0 == nil:
		num, col = args[0], args[1]
	case err1 == nil:
		col, num = args[0], args[1]
	default:
		return PartitionField{}, fmt.Errorf("%s needs an integer width, e.g. %s(16, col)", tr, tr)
	}
	n, err := parseParam(num)
	if err != nil {
		return PartitionField{}, err
	}
	if err := checkName(col); err != nil {
		return PartitionField{}, err
	}
	return PartitionField{Source: col, Transform: tr, Param: n}, nil
}

func parseParam(s string) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer parameter, got %q", s)
	}
	if n < 1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("parameter must be between 1 and %d, got %d", math.MaxInt32, n)
	}
	return int(n), nil
}

// checkName accepts a column name, possibly nested ("a.b"), without white space,
// parentheses, brackets or commas.
func checkName(s string) error {
	switch {
	case s == "":
		return errors.New("empty column name")
	case strings.ContainsAny(s, "()[],\"'` \t\r\n"):
		return fmt.Errorf("bad column name %q", s)
	case strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, ".."):
		return fmt.Errorf("bad nested column name %q", s)
	}
	return nil
}

// ParsePartitionFields parses every entry of a partition_fields list and reports redundant
// fields: the same column and transform twice, or two time transforms on one column.
func ParsePartitionFields(list []string) ([]PartitionField, error) {
	var errs Errors
	out := make([]PartitionField, 0, len(list))
	seen := map[PartitionField]bool{}
	timeOf := map[string]string{}
	for _, s := range list {
		p, err := ParsePartitionField(s)
		if err != nil {
			errs.Add(&ConfigError{Key: KeyPartitionFields, Err: err})
			continue
		}
		key := PartitionField{Source: p.Source, Transform: p.Transform}
		switch p.Transform {
		case TransformYear, TransformMonth, TransformDay, TransformHour:
			if prev, ok := timeOf[p.Source]; ok {
				errs.Add(Errorf(KeyPartitionFields, "redundant time partitions %s and %s on column %q", prev, p, p.Source))
				continue
			}
			timeOf[p.Source] = p.String()
		}
		if seen[key] {
			errs.Add(Errorf(KeyPartitionFields, "duplicate partition field %s", p))
			continue
		}
		seen[key] = true
		out = append(out, p)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
