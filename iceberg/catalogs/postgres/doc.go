// Package postgres links the pure-Go pgx driver for icebeam's sql catalog on
// PostgreSQL (catalog_properties type=sql, sql.driver=postgres, uri the
// PostgreSQL DSN), and registers the sql catalog type itself. Import it for
// its side effect:
//
//	import _ "github.com/icebeam/icebeam/iceberg/catalogs/postgres"
package postgres

import (
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	_ "github.com/icebeam/icebeam/iceberg/catalogs/sql" // registers type=sql
)
