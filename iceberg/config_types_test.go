package iceberg

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// TestPublicConfigsMatchInternal: the public config types have the internal types'
// fields (those of an embedded config.Range in line) in the same order with the same
// names, types and managed tags, so that go doc shows what the parser reads; converting
// a config with every field set to the internal type and back loses nothing.
func TestPublicConfigsMatchInternal(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[ReadConfig](), reflect.TypeFor[config.ReadConfig]()},
		{reflect.TypeFor[WriteConfig](), reflect.TypeFor[config.WriteConfig]()},
		{reflect.TypeFor[ChangesConfig](), reflect.TypeFor[config.ChangesConfig]()},
	} {
		pub, in := leafFields(pair[0]), leafFields(pair[1])
		if len(pub) != len(in) {
			t.Errorf("%s has %d fields, internal %d", pair[0].Name(), len(pub), len(in))
		}
		for i := range min(len(pub), len(in)) {
			p, f := pub[i], in[i]
			if p.Name != f.Name || p.Type != f.Type || p.Tag != f.Tag {
				t.Errorf("%s field %d: %s %s %q, internal %s %s %q", pair[0].Name(), i, p.Name, p.Type, p.Tag, f.Name, f.Type, f.Tag)
			}
		}
	}
	var r ReadConfig
	var c ChangesConfig
	fillFields(t, reflect.ValueOf(&r).Elem())
	fillFields(t, reflect.ValueOf(&c).Elem())
	if back := convert[ReadConfig](r.internal()); !reflect.DeepEqual(back, r) {
		t.Errorf("ReadConfig through the internal type = %+v, want %+v", back, r)
	}
	if back := convert[ChangesConfig](c.internal()); !reflect.DeepEqual(back, c) {
		t.Errorf("ChangesConfig through the internal type = %+v, want %+v", back, c)
	}
	if ic := c.internal(); ic.FromSnapshot != c.FromSnapshot || ic.PollIntervalSeconds != c.PollIntervalSeconds {
		t.Errorf("internal ChangesConfig range %+v, want the public fields", ic.Range)
	}
}

// leafFields returns the fields of a struct type, those of embedded structs in their
// place instead of the embedded field.
func leafFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if !f.Anonymous {
			out = append(out, f)
		}
	}
	return out
}

// fillFields sets every field of the struct v to a value that is not zero.
func fillFields(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("v%d", i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			p.Elem().SetInt(int64(i + 1))
			f.Set(p)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{fmt.Sprintf("c%d", i)}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]string{"k": fmt.Sprintf("v%d", i)}))
		case reflect.Interface: // OutputType
			f.Set(reflect.ValueOf(reflect.TypeFor[struct{ A int }]()))
		default:
			t.Fatalf("field %s of kind %s: teach fillFields", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestPublicConfigsRedact: every way of printing a public config, of the value and
// of a pointer, hides the catalog secret and keeps the rest; %#v names the public
// type; Map keeps the secret for round trips.
func TestPublicConfigsRedact(t *testing.T) {
	const secret = "SeCrEt-token-value"
	props := map[string]string{"type": "rest", "uri": "https://cat.example", "token": secret}
	r := ReadConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	w := WriteConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	c := ChangesConfig{Table: "db.t", CatalogName: "c", CatalogProperties: props}
	for _, v := range []struct {
		name string
		val  any
		ptr  any
	}{{"ReadConfig", r, &r}, {"WriteConfig", w, &w}, {"ChangesConfig", c, &c}} {
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
