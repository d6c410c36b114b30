package iceberg

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// secretProps holds one value of every secret kind the redaction knows: each secret key
// name (alone and inside a longer name, any case), and passwords inside the values of
// ordinary keys (URI user info, DSN pairs, query parameters). secrets lists the values
// that must never be printed.
func secretProps() (props map[string]string, secrets []string) {
	props = map[string]string{"type": "rest", "warehouse": "gs://bucket/wh", "header.x-goog-user-project": "proj-visible"}
	for i, k := range []string{
		"credential", "token", "secret", "password", "key", "private-key", "session", "header.authorization",
		"passwd", "authorization", "s3.secret-access-key", "s3.access-key-id", "rest.auth.TOKEN", "gcs.oauth2.token",
		"glue.session-token", "header.Authorization", "client.passwd", "adls.sas-token",
	} {
		v := fmt.Sprintf("SeCrEt-%02d-%s", i, strings.ToUpper(k))
		props[k] = v
		secrets = append(secrets, v)
	}
	props["uri"] = "postgres://user:SeCrEt-uri-pw@db.example:5432/cat?sslmode=require"
	props["dsn"] = "host=h user=u password=SeCrEt-dsn-pw dbname=d pwd=SeCrEt-dsn-pwd sslpassword='SeCrEt dsn ssl'"
	props["rest.endpoint"] = "https://h/x?token=SeCrEt-query-token&access_token=SeCrEt-query-at&a=1"
	props["other"] = "see mysql://u:SeCrEt-inline-pw@h/db"
	secrets = append(secrets, "SeCrEt-uri-pw", "SeCrEt-dsn-pw", "SeCrEt-dsn-pwd", "SeCrEt dsn ssl",
		"SeCrEt-query-token", "SeCrEt-query-at", "SeCrEt-inline-pw")
	return props, secrets
}

// printings returns every way a config can be printed, by name.
func printings[C any](c C) map[string]string {
	p := &c
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%10.3v", "%-v"} {
		out["value "+verb] = fmt.Sprintf(verb, c)
		out["pointer "+verb] = fmt.Sprintf(verb, p)
	}
	out["Sprint"], out["Sprintln"] = fmt.Sprint(c), fmt.Sprintln(p)
	out["String"] = any(c).(fmt.Stringer).String()
	out["GoString"] = any(c).(fmt.GoStringer).GoString()
	out["nested %+v"] = fmt.Sprintf("%+v", struct{ Cfg C }{c})
	out["nested pointer %#v"] = fmt.Sprintf("%#v", []*C{p})
	for name, v := range map[string]any{"json value": c, "json pointer": p, "json nested": map[string]any{"cfg": c}} {
		b, err := json.Marshal(v)
		if err != nil {
			out[name] = "marshal error: " + err.Error()
			continue
		}
		out[name] = string(b)
	}
	return out
}

// TestConfigsPrintRedacted: no fmt verb, String, GoString or json.Marshal of ReadConfig,
// WriteConfig or ChangesConfig (value, pointer, nested) prints a catalog or Hadoop secret;
// the rest of the config still prints; Map keeps every secret for the round trip.
func TestConfigsPrintRedacted(t *testing.T) {
	props, secrets := secretProps()
	hadoop := map[string]string{"fs.s3a.secret.key": "SeCrEt-hadoop"}
	secrets = append(secrets, "SeCrEt-hadoop")
	n := 7
	id := int64(42)
	read := ReadConfig{Table: "shop.orders", CatalogName: "lake", CatalogProperties: props, ConfigProperties: hadoop, SnapshotID: &id}
	read.Filter = "password = 'not a secret'"
	write := WriteConfig{Table: "shop.orders", CatalogName: "lake", CatalogProperties: props, ConfigProperties: hadoop,
		Mode: MergeOnRead, EqualityColumns: []string{"id"}, NumShards: &n, SinkID: "orders-cdc"}
	changes := ChangesConfig{Table: "shop.orders", CatalogName: "lake", CatalogProperties: props, ConfigProperties: hadoop, FromSnapshot: &id}
	for name, out := range map[string]map[string]string{
		"read": printings(read), "write": printings(write), "changes": printings(changes),
	} {
		for how, s := range out {
			t.Run(name+"/"+how, func(t *testing.T) {
				for _, sec := range secrets {
					if strings.Contains(s, sec) {
						t.Fatalf("prints secret %q:\n%s", sec, s)
					}
				}
				if strings.HasSuffix(how, "%x") || strings.HasSuffix(how, "%10.3v") {
					return // hex or truncated fields: checked for secrets only
				}
				for _, want := range []string{"shop.orders", "proj-visible", config.RedactedValue} {
					if !strings.Contains(s, want) {
						t.Errorf("does not print %q:\n%s", want, s)
					}
				}
			})
		}
	}
	t.Run("GoString keeps the type name", func(t *testing.T) {
		for s, want := range map[string]string{
			fmt.Sprintf("%#v", read): "iceberg.ReadConfig{", fmt.Sprintf("%#v", &write): "iceberg.WriteConfig{",
			changes.GoString(): "iceberg.ChangesConfig{",
		} {
			if !strings.HasPrefix(s, want) {
				t.Errorf("%%#v = %.60s..., want prefix %s", s, want)
			}
		}
	})
	t.Run("printing leaves the config alone", func(t *testing.T) {
		_ = fmt.Sprint(read, write, changes)
		if !maps.Equal(read.CatalogProperties, props) || !maps.Equal(write.ConfigProperties, hadoop) {
			t.Fatal("printing changed the config's maps")
		}
	})
	t.Run("Map round trips the secrets", func(t *testing.T) {
		write.ConfigProperties, read.ConfigProperties, changes.ConfigProperties = nil, nil, nil
		// Parsing rejects the properties a rest catalog does not read.
		known := maps.Clone(props)
		maps.DeleteFunc(known, func(k, _ string) bool { return !config.KnownCatalogProperty("rest", k) })
		write.CatalogProperties, read.CatalogProperties, changes.CatalogProperties = known, known, known
		w, err := ParseWriteConfig(write.Map())
		if err != nil || !reflect.DeepEqual(w, write) {
			t.Errorf("ParseWriteConfig(Map()) = %+v, %v", w, err)
		}
		r, err := ParseReadConfig(read.Map())
		if err != nil || !reflect.DeepEqual(r, read) {
			t.Errorf("ParseReadConfig(Map()) = %+v, %v", r, err)
		}
		c, err := ParseChangesConfig(changes.Map())
		if err != nil || !reflect.DeepEqual(c, changes) {
			t.Errorf("ParseChangesConfig(Map()) = %+v, %v", c, err)
		}
		if got := w.CatalogProperties["credential"]; got != props["credential"] {
			t.Errorf("parsed credential = %q, want the secret", got)
		}
	})
}
