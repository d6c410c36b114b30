package iceberg

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// split turns a fuzzed comma-separated string into a list value the way a YAML decoder
// would deliver it ([]any), or nil for the empty string.
func split(s string) any {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

// props turns "k=v;k2=v2" into a map[string]any, or nil for the empty string.
func props(s string) any {
	if s == "" {
		return nil
	}
	m := map[string]any{}
	for _, kv := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// checkRoundTrip asserts Parse(Map()) == cfg, that Map is stable, and that the JSON and
// YAML encodings of Map parse back to cfg.
func checkRoundTrip[C any](t *testing.T, cfg C, mapOf func(C) map[string]any,
	parse func(map[string]any) (C, error), parseJSON, parseYAML func([]byte) (C, error)) {
	t.Helper()
	m := mapOf(cfg)
	back, err := parse(m)
	if err != nil {
		t.Fatalf("Parse(Map()) rejected %v: %v", m, err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("Parse(Map()) = %+v, want %+v", back, cfg)
	}
	if m2 := mapOf(back); !reflect.DeepEqual(m2, m) {
		t.Fatalf("Map not stable: %v then %v", m, m2)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := parseJSON(js)
	if err != nil {
		t.Fatalf("JSON %s rejected: %v", js, err)
	}
	if !reflect.DeepEqual(fromJSON, cfg) {
		t.Fatalf("JSON round trip = %+v, want %+v", fromJSON, cfg)
	}
	ym, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var own map[string]any
	if err := yaml.Unmarshal(ym, &own); err != nil {
		// The YAML library cannot read what it wrote (a string starting with a line
		// break becomes a block scalar its parser rejects): nothing of ours to test.
		t.Logf("yaml cannot round-trip its own output %q: %v", ym, err)
		return
	}
	fromYAML, err := parseYAML(ym)
	if err != nil {
		t.Fatalf("YAML %s rejected: %v", ym, err)
	}
	if !reflect.DeepEqual(fromYAML, cfg) {
		t.Fatalf("YAML round trip of\n%s= %+v, want %+v", ym, fromYAML, cfg)
	}
}

func FuzzReadConfigRoundTrip(f *testing.F) {
	f.Add("shop.orders", "lake", "type=sql;uri=sqlite://x", "id > 5", "a,b", "", int64(0), "", "", false)
	f.Add("t", "c", "type=rest", "", "", "x", int64(42), "", "", true)
	f.Add("t", "c", "type=rest;token=s", "", "", "", int64(0), "2024-05-01T10:00:00.5+02:00", "", false)
	f.Add("t", "c", "type=rest", "", "", "", int64(0), "1714557600000", "", false)
	f.Add("t", "c", "type=x", "", "", "", int64(0), "", "dev", false)
	f.Add("", "", "", "", "a,a", "b", int64(-1), "nope", "b", true)
	f.Fuzz(func(t *testing.T, table, catalog, catProps, filter, keep, drop string, snap int64, asOf, branch string, snapAsFloat bool) {
		m := map[string]any{}
		put := func(k string, v any) {
			if v != nil && v != "" {
				m[k] = v
			}
		}
		put(KeyTable, table)
		put(KeyCatalogName, catalog)
		put(KeyCatalogProperties, props(catProps))
		put(KeyFilter, filter)
		put(KeyKeep, split(keep))
		put(KeyDrop, split(drop))
		if snap != 0 {
			if snapAsFloat {
				m[KeySnapshotID] = float64(snap)
			} else {
				m[KeySnapshotID] = snap
			}
		}
		put(KeyAsOfTimestamp, asOf)
		put(KeyBranch, branch)
		cfg, err := ParseReadConfig(m)
		if err != nil {
			if len(configErrors(err)) == 0 {
				t.Fatalf("error without a ConfigError: %v", err)
			}
			if v, ok := m[KeyCatalogProperties].(map[string]any); ok {
				for k, val := range v {
					if IsSecretKey(k) && len(val.(string)) > 3 && strings.Contains(err.Error(), val.(string)) {
						t.Fatalf("secret value of %q in error: %v", k, err)
					}
				}
			}
			return
		}
		checkRoundTrip(t, cfg, ReadConfig.Map, ParseReadConfig, ParseReadConfigJSON, ParseReadConfigYAML)
	})
}

func FuzzWriteConfigRoundTrip(f *testing.F) {
	f.Add("db.t_{r}", "lake", "type=sql", "merge-on-read", "op", "c=INSERT;d=DELETE", "id", int64(4), int64(2), true, "dv", "hash", "bucket(16, id),day(ts)", "id desc nulls last", "app=x", "", "")
	f.Add("t", "c", "type=rest", "", "", "", "", int64(0), int64(0), false, "", "", "region", "", "", "a,b", "")
	f.Add("t", "c", "type=rest", "append", "", "", "", int64(-1), int64(0), false, "", "none", "", "", "beam.cdc.x=1", "", "payload")
	f.Add("t", "c", "type=rest", "merge-on-read", "op", "", "k,k", int64(0), int64(99), true, "equality", "", "bucket[4](k)", "bucket(k, 4)", "", "", "")
	f.Fuzz(func(t *testing.T, table, catalog, catProps, mode, ctCol, ctMap, eqCols string, shards, spp int64, upsert bool,
		delFmt, dist, parts, sorts, snapProps, keep, only string) {
		m := map[string]any{}
		put := func(k string, v any) {
			if v != nil && v != "" {
				m[k] = v
			}
		}
		put(KeyTable, table)
		put(KeyCatalogName, catalog)
		put(KeyCatalogProperties, props(catProps))
		put(KeyMode, mode)
		put(KeyChangeTypeColumn, ctCol)
		put(KeyChangeTypeMap, props(ctMap))
		put(KeyEqualityColumns, split(eqCols))
		if shards != 0 {
			m[KeyNumShards] = shards
		}
		if spp != 0 {
			m[KeyShardsPerPartition] = float64(spp)
		}
		if upsert {
			m[KeyUpsert] = true
			m[KeyAllowedLatenessSeconds] = 0
			m[KeySinkID] = "s-" + table
		}
		put(KeyDeleteFormat, delFmt)
		put(KeyDistributionMode, dist)
		put(KeyPartitionFields, split(parts))
		put(KeySortFields, split(sorts))
		put(KeySnapshotProperties, props(snapProps))
		put(KeyKeep, split(keep))
		put(KeyOnly, only)
		cfg, err := ParseWriteConfig(m)
		if err != nil {
			if len(configErrors(err)) == 0 {
				t.Fatalf("error without a ConfigError: %v", err)
			}
			return
		}
		if err := cfg.Resolved().Validate(); err != nil {
			t.Fatalf("Resolved() of a valid config is invalid: %v", err)
		}
		if _, err := cfg.PartitionSpec(); err != nil {
			t.Fatalf("accepted config with a bad partition spec: %v", err)
		}
		checkRoundTrip(t, cfg, WriteConfig.Map, ParseWriteConfig, ParseWriteConfigJSON, ParseWriteConfigYAML)
	})
}

// FuzzWriteEnvelopeRoundTrip round-trips the keys of a change envelope: the control
// columns (dotted paths), only, before_field, keep and drop, in either mode.
func FuzzWriteEnvelopeRoundTrip(f *testing.F) {
	f.Add(true, "op", "source.lsn", "after", "before", "", "")
	f.Add(true, "_cdc.op", "_cdc.offset", "", "", "", "_cdc")
	f.Add(true, "op", "", "payload.after", "payload.before", "", "")
	f.Add(false, "", "", "after", "", "", "")
	f.Add(true, "op", "seq", "", "", "id,op", "")
	f.Add(true, "op", "a..b", "after", "after", "", "seq")
	f.Fuzz(func(t *testing.T, mor bool, ctCol, seqCol, only, before, keep, drop string) {
		m := map[string]any{KeyTable: "db.t", KeyCatalogName: "c", KeyCatalogProperties: map[string]any{"type": "sql"}}
		put := func(k string, v any) {
			if v != nil && v != "" {
				m[k] = v
			}
		}
		if mor {
			m[KeyMode] = string(MergeOnRead)
		}
		put(KeyChangeTypeColumn, ctCol)
		put(KeySequenceNumberColumn, seqCol)
		put(KeyOnly, only)
		put(KeyBeforeField, before)
		put(KeyKeep, split(keep))
		put(KeyDrop, split(drop))
		cfg, err := ParseWriteConfig(m)
		if err != nil {
			if len(configErrors(err)) == 0 {
				t.Fatalf("error without a ConfigError: %v", err)
			}
			return
		}
		if cfg.BeforeField != "" && (cfg.Only == "" || cfg.BeforeField == cfg.Only || !mor) {
			t.Fatalf("accepted before_field %q with only %q (merge-on-read %v)", cfg.BeforeField, cfg.Only, mor)
		}
		for _, p := range []string{cfg.ChangeTypeColumn, cfg.SequenceNumberColumn, cfg.Only, cfg.BeforeField} {
			if p != "" && slices.Contains(strings.Split(p, "."), "") {
				t.Fatalf("accepted a path with an empty part: %q", p)
			}
		}
		if err := cfg.Resolved().Validate(); err != nil {
			t.Fatalf("Resolved() of a valid config is invalid: %v", err)
		}
		checkRoundTrip(t, cfg, WriteConfig.Map, ParseWriteConfig, ParseWriteConfigJSON, ParseWriteConfigYAML)
	})
}

// streamingMap adds the continuous-read keys a fuzz case sets to m (zero values unset).
func streamingMap(m map[string]any, streaming bool, poll, from, to, fromTs, toTs int64, strategy string) {
	if streaming {
		m[KeyStreaming] = true
	}
	for k, v := range map[string]int64{KeyPollIntervalSeconds: poll, KeyFromSnapshot: from, KeyToSnapshot: to,
		KeyFromTimestamp: fromTs, KeyToTimestamp: toTs} {
		if v != 0 {
			m[k] = v
		}
	}
	if strategy != "" {
		m[KeyStartingStrategy] = strategy
	}
}

func FuzzReadStreamingConfigRoundTrip(f *testing.F) {
	f.Add(true, int64(1), int64(0), int64(0), int64(0), int64(1714557600000), "", "")
	f.Add(true, int64(0), int64(8744736658442914487), int64(0), int64(0), int64(0), "", "id > 3")
	f.Add(true, int64(60), int64(0), int64(7), int64(0), int64(0), "latest", "")
	f.Add(false, int64(5), int64(1), int64(0), int64(0), int64(0), "earliest", "")
	f.Add(true, int64(-1), int64(0), int64(2), int64(9), int64(3), "middle", "")
	f.Fuzz(func(t *testing.T, streaming bool, poll, from, to, fromTs, toTs int64, strategy, filter string) {
		m := baseRead()
		streamingMap(m, streaming, poll, from, to, fromTs, toTs, strategy)
		if filter != "" {
			m[KeyFilter] = filter
		}
		cfg, err := ParseReadConfig(m)
		if err != nil {
			if len(configErrors(err)) == 0 {
				t.Fatalf("error without a ConfigError: %v", err)
			}
			return
		}
		if !streaming && (poll != 0 || from != 0 || to != 0 || fromTs != 0 || toTs != 0 || strategy != "") {
			t.Fatalf("accepted range keys without streaming: %v", m)
		}
		if cfg.PollInterval() < time.Second {
			t.Fatalf("poll interval %v", cfg.PollInterval())
		}
		checkRoundTrip(t, cfg, ReadConfig.Map, ParseReadConfig, ParseReadConfigJSON, ParseReadConfigYAML)
	})
}

func FuzzChangesConfigRoundTrip(f *testing.F) {
	f.Add(true, int64(1), int64(0), int64(0), int64(0), int64(1714557600000), "")
	f.Add(false, int64(0), int64(5), int64(9), int64(0), int64(0), "")
	f.Add(false, int64(30), int64(0), int64(0), int64(1000), int64(2000), "")
	f.Add(true, int64(0), int64(0), int64(0), int64(0), int64(0), "latest")
	f.Fuzz(func(t *testing.T, streaming bool, poll, from, to, fromTs, toTs int64, strategy string) {
		m := changesBase()
		streamingMap(m, streaming, poll, from, to, fromTs, toTs, strategy)
		cfg, err := ParseChangesConfig(m)
		if err != nil {
			if len(configErrors(err)) == 0 {
				t.Fatalf("error without a ConfigError: %v", err)
			}
			return
		}
		if !streaming && poll != 0 {
			t.Fatalf("accepted poll_interval_seconds without streaming: %v", m)
		}
		checkRoundTrip(t, cfg, ChangesConfig.Map, ParseChangesConfig, ParseChangesConfigJSON, ParseChangesConfigYAML)
	})
}
