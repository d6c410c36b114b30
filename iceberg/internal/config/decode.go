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

// ParseReadConfigJSON parses a JSON object of managed keys (see ParseReadConfig). Numbers
// keep their full precision, so 64-bit snapshot ids survive.
func ParseReadConfigJSON(b []byte) (ReadConfig, error) {
	m, err := decodeJSON(b)
	if err != nil {
		return ReadConfig{}, err
	}
	return ParseReadConfig(m)
}

// ParseReadConfigYAML parses a YAML mapping of managed keys (see ParseReadConfig).
func ParseReadConfigYAML(b []byte) (ReadConfig, error) {
	m, err := decodeYAML(b)
	if err != nil {
		return ReadConfig{}, err
	}
	return ParseReadConfig(m)
}

// ParseWriteConfigJSON parses a JSON object of managed keys (see ParseWriteConfig).
func ParseWriteConfigJSON(b []byte) (WriteConfig, error) {
	m, err := decodeJSON(b)
	if err != nil {
		return WriteConfig{}, err
	}
	return ParseWriteConfig(m)
}

// ParseWriteConfigYAML parses a YAML mapping of managed keys (see ParseWriteConfig).
func ParseWriteConfigYAML(b []byte) (WriteConfig, error) {
	m, err := decodeYAML(b)
	if err != nil {
		return WriteConfig{}, err
	}
	return ParseWriteConfig(m)
}

// errSyntax describes a document that is not a mapping of keys; it wraps ErrInvalidConfig.
func errSyntax(format string, err error) error {
	return fmt.Errorf("iceberg: parse config: %s: %w: %w", format, ErrInvalidConfig, err)
}

func decodeJSON(b []byte) (map[string]any, error) {
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

func decodeYAML(b []byte) (map[string]any, error) {
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
