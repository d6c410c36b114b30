// Package config holds the configuration types shared by the read, write and cdc
// packages: ReadConfig, WriteConfig, the managed-style key constants, their parsing from
// map[string]any, their inverse Map, validation, and the sentinel errors. Package iceberg
// re-exports them with aliases.
package config
