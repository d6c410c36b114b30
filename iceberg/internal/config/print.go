package config

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Printing. ReadConfig, WriteConfig, ChangesConfig and MaintainConfig print and marshal to JSON with the
// secrets of CatalogProperties and ConfigProperties redacted (see Redacted): fmt with any
// verb, of a value or a pointer, String, GoString and json.Marshal. Map is not redacted:
// it is the exact inverse of the Parse functions.

// The same fields without the methods, so that printing a redacted copy does not recurse.
type (
	readFields     ReadConfig
	writeFields    WriteConfig
	changesFields  ChangesConfig
	maintainFields MaintainConfig
)

func (c ReadConfig) redacted() readFields {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return readFields(c)
}

func (c WriteConfig) redacted() writeFields {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return writeFields(c)
}

func (c MaintainConfig) redacted() maintainFields {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return maintainFields(c)
}

func (c ChangesConfig) redacted() changesFields {
	c.CatalogProperties, c.ConfigProperties = Redacted(c.CatalogProperties), Redacted(c.ConfigProperties)
	return changesFields(c)
}

// String returns c's fields as %+v prints them, with secrets redacted.
func (c ReadConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c ReadConfig) GoString() string { return goString(c.redacted(), "readFields", "ReadConfig") }

// Format prints c for every fmt verb with secrets redacted.
func (c ReadConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c ReadConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c WriteConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c WriteConfig) GoString() string { return goString(c.redacted(), "writeFields", "WriteConfig") }

// Format prints c for every fmt verb with secrets redacted.
func (c WriteConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c WriteConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c ChangesConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c ChangesConfig) GoString() string {
	return goString(c.redacted(), "changesFields", "ChangesConfig")
}

// Format prints c for every fmt verb with secrets redacted.
func (c ChangesConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c ChangesConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// String returns c's fields as %+v prints them, with secrets redacted.
func (c MaintainConfig) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString returns c as %#v prints it, with secrets redacted.
func (c MaintainConfig) GoString() string {
	return goString(c.redacted(), "maintainFields", "MaintainConfig")
}

// Format prints c for every fmt verb with secrets redacted.
func (c MaintainConfig) Format(f fmt.State, verb rune) { format(f, verb, c.redacted(), c.GoString) }

// MarshalJSON encodes c's fields with secrets redacted. It is meant for logs: use Map for
// a configuration that parses back.
func (c MaintainConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.redacted()) }

// goString prints plain with %#v under the exported type name.
func goString(plain any, from, to string) string {
	return strings.Replace(fmt.Sprintf("%#v", plain), "config."+from+"{", "config."+to+"{", 1)
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
