package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// checkColumns reports empty and duplicate names in a column list of key.
func CheckColumns(errs *Errors, key string, cols []string) {
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		switch {
		case strings.TrimSpace(c) == "":
			errs.Add(Errorf(key, "element %d: empty column name", i))
		case seen[c]:
			errs.Add(Errorf(key, "duplicate column %q", c))
		}
		seen[c] = true
	}
}

// checkColumn reports an empty or blank column name in a single-column key when it is set.
func CheckColumn(errs *Errors, key, col string) {
	if col != "" && strings.TrimSpace(col) == "" {
		errs.Add(Errorf(key, "blank column name"))
	}
}

// checkPath reports a dotted field path of key with an empty part, such as "a..b",
// ".a" or "a." (a blank path is checkColumn's).
func CheckPath(errs *Errors, key, path string) {
	if Blank(path) {
		return
	}
	for _, part := range strings.Split(path, ".") {
		if Blank(part) {
			errs.Add(Errorf(key, "field path %q has an empty part", path))
			return
		}
	}
}

// checkMapKeys reports empty keys of a property map. Values are never quoted.
func CheckMapKeys(errs *Errors, key string, m map[string]string) {
	for k := range m {
		if strings.TrimSpace(k) == "" {
			errs.Add(Errorf(key, "empty property name"))
		}
	}
}

// checkCommon validates the keys ReadConfig and WriteConfig share.
func CheckCommon(errs *Errors, table, catalogName string, catalogProps, configProps map[string]string) {
	if strings.TrimSpace(table) == "" {
		errs.Add(Errorf(KeyTable, "required"))
	}
	if strings.TrimSpace(catalogName) == "" {
		errs.Add(Errorf(KeyCatalogName, "required"))
	}
	CheckTableName(errs, table)
	switch typ := strings.ToLower(strings.TrimSpace(catalogProps["type"])); {
	case typ == "":
		errs.Add(Errorf(KeyCatalogProperties+".type", "required: the catalog type (%s)", strings.Join(CatalogTypes, ", ")))
	case !slices.Contains(CatalogTypes, typ):
		errs.Add(Errorf(KeyCatalogProperties+".type", "unknown catalog type %q (want one of %s)",
			catalogProps["type"], strings.Join(CatalogTypes, ", ")))
	}
	CheckMapKeys(errs, KeyCatalogProperties, catalogProps)
	CheckCatalogProperties(errs, catalogProps)
	if len(configProps) > 0 {
		errs.Add(&ConfigError{Key: KeyConfigProperties, Err: fmt.Errorf(
			"%w: Hadoop configuration is not used by icebeam; put storage settings in catalog_properties",
			ErrUnsupported)})
	}
}

// CatalogTypes are the accepted values of catalog_properties.type (compared without
// case and surrounding space).
var CatalogTypes = []string{"sql", "rest", "hadoop", "glue", "hive"}

// checkTableName reports a table identifier (or write template) with an empty part, such
// as "a..b", "a.b." or ".a.b". Dots inside {column} placeholders are column paths, not
// separators. A blank name is reported by checkCommon as required.
func CheckTableName(errs *Errors, table string) {
	if Blank(table) {
		return
	}
	var b strings.Builder
	depth := 0
	for _, r := range table {
		switch {
		case r == '{':
			depth++
			b.WriteRune('x')
		case r == '}' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	for i, p := range strings.Split(b.String(), ".") {
		if Blank(p) {
			errs.Add(Errorf(KeyTable, "%q has an empty part at position %d: want <namespace>.<table>", table, i+1))
			return
		}
	}
}

// checkSinkID reports a sink id that cannot be part of a snapshot summary key: it must be
// valid UTF-8 without control characters (C0, DEL, C1), and not blank.
func CheckSinkID(errs *Errors, id string) {
	if id == "" {
		return
	}
	if !utf8.ValidString(id) {
		errs.Add(Errorf(KeySinkID, "%q is not valid UTF-8; %s", id, sinkIDAlphabet))
		return
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			errs.Add(Errorf(KeySinkID, "%q has control character %U at byte %d; %s", id, r, i, sinkIDAlphabet))
			return
		}
	}
	if Blank(id) {
		errs.Add(Errorf(KeySinkID, "blank sink id"))
	}
}

// sinkIDAlphabet names the characters a sink id may hold.
const sinkIDAlphabet = "a sink id may hold printable UTF-8 characters (letters, digits, punctuation, symbols and spaces), no control characters (U+0000-U+001F, U+007F-U+009F)"

// checkExclusive reports that at most one of the set keys may be given.
func CheckExclusive(errs *Errors, set map[string]bool, keys ...string) {
	var given []string
	for _, k := range keys {
		if set[k] {
			given = append(given, k)
		}
	}
	if len(given) > 1 {
		errs.Add(Errorf(given[1], "%s are mutually exclusive; set only one", strings.Join(given, " and ")))
	}
}

// checkIntRange reports a set integer outside [lo, hi].
func CheckIntRange(errs *Errors, key string, v *int, lo, hi int) {
	if v == nil {
		return
	}
	switch {
	case *v < lo && *v < 0:
		errs.Add(Errorf(key, "must not be negative, got %d", *v))
	case *v < lo:
		errs.Add(Errorf(key, "must be at least %d, got %d", lo, *v))
	case *v > hi:
		errs.Add(Errorf(key, "must be at most %d, got %d", hi, *v))
	}
}

// ParseTimestamp reads an as_of_timestamp value: an RFC 3339 timestamp or a count of
// milliseconds since the Unix epoch. Times before the epoch are rejected.
func ParseTimestamp(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, fmt.Errorf("epoch milliseconds must not be negative, got %d", ms)
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 timestamp (2006-01-02T15:04:05Z) or epoch milliseconds, got %q", s)
	}
	if t.Before(time.Unix(0, 0)) {
		return time.Time{}, fmt.Errorf("timestamp %q is before the Unix epoch", s)
	}
	return t, nil
}

// blank reports whether s is empty or only white space.
func Blank(s string) bool { return strings.TrimSpace(s) == "" }

// flatten expands joined errors (such as those of ParsePartitionFields) so that the
// result lists every ConfigError at one level.
func Flatten(errs Errors) Errors {
	var out Errors
	for _, e := range errs {
		if j, ok := e.(joined); ok {
			out = append(out, Flatten(Errors(j))...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// merge combines decoding errors with validation errors. A validation error about a key
// that already failed to decode is left out (it would only repeat the problem, e.g.
// "required" for a table given with the wrong type).
func merge(decodeErrs Errors, validation error) Errors {
	out := Flatten(decodeErrs)
	bad := map[string]bool{}
	for _, e := range out {
		if ce, ok := e.(*ConfigError); ok {
			bad[rootKey(ce.Key)] = true
		}
	}
	var vs Errors
	vs.Add(validation)
	for _, e := range Flatten(vs) {
		if ce, ok := e.(*ConfigError); ok && bad[rootKey(ce.Key)] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// rootKey returns the managed key of an error key such as "catalog_properties.type".
func rootKey(k string) string {
	if i := strings.IndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return k
}
