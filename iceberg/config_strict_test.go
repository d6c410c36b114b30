package iceberg

import (
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// TestJSONDuplicateKeys: a key given twice in a JSON object is an error naming the key
// (with its parent for a nested one), for every JSON entry point.
func TestJSONDuplicateKeys(t *testing.T) {
	const props = `"catalog_name":"c","catalog_properties":{"type":"sql"}`
	tests := []struct {
		name string
		js   string
		key  string
	}{
		{"table", `{"table":"a.b","table":"c.d",` + props + `}`, KeyTable},
		{"filter", `{"table":"a.b",` + props + `,"filter":"x = 1","filter":"x = 2"}`, KeyFilter},
		{"catalog_properties.uri", `{"table":"a.b","catalog_name":"c","catalog_properties":{"type":"sql","uri":"sqlite://a","uri":"sqlite://b"}}`, "catalog_properties.uri"},
		{"escaped spelling", `{"table":"a.b","t\u0061ble":"c.d",` + props + `}`, KeyTable},
	}
	parsers := map[string]func([]byte) error{
		"read":    func(b []byte) error { _, err := ParseReadConfigJSON(b); return err },
		"write":   func(b []byte) error { _, err := ParseWriteConfigJSON(b); return err },
		"changes": func(b []byte) error { _, err := ParseChangesConfigJSON(b); return err },
	}
	for _, tt := range tests {
		for name, parse := range parsers {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				wantErrorKeys(t, parse([]byte(tt.js)), "more than once", tt.key)
			})
		}
	}
	t.Run("mode/write", func(t *testing.T) {
		_, err := ParseWriteConfigJSON([]byte(`{"table":"a.b",` + props + `,"mode":"merge-on-read","mode":"append"}`))
		wantErrorKeys(t, err, "more than once", KeyMode)
	})
	t.Run("same key in different objects is fine", func(t *testing.T) {
		c, err := ParseWriteConfigJSON([]byte(`{"table":"a.b","catalog_name":"c","catalog_properties":{"type":"sql","uri":"x"},"table_properties":{"type":"y","uri":"z"}}`))
		if err != nil || c.CatalogProperties["uri"] != "x" || c.TableProperties["type"] != "y" || c.TableProperties["uri"] != "z" {
			t.Fatalf("ParseWriteConfigJSON = %+v, %v", c, err)
		}
	})
	t.Run("syntax errors still come from the decoder", func(t *testing.T) {
		_, err := ParseWriteConfigJSON([]byte(`{"table":"a.b","table":`))
		if err == nil || !strings.Contains(err.Error(), "parse config: JSON") {
			t.Fatalf("err = %v, want a JSON syntax error", err)
		}
	})
}

// TestValidateCatalogTypeAndTableName: an unknown catalog type and a table name with an
// empty part fail at parse time, in every config, naming the key.
func TestValidateCatalogTypeAndTableName(t *testing.T) {
	tests := []struct {
		name   string
		m      map[string]any
		substr string
		key    string
	}{
		{"unknown catalog type", withKeys(baseRead(), KeyCatalogProperties, map[string]any{"type": "mysql"}),
			`unknown catalog type "mysql" (want one of sql, rest, hadoop, glue, hive)`, "catalog_properties.type"},
		{"double dot", withKeys(baseRead(), KeyTable, "a..b"), `"a..b" has an empty part at position 2`, KeyTable},
		{"trailing dot", withKeys(baseRead(), KeyTable, "a.b."), "empty part at position 3", KeyTable},
		{"leading dot", withKeys(baseRead(), KeyTable, ".a.b"), "empty part at position 1", KeyTable},
		{"blank part", withKeys(baseRead(), KeyTable, "a. .b"), "empty part at position 2", KeyTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReadConfig(tt.m)
			wantErrorKeys(t, err, tt.substr, tt.key)
			_, err = ParseWriteConfig(tt.m)
			wantErrorKeys(t, err, tt.substr, tt.key)
			_, err = ParseChangesConfig(tt.m)
			wantErrorKeys(t, err, tt.substr, tt.key)
		})
	}
	t.Run("templates", func(t *testing.T) {
		for _, table := range []string{"db.t_{a.b}", "db.{ns}.t", "{ns}.t", "db.{table}"} {
			if _, err := ParseWriteConfig(withKeys(baseWrite(), KeyTable, table)); err != nil {
				t.Errorf("%q: %v", table, err)
			}
		}
		for _, table := range []string{"db..t_{a.b}", "{ns}.", ".{t}"} {
			_, err := ParseWriteConfig(withKeys(baseWrite(), KeyTable, table))
			wantErrorKeys(t, err, "empty part", KeyTable)
		}
	})
	t.Run("every catalog type and case", func(t *testing.T) {
		for _, typ := range append(config.CatalogTypes, "SQL", " rest ") {
			if _, err := ParseReadConfig(withKeys(baseRead(), KeyCatalogProperties, map[string]any{"type": typ})); err != nil {
				t.Errorf("type %q: %v", typ, err)
			}
		}
	})
}

// TestSinkIDAlphabet: control characters and invalid UTF-8 in sink_id are rejected with
// the allowed alphabet named; printable ids, spaces included, are accepted.
func TestSinkIDAlphabet(t *testing.T) {
	for _, id := range []string{"a\nb", "a\rb", "a\tb", "a\x00b", "a\x1bb", "a\x7fb", "a\u0085b", "\n"} {
		t.Run(id, func(t *testing.T) {
			_, err := ParseWriteConfig(withKeys(baseWrite(), KeySinkID, id))
			wantErrorKeys(t, err, "a sink id may hold printable UTF-8 characters", KeySinkID)
		})
	}
	t.Run("invalid UTF-8 in a struct literal", func(t *testing.T) {
		c := WriteConfig{Table: "a.b", CatalogName: "c", CatalogProperties: map[string]string{"type": "sql"}, SinkID: "a\xffb"}
		wantErrorKeys(t, c.Validate(), "a sink id may hold printable UTF-8 characters", KeySinkID)
	})
	for _, id := range []string{"orders-cdc", "seed-update images", "a.b_c:d/é", "日本"} {
		if c, err := ParseWriteConfig(withKeys(baseWrite(), KeySinkID, id)); err != nil || c.SinkID != id {
			t.Errorf("sink id %q: %+v, %v", id, c, err)
		}
	}
}
