// Package hive registers icebeam's hive catalog type: iceberg-go's Hive
// Metastore catalog (catalog_properties uri, the metastore's thrift URI, and
// warehouse). It links the Thrift client of gohive. Import it for its side
// effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/hive"
//
// A pipeline whose catalog_properties name type=hive without this import
// fails at construction with an error naming it.
package hive

import (
	"context"
	"maps"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hive"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

func init() { registry.Register("hive", open) }

func open(_ context.Context, _ string, props map[string]string) (catalog.Catalog, error) {
	if props["uri"] == "" {
		return nil, config.Errorf("catalog_properties.uri", "missing: the hive catalog needs the metastore thrift URI")
	}
	return hive.NewCatalog(ibg.Properties(maps.Clone(props)))
}
