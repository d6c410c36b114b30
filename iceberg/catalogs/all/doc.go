// Package all links every catalog type and storage scheme icebeam supports:
// the sql (SQLite, MySQL and PostgreSQL drivers), glue, hive and hadoop
// catalogs, and the gs:// and s3:// FileIOs. The rest catalog and local files
// are always linked. Import it for its side effect when a program must accept
// any catalog configuration, at the price of a larger worker binary:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/all"
package all

import (
	_ "github.com/icebeam/icebeam/iceberg/catalogs/glue"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/hadoop"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/hive"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/postgres"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/sql"
	_ "github.com/icebeam/icebeam/iceberg/storage/gcs"
	_ "github.com/icebeam/icebeam/iceberg/storage/s3"
)
