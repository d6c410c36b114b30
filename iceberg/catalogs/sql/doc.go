// Package sql registers icebeam's sql catalog type: an iceberg-go SQL catalog
// on SQLite through a pure-Go driver (the embedded catalog of tests and
// examples), or on MySQL. Import it for its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/sql"
//
// A pipeline whose catalog_properties name type=sql without this import fails
// at construction with an error naming it. PostgreSQL (sql.driver=postgres)
// also needs github.com/icebeam/icebeam/iceberg/catalogs/postgres, which
// links the pgx driver. Tables stored on gs:// or s3:// need the matching
// package under github.com/icebeam/icebeam/iceberg/storage.
package sql
