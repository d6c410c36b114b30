// Package catalogs builds iceberg-go catalogs from a catalog name and
// catalog_properties, and caches catalogs, table metadata and FileIOs per
// process so that workers reuse one of each per configuration.
//
// Catalogs are built explicitly from props["type"] by the opener that the
// type's package registered (see package registry): rest is registered here
// and always linked (uri, warehouse, credential, token, scope, audience,
// resource, prefix, oauth2-server-uri, header.<Name> and the rest.* keys of
// iceberg-go; rest.auth.type=google authenticates every request with a Google
// Application Default Credentials token, as BigLake's REST catalog needs);
// sql, hadoop, glue and hive come from the packages under
// github.com/icebeam/icebeam/iceberg/catalogs, and the gs:// and s3://
// FileIOs from iceberg/storage. catalog.Load is never used, so a
// ~/.iceberg-go.yaml or $GOICEBERG_HOME on a worker cannot change what a
// pipeline sees. A type or storage scheme whose package was not imported is a
// ConfigError naming the import.
//
// Secrets in properties (see Redact) never appear in the errors of this
// package.
package catalogs
