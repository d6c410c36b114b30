package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseDoc decodes a JSON or YAML document b to a map with decode and parses the map.
func ParseDoc[C any](b []byte, decode func([]byte) (map[string]any, error), parse func(map[string]any) (C, error)) (C, error) {
	m, err := decode(b)
	if err != nil {
		var zero C
		return zero, err
	}
	return parse(m)
}

// errSyntax describes a document that is not a mapping of keys; it wraps ErrInvalidConfig.
func errSyntax(format string, err error) error {
	return fmt.Errorf("iceberg: parse config: %s: %w: %w", format, ErrInvalidConfig, err)
}

// DecodeJSON decodes a JSON object of managed keys: numbers keep their full precision
// (json.Number), and a key given twice is an error.
func DecodeJSON(b []byte) (map[string]any, error) {
	if err := duplicateKeys(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, errSyntax("JSON", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errSyntax("JSON", errors.New("trailing data after the object"))
	}
	if m == nil {
		return nil, errSyntax("JSON", errors.New("want an object, got null"))
	}
	return m, nil
}

// DecodeYAML decodes a YAML mapping of managed keys (an empty document is an empty map).
func DecodeYAML(b []byte) (map[string]any, error) {
	if strings.TrimSpace(string(b)) == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, errSyntax("YAML", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errSyntax("YAML", errors.New("more than one document"))
	}
	return m, nil
}

// duplicateKeys reports every object key that appears twice in the same JSON object,
// naming it by its path (e.g. "catalog_properties.uri"). encoding/json keeps the last
// value of a repeated key without a word; YAML rejects them, and so do we. Syntax
// errors are left to the decoder that runs next.
func duplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var errs Errors
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil // a scalar
		}
		switch d {
		case '[':
			for dec.More() {
				if err := walk(path); err != nil {
					return err
				}
			}
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := tok.(string)
				full := key
				if path != "" {
					full = path + "." + key
				}
				if seen[key] {
					errs.Add(Errorf(full, "given more than once in the JSON object"))
				}
				seen[key] = true
				if err := walk(full); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(""); err != nil {
		return nil // not valid JSON: the decoder reports it
	}
	return errs.Err()
}
