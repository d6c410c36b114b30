// Package gcs links Google Cloud Storage FileIO for icebeam: tables and
// warehouses at gs:// (and gcs://) locations, through iceberg-go's gocloud
// FileIO. Import it for its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/storage/gcs"
//
// FileIO properties come from catalog_properties: gcs.endpoint, gcs.no-auth,
// gcs.usejsonapi and the other gcs.* keys of iceberg-go; without credentials
// properties it uses Application Default Credentials. A catalog whose warehouse
// or table is at gs:// fails at pipeline construction, naming this import,
// when no package linked it.
package gcs

import (
	_ "github.com/apache/iceberg-go/io/gocloud/gcs" // registers gs:// and gcs://
)
