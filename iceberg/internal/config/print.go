package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Printing helpers of package iceberg's configs, which print and marshal with their
// secrets redacted (see Redacted).

// plainTypes caches, per config type, the method-less struct type plain converts it to.
var plainTypes sync.Map // reflect.Type -> reflect.Type

// plain returns c (a config struct) as a value of an unnamed struct type with c's
// fields in order and no methods: fmt and encoding/json print it field by field
// without recursing into c's printing methods.
func plain(c any) any {
	v := reflect.ValueOf(c)
	t, ok := plainTypes.Load(v.Type())
	if !ok {
		fields := make([]reflect.StructField, v.NumField())
		for i := range fields {
			f := v.Type().Field(i)
			fields[i] = reflect.StructField{Name: f.Name, Type: f.Type}
		}
		t, _ = plainTypes.LoadOrStore(v.Type(), reflect.StructOf(fields))
	}
	return v.Convert(t.(reflect.Type)).Interface()
}

// RedactedPlain is plain of c with the secrets of its CatalogProperties and
// ConfigProperties fields redacted (see Redacted).
func RedactedPlain(c any) any {
	v := reflect.ValueOf(plain(c))
	p := reflect.New(v.Type()).Elem()
	p.Set(v)
	for _, name := range []string{"CatalogProperties", "ConfigProperties"} {
		if f := p.FieldByName(name); f.IsValid() {
			f.Set(reflect.ValueOf(Redacted(f.Interface().(map[string]string))))
		}
	}
	return p.Interface()
}

// GoString prints plain (from RedactedPlain) with %#v under the type name iceberg.<name>,
// which replaces the unnamed struct type that %#v spells out.
func GoString(plain any, name string) string {
	return "iceberg." + name + strings.TrimPrefix(fmt.Sprintf("%#v", plain), reflect.TypeOf(plain).String())
}

// Format prints plain (a redacted copy from RedactedPlain) with the verb and flags of f; %#v
// goes through goString so the type keeps its name.
func Format(f fmt.State, verb rune, plain any, goString func() string) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, goString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), plain)
}
