package config

import (
	"slices"
	"strings"
)

// The catalog properties each catalog type reads, as checked against the sources of
// iceberg-go v0.7.0 and icebeam's openers (iceberg/internal/catalogs,
// iceberg/catalogs/...). A property no part of the catalog or its FileIO reads would
// be silently ignored (a misspelled "warehose" surfaced only at run time, as
// iceberg-go's "no default path set"), so CheckCatalogProperties rejects it.
var (
	// storageProperties are read by the FileIO of every catalog type: iceberg-go's
	// io.LoadFS (warehouse, the default location) and its gocloud backends
	// (io/config.go: s3, gcs, adls), with the expiry keys of vended credentials
	// (catalog/rest/vended_creds.go).
	storageProperties = []string{
		"warehouse",
		"s3.region", "s3.session-token", "s3.secret-access-key", "s3.access-key-id", "s3.endpoint",
		"s3.proxy-uri", "s3.connect-timeout", "s3.signer.uri", "s3.remote-signing-enabled",
		"s3.force-virtual-addressing", "s3.compat-mode", "s3.session-token-expires-at-ms", "client.region",
		"gcs.endpoint", "gcs.service.host", "gcs.keypath", "gcs.jsonkey", "gcs.credtype", "gcs.usejsonapi",
		"gcs.oauth2.token", "gcs.oauth2.token-expires-at", "gcs.no-auth",
		"adls.auth.shared-key.account.name", "adls.auth.shared-key.account.key", "adls.endpoint",
		"adls.protocol", "adls.auth.managed-identity.enabled", "adls.client-id", "adls.sas-token-expires-at-ms",
		// metrics.ReporterImplKey: every catalog type builds its metrics reporter from it.
		"metrics-reporter-impl",
	}
	// storagePrefixes are FileIO properties named per account or host
	// (io.ADLSSasTokenPrefix, io.ADLSConnectionStringPrefix).
	storagePrefixes = []string{"adls.sas-token.", "adls.connection-string."}

	// catalogProperties are the properties each catalog type reads besides type and
	// the storage properties.
	catalogProperties = map[string][]string{
		// iceberg/catalogs/sql and iceberg-go catalog/sql (DriverKey, DialectKey,
		// initCatalogTablesKey, SchemaVersionKey).
		"sql": {"uri", "sql.driver", "sql.dialect", "init_catalog_tables", "jdbc.schema-version"},
		// iceberg/internal/catalogs/rest.go and iceberg-go catalog/rest (rest.go,
		// metrics_reporter.go); "token" is also the S3 remote signer's.
		"rest": {"uri", "rest.auth.type", "credential", "token", "scope", "audience", "resource", "prefix",
			"metadata_location", "rest.authorization-url", "oauth2-server-uri", "rest.sigv4-enabled",
			"rest.signing-region", "rest.signing-name", "rest.tls.skip-verify", "namespace-separator",
			"snapshot-loading-mode", "view-endpoints-supported", "rest-metrics-reporting-enabled",
			"rest.metrics-reporting-enabled", "rest-metrics-reporting-timeout-ms"},
		// iceberg-go catalog/hadoop: allow-unsafe-commits (object-store warehouses).
		"hadoop": {"allow-unsafe-commits"},
		// iceberg/catalogs/glue and iceberg-go catalog/glue.
		"glue": {"glue.id", "glue.skip-archive", "glue.access-key-id", "glue.secret-access-key",
			"glue.session-token", "glue.region", "glue.endpoint", "glue.max-retries", "glue.retry-mode"},
		// iceberg-go catalog/hive/options.go.
		"hive": {"uri", "iceberg.hive.lock-check-min-wait-ms", "iceberg.hive.lock-check-max-wait-ms",
			"lock-check-min-wait-time", "lock-check-max-wait-time", "lock-check-retries"},
	}
	// catalogPrefixes are properties of a catalog type named by a prefix: the REST
	// catalog's request headers (header.x-goog-user-project).
	catalogPrefixes = map[string][]string{"rest": {"header."}}
)

// KnownCatalogProperty reports whether the catalog of type typ (lower case) reads
// property k, or is true when typ is not a known catalog type.
func KnownCatalogProperty(typ, k string) bool {
	own, ok := catalogProperties[typ]
	if !ok {
		return true
	}
	if k == "type" || slices.Contains(own, k) || slices.Contains(storageProperties, k) {
		return true
	}
	for _, p := range append(slices.Clone(storagePrefixes), catalogPrefixes[typ]...) {
		if strings.HasPrefix(k, p) && len(k) > len(p) {
			return true
		}
	}
	return false
}

// CheckCatalogProperties reports every property of props that the catalog of its
// type does not read (nothing when the type is missing or unknown: CheckCommon
// reports that), naming the closest property it reads. Values are never quoted.
func CheckCatalogProperties(errs *Errors, props map[string]string) {
	typ := strings.ToLower(strings.TrimSpace(props["type"]))
	own, ok := catalogProperties[typ]
	if !ok {
		return
	}
	for _, k := range SortedKeys(props) {
		if Blank(k) || KnownCatalogProperty(typ, k) {
			continue
		}
		candidates := append(slices.Clone(own), storageProperties...)
		candidates = append(candidates, "type")
		hint := ""
		if near := Closest(k, candidates); near != "" {
			hint = " (did you mean \"" + near + "\"?)"
		}
		prefixes := []string{"s3.*", "gcs.*", "adls.*", "client.region"}
		if typ == "rest" {
			prefixes = append([]string{"header.*"}, prefixes...)
		}
		errs.Add(Errorf(KeyCatalogProperties+"."+k, "unknown property for catalog type %s%s: it reads %s, warehouse, and storage properties (%s)",
			typ, hint, strings.Join(own, ", "), strings.Join(prefixes, ", ")))
	}
}
