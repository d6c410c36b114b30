// Package catalogs builds iceberg-go catalogs from a catalog name and
// catalog_properties, and caches catalogs, table metadata and FileIOs per
// process so that workers reuse one of each per configuration.
//
// Catalogs are built explicitly from props["type"] (sql, rest, hadoop, glue,
// hive) with the iceberg-go constructor of that type; catalog.Load is never
// used, so a ~/.iceberg-go.yaml or $GOICEBERG_HOME on a worker cannot change
// what a pipeline sees.
//
//   - sql: props["uri"] is the DSN. sql.driver absent, "sqlite" or "sqlite3"
//     selects the pure-Go SQLite driver of sqliteshim (WAL, a busy timeout and
//     immediate transactions are added to file DSNs that do not set them);
//     "postgres", "pgx" or "pgx/v5" select pgx; "mysql" selects
//     go-sql-driver/mysql. The catalog's tables are created when missing.
//   - rest: uri, warehouse, credential, token, scope, audience, resource,
//     prefix, oauth2-server-uri, header.<Name> and the rest.* keys of
//     iceberg-go. rest.auth.type=google authenticates every request with a
//     Google Application Default Credentials token (BigLake's REST catalog).
//   - hadoop: warehouse. glue: glue.* keys. hive: uri and warehouse.
//
// Secrets in properties (see Redact) never appear in the errors of this
// package.
package catalogs
