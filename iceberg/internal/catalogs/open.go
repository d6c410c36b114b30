package catalogs

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

// Catalog property keys read by this package.
const (
	// KeyType selects the catalog implementation: one of SupportedTypes.
	KeyType = "type"
	// KeyURI is the catalog endpoint (REST, Hive) or DSN (SQL).
	KeyURI = "uri"
	// KeyWarehouse is the warehouse location.
	KeyWarehouse = "warehouse"
	// KeySQLDriver selects the database/sql driver of a sql catalog.
	KeySQLDriver = "sql.driver"
	// KeySQLDialect overrides the SQL dialect of a sql catalog.
	KeySQLDialect = "sql.dialect"
	// KeyRESTAuthType selects the REST authentication: "" or "oauth2" (credential
	// or token properties, iceberg-go's default) or "google" (Application
	// Default Credentials).
	KeyRESTAuthType = "rest.auth.type"
	// HeaderPrefix marks properties sent as HTTP headers by a REST catalog.
	HeaderPrefix = "header."
)

// Catalog types accepted in the "type" property.
const (
	TypeSQL    = "sql"
	TypeREST   = "rest"
	TypeHadoop = "hadoop"
	TypeGlue   = "glue"
	TypeHive   = "hive"
)

// SupportedTypes lists the accepted values of the "type" property: config.CatalogTypes,
// which Validate checks before any catalog is opened.
var SupportedTypes = config.CatalogTypes

// propKey is the managed-config key of catalog property k, used in ConfigErrors.
func propKey(k string) string { return "catalog_properties." + k }

// Open builds a new iceberg-go catalog named name from props, choosing the
// implementation by props["type"] among the registered types (see package
// registry): a type whose package was not imported, or a warehouse whose
// storage scheme was not, is a ConfigError naming the import to add. Home-directory configuration
// (~/.iceberg-go.yaml, $GOICEBERG_HOME) is never consulted. The caller owns
// the catalog: release it with catalog.Closer when done. Most callers want
// the cached Get instead.
func Open(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error) {
	open, err := lookup(name, props)
	if err != nil {
		return nil, err
	}
	cat, err := open(ctx, name, props)
	if err != nil {
		return nil, wrapErr(props, "iceberg: open catalog "+describe(name, props), err)
	}
	return cat, nil
}

// describe names a catalog for error messages: name, type and redacted uri
// (or warehouse), never a secret.
func describe(name string, props map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q (type %s", name, props[KeyType])
	if u := props[KeyURI]; u != "" {
		fmt.Fprintf(&b, ", uri %s", RedactURI(u))
	} else if w := props[KeyWarehouse]; w != "" {
		fmt.Fprintf(&b, ", warehouse %s", RedactURI(w))
	}
	b.WriteString(")")
	return b.String()
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckLinked reports what Open would refuse without reaching the catalog: an
// empty name, a missing type, and a catalog type or warehouse storage scheme
// whose package this program did not import (a ConfigError naming the import).
// A pipeline built without the catalog checks this much at construction.
func CheckLinked(name string, props map[string]string) error {
	_, err := lookup(name, props)
	return err
}

// lookup checks name and props as CheckLinked does and returns the opener of
// the catalog type.
func lookup(name string, props map[string]string) (registry.Opener, error) {
	if strings.TrimSpace(name) == "" {
		return nil, config.Errorf("catalog_name", "must not be empty")
	}
	typ := strings.ToLower(strings.TrimSpace(props[KeyType]))
	if typ == "" {
		return nil, config.Errorf(propKey(KeyType), "missing; supported types: %s", strings.Join(SupportedTypes, ", "))
	}
	open, err := registry.Lookup(typ)
	if err != nil {
		return nil, err
	}
	if wh := props[KeyWarehouse]; wh != "" {
		if err := registry.CheckLocation(propKey(KeyWarehouse), wh); err != nil {
			return nil, err
		}
	}
	return open, nil
}
