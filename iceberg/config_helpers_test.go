package iceberg

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
)

// baseRead returns a valid read map; callers add or change keys.
func baseRead() map[string]any {
	return map[string]any{
		KeyTable:             "shop.orders",
		KeyCatalogName:       "lake",
		KeyCatalogProperties: map[string]any{"type": "sql", "uri": "sqlite://x"},
	}
}

// baseWrite returns a valid write map; callers add or change keys.
func baseWrite() map[string]any {
	m := baseRead()
	return m
}

// with returns a copy of m with kv (key, value, key, value...) set; a nil value deletes.
func withKeys(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(out, k)
			continue
		}
		out[k] = kv[i+1]
	}
	return out
}

// configErrors returns every *ConfigError inside err.
func configErrors(err error) []*ConfigError {
	var out []*ConfigError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ce, ok := e.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range u.Unwrap() {
				walk(x)
			}
			return
		}
		walk(errors.Unwrap(e))
	}
	walk(err)
	return out
}

// errorKeys returns the sorted keys named by the ConfigErrors in err.
func errorKeys(err error) []string {
	var ks []string
	for _, ce := range configErrors(err) {
		ks = append(ks, ce.Key)
	}
	sort.Strings(ks)
	return ks
}

// wantErrorKeys fails unless err is an ErrInvalidConfig naming exactly keys (in any order)
// and, when substr is not empty, its message contains substr.
func wantErrorKeys(t *testing.T, err error, substr string, keys ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want errors for %v", keys)
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("error %v does not wrap ErrInvalidConfig", err)
	}
	got := errorKeys(err)
	want := slices.Clone(keys)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("error keys = %v, want %v\nerror: %v", got, want, err)
	}
	if substr != "" && !strings.Contains(err.Error(), substr) {
		t.Errorf("error %q does not contain %q", err, substr)
	}
}

// changed returns a copy of c changed by f.
func changed[C any](c C, f func(*C)) C {
	f(&c)
	return c
}
