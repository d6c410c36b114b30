package iceberg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

func TestParseReadConfigAccepts(t *testing.T) {
	tests := []struct {
		name string
		m    map[string]any
		want func(c ReadConfig) bool
	}{
		{"minimal", baseRead(), func(c ReadConfig) bool {
			return c.Table == "shop.orders" && c.CatalogName == "lake" && c.CatalogProperties["type"] == "sql"
		}},
		{"keep as []any", withKeys(baseRead(), KeyKeep, []any{"a", "b"}), func(c ReadConfig) bool {
			return reflect.DeepEqual(c.Keep, []string{"a", "b"})
		}},
		{"drop as []string", withKeys(baseRead(), KeyDrop, []string{"a"}), func(c ReadConfig) bool {
			return reflect.DeepEqual(c.Drop, []string{"a"})
		}},
		{"empty list is unset", withKeys(baseRead(), KeyKeep, []any{}), func(c ReadConfig) bool { return c.Keep == nil }},
		{"null is unset", withKeys(baseRead(), KeyFilter, nil, KeyBranch, nil), func(c ReadConfig) bool { return c.Filter == "" }},
		{"filter", withKeys(baseRead(), KeyFilter, "id > 5 AND status = 'ACTIVE'"), func(c ReadConfig) bool {
			return c.Filter == "id > 5 AND status = 'ACTIVE'"
		}},
		{"snapshot id from float64", withKeys(baseRead(), KeySnapshotID, float64(1234)), func(c ReadConfig) bool {
			return c.SnapshotID != nil && *c.SnapshotID == 1234
		}},
		{"snapshot id int64", withKeys(baseRead(), KeySnapshotID, int64(8744736658442914487)), func(c ReadConfig) bool {
			return *c.SnapshotID == 8744736658442914487
		}},
		{"as of RFC 3339", withKeys(baseRead(), KeyAsOfTimestamp, "2024-05-01T10:00:00Z"), func(c ReadConfig) bool {
			t, err := c.AsOf()
			return err == nil && t.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
		}},
		{"as of epoch millis int", withKeys(baseRead(), KeyAsOfTimestamp, 1714557600000), func(c ReadConfig) bool {
			t, err := c.AsOf()
			return c.AsOfTimestamp == "1714557600000" && err == nil && t.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
		}},
		{"as of time.Time from YAML", withKeys(baseRead(), KeyAsOfTimestamp, time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)), func(c ReadConfig) bool {
			return c.AsOfTimestamp == "2024-05-01T10:00:00Z"
		}},
		{"branch", withKeys(baseRead(), KeyBranch, "audit"), func(c ReadConfig) bool { return c.Branch == "audit" }},
		{"catalog props map[any]any", withKeys(baseRead(), KeyCatalogProperties, map[any]any{"type": "rest"}), func(c ReadConfig) bool {
			return c.CatalogProperties["type"] == "rest"
		}},
		{"streaming", withKeys(baseRead(), KeyStreaming, true), func(c ReadConfig) bool {
			return c.Streaming && c.PollInterval() == DefaultPollIntervalSeconds*time.Second && c.Strategy() == StartEarliest
		}},
		{"streaming with poll and range", withKeys(baseRead(), KeyStreaming, true, KeyPollIntervalSeconds, 1,
			KeyFromSnapshot, int64(8744736658442914487), KeyToTimestamp, 1714557600000), func(c ReadConfig) bool {
			return c.PollInterval() == time.Second && *c.FromSnapshot == 8744736658442914487 && *c.ToTimestamp == 1714557600000
		}},
		{"streaming latest to snapshot", withKeys(baseRead(), KeyStreaming, true, KeyStartingStrategy, "latest", KeyToSnapshot, 3), func(c ReadConfig) bool {
			return c.Strategy() == StartLatest && *c.ToSnapshot == 3
		}},
		{"streaming from timestamp", withKeys(baseRead(), KeyStreaming, true, KeyFromTimestamp, 1000, KeyFilter, "a > 1", KeyKeep, []any{"a"}), func(c ReadConfig) bool {
			return *c.FromTimestamp == 1000
		}},
		{"not streaming", withKeys(baseRead(), KeyStreaming, false), func(c ReadConfig) bool { return !c.Streaming }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseReadConfig(tt.m)
			if err != nil {
				t.Fatalf("ParseReadConfig: %v", err)
			}
			if !tt.want(c) {
				t.Errorf("unexpected config %+v", c)
			}
			back, err := ParseReadConfig(c.Map())
			if err != nil {
				t.Fatalf("ParseReadConfig(Map()): %v", err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Errorf("round trip: got %+v, want %+v", back, c)
			}
		})
	}
}

