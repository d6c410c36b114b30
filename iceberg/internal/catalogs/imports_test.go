package catalogs

// The tests of this package open every catalog type and storage scheme, so
// they link them all, as a user's program does by import.
import (
	_ "github.com/icebeam/icebeam/iceberg/catalogs/glue"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/hadoop"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/hive"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/postgres"
	_ "github.com/icebeam/icebeam/iceberg/catalogs/sql"
	_ "github.com/icebeam/icebeam/iceberg/storage/gcs"
	_ "github.com/icebeam/icebeam/iceberg/storage/s3"
)
