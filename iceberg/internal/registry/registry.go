package registry

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Opener builds a new catalog of one type named name from its catalog
// properties. Configuration errors are *config.ConfigError naming the key.
type Opener func(ctx context.Context, name string, props map[string]string) (catalog.Catalog, error)

// Import paths of the packages that register catalog types and storage schemes.
const (
	modulePath = "github.com/icebeam/icebeam/iceberg/"
	// ImportAll brings every catalog type and storage scheme.
	ImportAll      = modulePath + "catalogs/all"
	ImportSQL      = modulePath + "catalogs/sql"
	ImportPostgres = modulePath + "catalogs/postgres"
	ImportGlue     = modulePath + "catalogs/glue"
	ImportHive     = modulePath + "catalogs/hive"
	ImportHadoop   = modulePath + "catalogs/hadoop"
	ImportGCS      = modulePath + "storage/gcs"
	ImportS3       = modulePath + "storage/s3"
)

// catalogImports names the package that registers each catalog type; rest is
// registered by package catalogs itself.
var catalogImports = map[string]string{
	"sql":    ImportSQL,
	"glue":   ImportGlue,
	"hive":   ImportHive,
	"hadoop": ImportHadoop,
}

// schemeImports names the package that registers each storage scheme that is
// not built into iceberg-go (file:// and plain paths are).
var schemeImports = map[string]string{
	"gs":  ImportGCS,
	"gcs": ImportGCS,
	"s3":  ImportS3,
	"s3a": ImportS3,
	"s3n": ImportS3,
}

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes catalog type typ available. It panics when typ is empty or not
// one of config.CatalogTypes, when open is nil, or when typ is already
// registered: as database/sql.Register, a second registration is a bug, never a
// silent replacement.
func Register(typ string, open Opener) {
	if open == nil {
		panic("iceberg: register catalog type " + typ + ": nil opener")
	}
	if !slices.Contains(config.CatalogTypes, typ) {
		panic(fmt.Sprintf("iceberg: register catalog type %q: not one of %v", typ, config.CatalogTypes))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[typ]; dup {
		panic("iceberg: register catalog type " + typ + " twice")
	}
	openers[typ] = open
}

// Lookup returns the opener of catalog type typ (lower case). A type that
// config accepts but no imported package registered is a ConfigError on
// catalog_properties.type naming the import to add.
func Lookup(typ string) (Opener, error) {
	mu.RLock()
	open, ok := openers[typ]
	mu.RUnlock()
	if ok {
		return open, nil
	}
	if imp, known := catalogImports[typ]; known {
		return nil, config.Errorf("catalog_properties.type",
			"%w: catalog type %q is not linked into this program: add import _ %q (or _ %q for every catalog and storage scheme)",
			config.ErrUnsupported, typ, imp, ImportAll)
	}
	return nil, config.Errorf("catalog_properties.type", "unknown catalog type %q; supported types: %s",
		typ, strings.Join(config.CatalogTypes, ", "))
}

// Registered reports whether catalog type typ is registered.
func Registered(typ string) bool {
	mu.RLock()
	defer mu.RUnlock()
	_, ok := openers[typ]
	return ok
}

// CheckLocation returns a ConfigError on key when location's scheme needs one
// of our storage packages and none registered it with iceberg-go's io, naming
// the import to add. Locations with other schemes pass: iceberg-go reports
// those itself when it opens them.
func CheckLocation(key, location string) error {
	u, err := url.Parse(location)
	if err != nil {
		return nil // not ours to judge: the catalog or iceberg-go reports it
	}
	scheme := strings.ToLower(u.Scheme)
	imp, ok := schemeImports[scheme]
	if !ok || slices.Contains(icebergio.GetRegisteredSchemes(), scheme) {
		return nil
	}
	return config.Errorf(key,
		"%w: storage scheme %s:// is not linked into this program: add import _ %q (or _ %q for every catalog and storage scheme)",
		config.ErrUnsupported, scheme, imp, ImportAll)
}