func TestParseReadConfigRejects(t *testing.T) {
	tests := []struct {
		name   string
		m      map[string]any
		substr string
		keys   []string
	}{
		{"missing table", withKeys(baseRead(), KeyTable, nil), "required", []string{KeyTable}},
		{"blank table", withKeys(baseRead(), KeyTable, "  "), "required", []string{KeyTable}},
		{"template on read", withKeys(baseRead(), KeyTable, "db.t_{region}"), "only for writes", []string{KeyTable}},
		{"missing catalog name", withKeys(baseRead(), KeyCatalogName, nil), "required", []string{KeyCatalogName}},
		{"missing catalog type", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"uri": "x"}), "type", []string{"catalog_properties.type"}},
		{"no catalog properties", withKeys(baseRead(), KeyCatalogProperties, nil), "", []string{"catalog_properties.type"}},
		{"unknown key with hint", withKeys(baseRead(), "fliter", "a = 1"), `did you mean "filter"`, []string{"fliter"}},
		{"camel case hint", withKeys(baseRead(), "catalogName", "x"), `did you mean "catalog_name"`, []string{"catalogName"}},
		{"write key on read", withKeys(baseRead(), KeyMode, "append"), "is a write key", []string{KeyMode}},
		{"unknown key no hint", withKeys(baseRead(), "zzzzzzzzzzz", 1), "unknown key", []string{"zzzzzzzzzzz"}},
		{"table wrong type", withKeys(baseRead(), KeyTable, 5), "want a string, got an integer", []string{KeyTable}},
		{"keep wrong type", withKeys(baseRead(), KeyKeep, "a,b"), "want a list", []string{KeyKeep}},
		{"keep element wrong type", withKeys(baseRead(), KeyKeep, []any{"a", 3}), "element 1", []string{KeyKeep}},
		{"catalog property not string", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"type": "sql", "x": true}), "want a string value, got a boolean", []string{"catalog_properties.x"}},
		{"catalog properties not map", withKeys(baseRead(), KeyCatalogProperties, []any{"type"}), "want a map", []string{KeyCatalogProperties}},
		{"map with int key", withKeys(baseRead(), KeyCatalogProperties, map[any]any{"type": "sql", 1: "x"}), "string keys", []string{KeyCatalogProperties}},
		{"config properties unsupported", withKeys(baseRead(), KeyConfigProperties, map[string]any{"fs.defaultFS": "hdfs://x"}), "Hadoop configuration is not used", []string{KeyConfigProperties}},
		{"keep and drop", withKeys(baseRead(), KeyKeep, []any{"a"}, KeyDrop, []any{"b"}), "mutually exclusive", []string{KeyDrop}},
		{"empty column", withKeys(baseRead(), KeyKeep, []any{"a", ""}), "empty column", []string{KeyKeep}},
		{"duplicate column", withKeys(baseRead(), KeyDrop, []any{"a", "a"}), "duplicate", []string{KeyDrop}},
		{"snapshot and as of", withKeys(baseRead(), KeySnapshotID, 7, KeyAsOfTimestamp, "2024-01-01T00:00:00Z"), "mutually exclusive", []string{KeyAsOfTimestamp}},
		{"snapshot and branch", withKeys(baseRead(), KeySnapshotID, 7, KeyBranch, "b"), "mutually exclusive", []string{KeyBranch}},
		{"negative snapshot", withKeys(baseRead(), KeySnapshotID, -3), "positive", []string{KeySnapshotID}},
		{"zero snapshot", withKeys(baseRead(), KeySnapshotID, 0), "positive", []string{KeySnapshotID}},
		{"fractional snapshot", withKeys(baseRead(), KeySnapshotID, 1.5), "fractional", []string{KeySnapshotID}},
		{"quoted snapshot", withKeys(baseRead(), KeySnapshotID, "12"), "remove the quotes", []string{KeySnapshotID}},
		{"bad timestamp", withKeys(baseRead(), KeyAsOfTimestamp, "yesterday"), "RFC 3339", []string{KeyAsOfTimestamp}},
		{"negative epoch", withKeys(baseRead(), KeyAsOfTimestamp, -5), "negative", []string{KeyAsOfTimestamp}},
		{"as of bool", withKeys(baseRead(), KeyAsOfTimestamp, true), "epoch milliseconds", []string{KeyAsOfTimestamp}},
		{"bool for string", withKeys(baseRead(), KeyBranch, true), "got a boolean", []string{KeyBranch}},
		{"poll without streaming", withKeys(baseRead(), KeyPollIntervalSeconds, 5), "set streaming: true", []string{KeyPollIntervalSeconds}},
		{"poll with streaming false", withKeys(baseRead(), KeyStreaming, false, KeyPollIntervalSeconds, 5), "set streaming: true", []string{KeyPollIntervalSeconds}},
		{"zero poll", withKeys(baseRead(), KeyStreaming, true, KeyPollIntervalSeconds, 0), "at least 1", []string{KeyPollIntervalSeconds}},
		{"negative poll", withKeys(baseRead(), KeyStreaming, true, KeyPollIntervalSeconds, -1), "negative", []string{KeyPollIntervalSeconds}},
		{"poll beyond int32", withKeys(baseRead(), KeyStreaming, true, KeyPollIntervalSeconds, int64(1)<<40), "", []string{KeyPollIntervalSeconds}},
		{"streaming not a boolean", withKeys(baseRead(), KeyStreaming, "true"), "boolean", []string{KeyStreaming}},
		{"from snapshot without streaming", withKeys(baseRead(), KeyFromSnapshot, 5), "streaming: true", []string{KeyFromSnapshot}},
		{"range without streaming", withKeys(baseRead(), KeyToTimestamp, 5, KeyStartingStrategy, "latest"), "streaming: true",
			[]string{KeyToTimestamp, KeyStartingStrategy}},
		{"streaming with snapshot id", withKeys(baseRead(), KeyStreaming, true, KeySnapshotID, 7), "not with streaming", []string{KeySnapshotID}},
		{"streaming with as of and branch", withKeys(baseRead(), KeyStreaming, true, KeyAsOfTimestamp, 7, KeyBranch, "b"), "not with streaming",
			[]string{KeyAsOfTimestamp, KeyBranch, KeyBranch}},
		{"streaming with two starts", withKeys(baseRead(), KeyStreaming, true, KeyFromSnapshot, 1, KeyStartingStrategy, "latest"), "mutually exclusive",
			[]string{KeyStartingStrategy}},
		{"streaming with two ends", withKeys(baseRead(), KeyStreaming, true, KeyToSnapshot, 1, KeyToTimestamp, 5), "mutually exclusive",
			[]string{KeyToTimestamp}},
		{"streaming bad strategy", withKeys(baseRead(), KeyStreaming, true, KeyStartingStrategy, "oldest"), "earliest", []string{KeyStartingStrategy}},
		{"streaming bad ids", withKeys(baseRead(), KeyStreaming, true, KeyFromSnapshot, 0, KeyToTimestamp, -1), "",
			[]string{KeyFromSnapshot, KeyToTimestamp}},
		{"streaming from after to", withKeys(baseRead(), KeyStreaming, true, KeyFromTimestamp, 9, KeyToTimestamp, 5), "after to_timestamp",
			[]string{KeyFromTimestamp}},
		{"many problems at once",
			map[string]any{KeyKeep: []any{"a"}, KeyDrop: []any{"a", "a"}, "tabel": "x", KeyFilter: 3, KeyConfigProperties: map[string]any{"a": "b"}},
			"configuration problems",
			[]string{KeyTable, KeyCatalogName, "catalog_properties.type", KeyDrop, KeyDrop, "tabel", KeyFilter, KeyConfigProperties}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseReadConfig(tt.m)
			wantErrorKeys(t, err, tt.substr, tt.keys...)
			if !reflect.DeepEqual(c, ReadConfig{}) {
				t.Errorf("config on error = %+v, want zero", c)
			}
		})
	}
}

