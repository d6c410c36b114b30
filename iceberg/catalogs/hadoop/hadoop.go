// Package hadoop registers icebeam's hadoop catalog type: iceberg-go's
// file-system catalog, whose tables live under catalog_properties warehouse
// with no metastore. Import it for its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/hadoop"
//
// A pipeline whose catalog_properties name type=hadoop without this import
// fails at construction with an error naming it. A gs:// or s3:// warehouse
// needs the matching package under github.com/icebeam/icebeam/iceberg/storage.
package hadoop

import (
	"context"
	"maps"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/registry"
)

func init() { registry.Register("hadoop", open) }

func open(_ context.Context, name string, props map[string]string) (catalog.Catalog, error) {
	wh := props["warehouse"]
	if wh == "" {
		return nil, config.Errorf("catalog_properties.warehouse", "missing: the hadoop catalog needs a warehouse path")
	}
	return hadoop.NewCatalog(name, wh, ibg.Properties(maps.Clone(props)))
}
