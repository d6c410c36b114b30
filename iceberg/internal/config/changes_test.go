package config

import (
	"errors"
	"reflect"
	"testing"
)

func changesBase() map[string]any {
	return map[string]any{"table": "db.t", "catalog_name": "c", "catalog_properties": map[string]any{"type": "sql"}}
}

func TestChangesConfigRoundTrip(t *testing.T) {
	m := changesBase()
	m["filter"] = "id > 1"
	m["drop"] = []any{"x"}
	m["from_timestamp"] = 1000
	m["to_snapshot"] = int64(1) << 60
	c, err := ParseChangesConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseChangesConfig(c.Map())
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, c)
	}
	js, err := ParseChangesConfigJSON([]byte(`{"table":"db.t","catalog_name":"c","catalog_properties":{"type":"sql"},"from_snapshot":1152921504606846977}`))
	if err != nil || *js.FromSnapshot != 1152921504606846977 {
		t.Errorf("JSON keeps 64-bit ids: %v, %v", js.FromSnapshot, err)
	}
	if c.Strategy() != StartEarliest {
		t.Errorf("default strategy %q", c.Strategy())
	}
}

func TestChangesConfigErrors(t *testing.T) {
	cases := []struct {
		key      string
		val      any
		sentinel error
	}{
		{KeyFromSnapshot, 0, ErrInvalidConfig},
		{KeyToSnapshot, -3, ErrInvalidConfig},
		{KeyFromTimestamp, -1, ErrInvalidConfig},
		{KeyToTimestamp, "soon", ErrInvalidConfig},
		{KeyStartingStrategy, "middle", ErrInvalidConfig},
		{KeyStreaming, true, ErrUnsupported},
		{KeyPollIntervalSeconds, 30, ErrUnsupported},
		{KeySnapshotID, int64(5), ErrInvalidConfig},    // a read key, not a changes key
		{KeyMode, "append", ErrInvalidConfig},          // a write key
		{"from_snapshots", int64(5), ErrInvalidConfig}, // typo
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			m := changesBase()
			m[c.key] = c.val
			_, err := ParseChangesConfig(m)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != c.key || !errors.Is(err, c.sentinel) {
				t.Errorf("error %v: want a ConfigError for %q wrapping %v", err, c.key, c.sentinel)
			}
		})
	}
	from, to := int64(5), int64(4)
	err := ChangesConfig{Table: "db.t", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"},
		FromTimestamp: &from, ToTimestamp: &to, StartingStrategy: StartLatest, Keep: []string{"a"}, Drop: []string{"b"}}.Validate()
	for _, k := range []string{KeyFromTimestamp, KeyStartingStrategy, KeyDrop} {
		if !hasKey(err, k) {
			t.Errorf("%v: no error for %q", err, k)
		}
	}
}

// hasKey reports whether err holds a ConfigError for key.
func hasKey(err error, key string) bool {
	if j, ok := err.(joined); ok {
		for _, e := range j {
			if hasKey(e, key) {
				return true
			}
		}
		return false
	}
	var ce *ConfigError
	return errors.As(err, &ce) && ce.Key == key
}