func TestReadValidateTyped(t *testing.T) {
	base := ReadConfig{Table: "t", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"}}
	if err := base.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	neg := int64(-1)
	tests := []struct {
		name string
		c    ReadConfig
		keys []string
	}{
		{"output type not struct", changed(base, func(c *ReadConfig) { c.OutputType = reflect.TypeFor[int]() }), []string{"OutputType"}},
		{"negative snapshot", changed(base, func(c *ReadConfig) { c.SnapshotID = &neg }), []string{KeySnapshotID}},
		{"zero time", changed(base, func(c *ReadConfig) { c.AsOfTimestamp = time.Time{}.Format(time.RFC3339Nano) }), []string{KeyAsOfTimestamp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErrorKeys(t, tt.c.Validate(), "", tt.keys...)
		})
	}
	t.Run("struct output type", func(t *testing.T) {
		c := changed(base, func(c *ReadConfig) { c.OutputType = reflect.TypeFor[struct{ A int }]() })
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Map()["OutputType"]; ok || len(c.Map()) != 3 {
			t.Errorf("Map() = %v, want only the three set keys", c.Map())
		}
	})
}

func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "hunter2-SECRET-VALUE"
	tests := []struct {
		name string
		m    map[string]any
	}{
		{"wrong typed secret", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"type": "rest", "credential": []any{secret}})},
		{"missing type with secret", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"token": secret})},
		{"secret in config_properties", withKeys(baseRead(), KeyConfigProperties, map[string]any{"fs.s3a.secret.key": secret})},
		{"empty key", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"type": "rest", "": secret})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReadConfig(tt.m)
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks a secret: %v", err)
			}
			_, werr := ParseWriteConfig(tt.m)
			if werr == nil || strings.Contains(werr.Error(), secret) {
				t.Errorf("write error %v: nil or leaks a secret", werr)
			}
		})
	}
}

