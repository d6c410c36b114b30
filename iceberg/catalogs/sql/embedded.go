package sql

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// EmbeddedProperties returns the catalog properties of an embedded catalog
// in dir: a SQLite database (dir/catalog.db) and a local warehouse
// (dir/warehouse, as a file:// URL), both created when missing. Every
// process that opens the same dir with the same catalog name sees the same
// tables, so prism workers and the launching program share it.
func EmbeddedProperties(dir string) (map[string]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("iceberg: embedded catalog %s: %w", dir, err)
	}
	wh := filepath.Join(abs, "warehouse")
	if err := os.MkdirAll(wh, 0o755); err != nil {
		return nil, fmt.Errorf("iceberg: embedded catalog %s: %w", dir, err)
	}
	return map[string]string{
		"type":      "sql",
		keyURI:      "file:" + filepath.Join(abs, "catalog.db"),
		"warehouse": (&url.URL{Scheme: "file", Path: filepath.ToSlash(wh)}).String(),
	}, nil
}
