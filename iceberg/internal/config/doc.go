// Package config holds the machinery of package iceberg's configurations (ReadConfig,
// WriteConfig, ChangesConfig and MaintainConfig, which are defined there and only
// there): the managed-style key constants and defaults, the Schema that parses a
// config struct from map[string]any (and JSON or YAML) by its `managed:"<key>"` tags
// and encodes it back (Map), the checks validation is built from, partition and sort
// term parsing, secret redaction and printing helpers, and the sentinel errors.
//
// The tags are the single source of truth for the parser and for Map. A zero field
// means "not set": integer keys are pointers so that an explicit 0
// (allowed_lateness_seconds: 0) is kept apart from "use the default", and the defaults
// live in one table (WriteDefaults, applied by WriteConfig.Resolved). Parse(cfg.Map())
// returns a config equal to cfg.
//
// Validation reports every problem at once, each as a *ConfigError naming its key, and
// never puts a property value in a message, so secrets in catalog_properties cannot
// leak.
package config
