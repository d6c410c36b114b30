package iceberg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
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
		{KeyStreaming, "yes", ErrInvalidConfig},
		{KeyPollIntervalSeconds, 30, ErrInvalidConfig}, // without streaming
		{KeyPollIntervalSeconds, 1.5, ErrInvalidConfig},
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
	err := ChangesConfig{
		Table: "db.t", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"}, Keep: []string{"a"}, Drop: []string{"b"},
		FromTimestamp: &from, ToTimestamp: &to, StartingStrategy: StartLatest,
	}.Validate()
	for _, k := range []string{KeyFromTimestamp, KeyStartingStrategy, KeyDrop} {
		if !hasKey(err, k) {
			t.Errorf("%v: no error for %q", err, k)
		}
	}
}

// hasKey reports whether err holds a ConfigError for key.
func hasKey(err error, key string) bool {
	if ce, ok := err.(*ConfigError); ok {
		return ce.Key == key
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasKey(e, key) {
				return true
			}
		}
		return false
	}
	var ce *ConfigError
	return errors.As(err, &ce) && ce.Key == key
}

// TestChangesConfigStreaming checks the continuous read's keys: streaming with or
// without a poll interval and a range is valid, a poll interval needs streaming and
// at least one second, and errors name the key.
func TestChangesConfigStreaming(t *testing.T) {
	ok := []map[string]any{
		{KeyStreaming: true},
		{KeyStreaming: false},
		{KeyStreaming: true, KeyPollIntervalSeconds: 1},
		{KeyStreaming: true, KeyPollIntervalSeconds: int64(3600), KeyFromSnapshot: 5, KeyToTimestamp: 9000},
		{KeyStreaming: true, KeyStartingStrategy: "latest", KeyToSnapshot: 7},
	}
	for _, kv := range ok {
		m := changesBase()
		for k, v := range kv {
			m[k] = v
		}
		c, err := ParseChangesConfig(m)
		if err != nil {
			t.Errorf("%v: %v", kv, err)
			continue
		}
		back, err := ParseChangesConfig(c.Map())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%v: round trip %+v, %v", kv, back, err)
		}
	}
	bad := []struct {
		kv     map[string]any
		key    string
		substr string
	}{
		{map[string]any{KeyPollIntervalSeconds: 10}, KeyPollIntervalSeconds, "streaming: true"},
		{map[string]any{KeyStreaming: false, KeyPollIntervalSeconds: 10}, KeyPollIntervalSeconds, "streaming: true"},
		{map[string]any{KeyStreaming: true, KeyPollIntervalSeconds: 0}, KeyPollIntervalSeconds, "at least 1"},
		{map[string]any{KeyStreaming: true, KeyPollIntervalSeconds: -5}, KeyPollIntervalSeconds, "negative"},
		{map[string]any{KeyStreaming: true, KeyPollIntervalSeconds: "60"}, KeyPollIntervalSeconds, "quotes"},
		{map[string]any{KeyStreaming: 1}, KeyStreaming, "boolean"},
	}
	for _, b := range bad {
		m := changesBase()
		for k, v := range b.kv {
			m[k] = v
		}
		_, err := ParseChangesConfig(m)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != b.key || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), b.substr) {
			t.Errorf("%v: error %v, want a ConfigError for %q mentioning %q", b.kv, err, b.key, b.substr)
		}
	}
	secs := 7
	c := ChangesConfig{PollIntervalSeconds: &secs}
	if c.PollInterval() != 7*time.Second || (ChangesConfig{}).PollInterval() != DefaultPollIntervalSeconds*time.Second {
		t.Errorf("PollInterval() = %v, default %v", c.PollInterval(), ChangesConfig{}.PollInterval())
	}
}
