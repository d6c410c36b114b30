package config

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Printing. ReadConfig, WriteConfig, ChangesConfig and MaintainConfig print and marshal to JSON with the
// secrets of CatalogProperties and ConfigProperties redacted (see Redacted): fmt with any
// verb, of a value or a pointer, String, GoString and json.Marshal; the fields of the
// embedded Source and Range print in line, as the public types have them. Map is not
// redacted: it is the exact inverse of the Parse functions.

func (c ReadConfig) redacted() any {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return flat(c)
}

func (c WriteConfig) redacted() any {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return flat(c)
}

func (c ChangesConfig) redacted() any {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return flat(c)
}

func (c MaintainConfig) redacted() any {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return flat(c)
}

// flatTypes caches, per config type, the type flat converts it to and, per field of
// that type, the index path of the config field it holds.
var flatTypes sync.Map // reflect.Type -> flatType

type flatType struct {
	typ   reflect.Type
	index [][]int
}

// flat returns the fields of c (a config struct) as a value of an unnamed struct type
// that has c's fields in order, those of an embedded struct (Range) in line, and no
// methods: fmt and encoding/json print it field by field without recursing into c's
// printing methods, with the fields as the public types in package iceberg have them.
func flat(c any) any {
	v := reflect.ValueOf(c)
	ft, ok := flatTypes.Load(v.Type())
	if !ok {
		var fields []reflect.StructField
		var index [][]int
		for _, f := range reflect.VisibleFields(v.Type()) {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				continue
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type})
			index = append(index, f.Index)
		}
		ft, _ = flatTypes.LoadOrStore(v.Type(), flatType{typ: reflect.StructOf(fields), index: index})
	}
	t := ft.(flatType)
	out := reflect.New(t.typ).Elem()
	for i, index := range t.index {
		out.Field(i).Set(v.FieldByIndex(index))
	}
	return out.Interface()
}

// String returns c's fields as %+v prints them, with secrets redacted.
func (c ReadConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c ReadConfig) GoString() string { return goString(c.redacted(), "ReadConfig") }

// Format prints c for every fmt verb with secrets redacted.
func (c ReadConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c ReadConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c WriteConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c WriteConfig) GoString() string { return goString(c.redacted(), "WriteConfig") }

// Format prints c for every fmt verb with secrets redacted.
func (c WriteConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c WriteConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c ChangesConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c ChangesConfig) GoString() string {
	return goString(c.redacted(), "ChangesConfig")
}

// Format prints c for every fmt verb with secrets redacted.
func (c ChangesConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c ChangesConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c MaintainConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c MaintainConfig) GoString() string { return goString(c.redacted(), "MaintainConfig") }

// Format prints c for every fmt verb with secrets redacted.
func (c MaintainConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c MaintainConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// goString prints plain (from flat) with %#v under the config's type name, which
// replaces the unnamed struct type that %#v spells out.
func goString(plain any, name string) string {
	return "config." + name + strings.TrimPrefix(fmt.Sprintf("%#v", plain), reflect.TypeOf(plain).String())
}

// format prints plain (a redacted copy) with the verb and flags of f; %#v goes through
// goString so the type keeps its name.
func format(f fmt.State, verb rune, plain any, goString func() string) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, goString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), plain)
}
