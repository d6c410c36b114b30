package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// tagName is the struct tag that names a field's managed key.
const tagName = "managed"

// fieldKind is how a managed value is decoded and encoded.
type fieldKind int

const (
	kindString    fieldKind = iota // string or a named string type
	kindBool                       // bool
	kindInt                        // *int, range of int32 (the managed type)
	kindInt64                      // *int64
	kindList                       // []string
	kindMap                        // map[string]string
	kindTimestamp                  // string holding RFC 3339 or epoch millis; numbers accepted
)

// field is one managed key of a config struct.
type field struct {
	key   string
	index []int // for reflect.Value.FieldByIndex: a field of an embedded struct (Range) has two
	kind  fieldKind
}

// Schema describes the managed fields of a config struct (package iceberg's
// ReadConfig, WriteConfig, ChangesConfig and MaintainConfig), derived from the struct
// tags so that the tags are the single source of truth for key names.
type Schema struct {
	name   string // "read" or "write"
	keys   []string
	fields map[string]field
}

var (
	stringsType = reflect.TypeFor[[]string]()
	mapType     = reflect.TypeFor[map[string]string]()
	intPtrType  = reflect.TypeFor[*int]()
	int64PtrTyp = reflect.TypeFor[*int64]()
)

// NewSchema returns the schema of the config struct type t, named name ("read",
// "write", ...) in messages. It panics on a managed field of a type it cannot decode or
// a key tagged twice: a programming error.
func NewSchema(name string, t reflect.Type) Schema {
	s := Schema{name: name, fields: map[string]field{}}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue // its fields follow
		}
		key := f.Tag.Get(tagName)
		if key == "" || key == "-" {
			continue
		}
		var k fieldKind
		switch {
		case key == KeyAsOfTimestamp && f.Type.Kind() == reflect.String:
			k = kindTimestamp
		case f.Type.Kind() == reflect.String:
			k = kindString
		case f.Type.Kind() == reflect.Bool:
			k = kindBool
		case f.Type == intPtrType:
			k = kindInt
		case f.Type == int64PtrTyp:
			k = kindInt64
		case f.Type == stringsType:
			k = kindList
		case f.Type == mapType:
			k = kindMap
		default:
			panic(fmt.Sprintf("config: field %s.%s has unsupported type %s", t.Name(), f.Name, f.Type))
		}
		if _, dup := s.fields[key]; dup {
			panic(fmt.Sprintf("config: key %q tagged twice in %s", key, t.Name()))
		}
		s.keys = append(s.keys, key)
		s.fields[key] = field{key: key, index: f.Index, kind: k}
	}
	return s
}

// Parse decodes m into a C with s (other is another transform's schema, for hints)
// and validates the result; every problem is reported at once. It is the body of every
// ParseXConfig.
func Parse[C interface{ Validate() error }](s Schema, m map[string]any, other Schema) (C, error) {
	var c C
	errs := s.decode(m, reflect.ValueOf(&c), other)
	if err := merge(errs, c.Validate()).Err(); err != nil {
		var zero C
		return zero, err
	}
	return c, nil
}

// decode sets the fields of dst (a pointer to the config struct) from m, collecting one
// ConfigError per problem. other is the schema of the other transform, used for hints.
func (s Schema) decode(m map[string]any, dst reflect.Value, other Schema) Errors {
	var errs Errors
	v := dst.Elem()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		raw := m[key]
		f, ok := s.fields[key]
		if !ok {
			errs.Add(s.unknownKey(key, other))
			continue
		}
		if raw == nil {
			continue // YAML "key:" or JSON null: not set
		}
		errs.Add(decodeField(f, raw, v.FieldByIndex(f.index)))
	}
	return errs
}

func (s Schema) unknownKey(key string, other Schema) error {
	if _, ok := other.fields[key]; ok {
		return Errorf(key, "unknown key: %q is a %s key, not a %s key", key, other.name, s.name)
	}
	if hint := Closest(key, s.keys); hint != "" {
		return Errorf(key, "unknown key (did you mean %q?)", hint)
	}
	return Errorf(key, "unknown key")
}

func decodeField(f field, raw any, out reflect.Value) error {
	switch f.kind {
	case kindString:
		s, err := asString(raw)
		if err != nil {
			return &ConfigError{Key: f.key, Err: err}
		}
		out.SetString(s)
	case kindTimestamp:
		s, err := asTimestamp(raw)
		if err != nil {
			return &ConfigError{Key: f.key, Err: err}
		}
		out.SetString(s)
	case kindBool:
		b, ok := raw.(bool)
		if !ok {
			return Errorf(f.key, "want a boolean, got %s", describe(raw))
		}
		out.SetBool(b)
	case kindInt:
		n, err := asInt(raw)
		if err != nil {
			return &ConfigError{Key: f.key, Err: err}
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return Errorf(f.key, "%d is out of range (a 32-bit integer)", n)
		}
		i := int(n)
		out.Set(reflect.ValueOf(&i))
	case kindInt64:
		n, err := asInt(raw)
		if err != nil {
			return &ConfigError{Key: f.key, Err: err}
		}
		out.Set(reflect.ValueOf(&n))
	case kindList:
		l, err := asList(f.key, raw)
		if err != nil {
			return err
		}
		out.Set(reflect.ValueOf(l))
	case kindMap:
		mm, err := asMap(f.key, raw)
		if err != nil {
			return err
		}
		out.Set(reflect.ValueOf(mm))
	}
	return nil
}

// Keys returns the managed keys of s, in field order.
func (s Schema) Keys() []string { return append([]string(nil), s.keys...) }

// Has reports whether key is a key of s.
func (s Schema) Has(key string) bool {
	_, ok := s.fields[key]
	return ok
}