func TestIsSecretKeyAndRedacted(t *testing.T) {
	for k, want := range map[string]bool{
		"s3.secret-access-key": true, "credential": true, "rest.auth.TOKEN": true, "gcs.oauth2.token": true,
		"password": true, "s3.access-key-id": true, "uri": false, "type": false, "warehouse": false,
	} {
		t.Run(k, func(t *testing.T) {
			if got := IsSecretKey(k); got != want {
				t.Errorf("IsSecretKey(%q) = %v, want %v", k, got, want)
			}
		})
	}
	r := config.Redacted(map[string]string{"uri": "u", "token": "t"})
	if r["uri"] != "u" || r["token"] != config.RedactedValue {
		t.Errorf("Redacted = %v", r)
	}
	if config.Redacted(nil) != nil {
		t.Error("config.Redacted(nil) != nil")
	}
}

func TestConfigErrorWrapsCause(t *testing.T) {
	_, err := ParseReadConfig(withKeys(baseRead(), KeyConfigProperties, map[string]any{"a": "b"}))
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("error %v should wrap ErrUnsupported and ErrInvalidConfig", err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != KeyConfigProperties {
		t.Errorf("errors.As: %v", ce)
	}
}

func TestReadAccessors(t *testing.T) {
	id := int64(99)
	tests := []struct {
		name   string
		c      ReadConfig
		millis int64
		snap   int64
		err    bool
	}{
		{"unset", ReadConfig{}, 0, 0, false},
		{"rfc3339", ReadConfig{AsOfTimestamp: "1970-01-01T00:00:01.5Z", SnapshotID: &id}, 1500, 99, false},
		{"millis", ReadConfig{AsOfTimestamp: "1714557600000"}, 1714557600000, 0, false},
		{"bad", ReadConfig{AsOfTimestamp: "x"}, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := tt.c.AsOfMillis()
			if (err != nil) != tt.err || ms != tt.millis {
				t.Errorf("AsOfMillis() = %d, %v; want %d, error %v", ms, err, tt.millis, tt.err)
			}
			if got := tt.c.SnapshotIDValue(); got != tt.snap {
				t.Errorf("SnapshotIDValue() = %d, want %d", got, tt.snap)
			}
		})
	}
}
