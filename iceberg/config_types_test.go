package iceberg

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPublicConfigsRedact: every way of printing a public config, of the value and
// of a pointer, hides the catalog secret and keeps the rest; %#v names the public
// type; Map keeps the secret for round trips.
func TestPublicConfigsRedact(t *testing.T) {
	const secret = "SeCrEt-token-value"
	props := map[string]string{"type": "rest", "uri": "https://cat.example", "token": secret}
	r := ReadConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	w := WriteConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	c := ChangesConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	m := MaintainConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	for _, v := range []struct {
		name string
		val  any
		ptr  any
	}{{"ReadConfig", r, &r}, {"WriteConfig", w, &w}, {"ChangesConfig", c, &c}, {"MaintainConfig", m, &m}} {
		for _, x := range []any{v.val, v.ptr} {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
				out := fmt.Sprintf(verb, x)
				if strings.Contains(out, secret) || !strings.Contains(out, "cat.example") {
					t.Errorf("%s %s (%T) = %s", v.name, verb, x, out)
				}
			}
			if out := fmt.Sprintf("%#v", x); !strings.HasPrefix(out, "iceberg."+v.name+"{") {
				t.Errorf("%s %%#v = %s, want the public type's name", v.name, out)
			}
			b, err := json.Marshal(x)
			if err != nil || strings.Contains(string(b), secret) || !strings.Contains(string(b), "cat.example") {
				t.Errorf("%s json = %s, %v", v.name, b, err)
			}
		}
	}
	if got := w.Map()["catalog_properties"].(map[string]string)["token"]; got != secret {
		t.Errorf("Map lost the secret (%q): it is the exact inverse of ParseWriteConfig", got)
	}
}