// SetDefault sets the field of key in v (an addressable config struct) to def, a
// value as a managed map holds it, unless the field is set already.
func (s Schema) SetDefault(v reflect.Value, key string, def any) {
	if s.IsSet(v, key) {
		return
	}
	f := s.fields[key]
	if err := decodeField(f, def, v.FieldByIndex(f.index)); err != nil {
		panic(fmt.Sprintf("config: bad default for %s: %v", key, err))
	}
}

// Encode returns the managed map of the set fields of v (a config struct value): the
// inverse of Parse.
func (s Schema) Encode(v reflect.Value) map[string]any {
	m := map[string]any{}
	for _, key := range s.keys {
		f := s.fields[key]
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case kindString, kindTimestamp:
			if fv.String() != "" {
				m[key] = fv.String()
			}
		case kindBool:
			if fv.Bool() {
				m[key] = true
			}
		case kindInt:
			if !fv.IsNil() {
				m[key] = int(fv.Elem().Int())
			}
		case kindInt64:
			if !fv.IsNil() {
				m[key] = fv.Elem().Int()
			}
		case kindList:
			if fv.Len() > 0 {
				m[key] = append([]string(nil), fv.Interface().([]string)...)
			}
		case kindMap:
			if fv.Len() > 0 {
				src := fv.Interface().(map[string]string)
				cp := make(map[string]string, len(src))
				for k, val := range src {
					cp[k] = val
				}
				m[key] = cp
			}
		}
	}
	return m
}

// IsSet reports whether the field of key holds a value (non-zero) in v.
func (s Schema) IsSet(v reflect.Value, key string) bool {
	return !v.FieldByIndex(s.fields[key].index).IsZero()
}

// describe names the type of a decoded value without printing the value, so that secrets
// never reach an error message.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return "an integer"
	case float32, float64:
		return "a number"
	case []any, []string:
		return "a list"
	case map[string]any, map[string]string, map[any]any:
		return "a map"
	case time.Time:
		return "a timestamp"
	}
	return fmt.Sprintf("a value of Go type %T", v)
}

func asString(v any) (string, error) {
	if s, ok := v.(string); ok {
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("string is not valid UTF-8")
		}
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %s", describe(v))
}

// asInt accepts the integer forms YAML and JSON decoders produce, and plain Go integers.
func asInt(v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint:
		return uintToInt(uint64(n))
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		return uintToInt(n)
	case float32:
		return floatToInt(float64(n))
	case float64:
		return floatToInt(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("want an integer, got a malformed number")
		}
		return floatToInt(f)
	case string:
		if _, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil {
			return 0, fmt.Errorf("want an integer, got a string (remove the quotes)")
		}
	}
	return 0, fmt.Errorf("want an integer, got %s", describe(v))
}

func uintToInt(u uint64) (int64, error) {
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("integer is out of range")
	}
	return int64(u), nil
}

// floatToInt accepts float64 values with an integral value, as JSON decoders produce.
func floatToInt(f float64) (int64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, fmt.Errorf("want an integer, got a fractional number")
	}
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("integer is out of range")
	}
	return int64(f), nil
}

// asTimestamp accepts an RFC 3339 string, epoch milliseconds (integer or decimal string) and
// a time.Time (YAML decodes unquoted timestamps to it). The result is a string; Validate
// checks it.
func asTimestamp(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return asString(t)
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano), nil
	}
	n, err := asInt(v)
	if err != nil {
		return "", fmt.Errorf("want an RFC 3339 timestamp or epoch milliseconds, got %s", describe(v))
	}
	return strconv.FormatInt(n, 10), nil
}

func asList(key string, v any) ([]string, error) {
	switch l := v.(type) {
	case []string:
		anys := make([]any, len(l))
		for i, s := range l {
			anys[i] = s
		}
		return asList(key, anys)
	case []any:
		if len(l) == 0 {
			return nil, nil
		}
		out := make([]string, len(l))
		var errs Errors
		for i, e := range l {
			s, err := asString(e)
			if err != nil {
				errs.Add(Errorf(key, "element %d: %w", i, err))
				continue
			}
			out[i] = s
		}
		if err := errs.Err(); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, Errorf(key, "want a list of strings, got %s", describe(v))
}

func asMap(key string, v any) (map[string]string, error) {
	var errs Errors
	out := map[string]string{}
	put := func(k string, val any) {
		if !utf8.ValidString(k) {
			errs.Add(Errorf(key, "property name is not valid UTF-8"))
			return
		}
		s, ok := val.(string)
		switch {
		case !ok:
			errs.Add(Errorf(key+"."+k, "want a string value, got %s (quote it)", describe(val)))
		case !utf8.ValidString(s):
			errs.Add(Errorf(key+"."+k, "value is not valid UTF-8"))
		default:
			out[k] = s
		}
	}
	switch mm := v.(type) {
	case map[string]string:
		for k, val := range mm {
			put(k, val)
		}
	case map[string]any:
		for k, val := range mm {
			put(k, val)
		}
	case map[any]any:
		for k, val := range mm {
			ks, ok := k.(string)
			if !ok {
				errs.Add(Errorf(key, "want string keys, got %s (quote it)", describe(k)))
				continue
			}
			put(ks, val)
		}
	default:
		return nil, Errorf(key, "want a map of strings, got %s", describe(v))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Closest returns the candidate nearest to key by edit distance (ignoring case, "_",
// "-", "." and spaces), or "" when none is close enough to suggest. Ties go to the
// earlier candidate. It is the one "did you mean" used for keys and column names.
func Closest(key string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(strings.ToLower(s))
	}
	nk := norm(key)
	if len(nk) > 64 {
		return ""
	}
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		d := levenshtein(nk, norm(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(nk) > 8 {
		limit = 3
	}
	if bestD <= limit {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
