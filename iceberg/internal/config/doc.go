// Package config holds the configuration types shared by the read, write and cdc
// packages: ReadConfig, WriteConfig, ChangesConfig, the managed-style key constants, their
// parsing from map[string]any (and JSON or YAML), their inverse Map, validation,
// partition and sort term parsing, and the sentinel errors. ReadConfig and ChangesConfig
// embed the keys they share: Source (table, catalog, filter, columns) and Range (the
// snapshot range of a changelog or continuous read). Package iceberg defines the public
// config types with the same fields, those of Source and Range in line, and converts.
//
// Each managed field of a config struct carries its key in a `managed:"<key>"` tag; the
// tags are the single source of truth for the parser and for Map. A zero field means "not
// set": integer keys are pointers so that an explicit 0 (allowed_lateness_seconds: 0) is
// kept apart from "use the default", and the defaults live in one table (WriteDefaults,
// applied by WriteConfig.Resolved). Parse(cfg.Map()) returns a config equal to cfg.
//
// Validation reports every problem at once, each as a *ConfigError naming its key, and never
// puts a property value in a message, so secrets in catalog_properties cannot leak.
package config
