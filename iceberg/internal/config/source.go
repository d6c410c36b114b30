package config

import "strings"

// Source holds the keys that name the table a read reads and what of it: the catalog,
// the filter and the columns. ReadConfig and ChangesConfig embed it first; the public
// types in package iceberg have its fields in line, at the same place.
type Source struct {
	// Table is the table identifier, e.g. "shop.orders". Required.
	Table string `managed:"table"`
	// CatalogName is the name of the catalog holding the table. Required.
	CatalogName string `managed:"catalog_name"`
	// CatalogProperties build the catalog; "type" is required. Values of secret keys (see
	// IsSecretKey) are never logged or put in errors.
	CatalogProperties map[string]string `managed:"catalog_properties"`
	// ConfigProperties are Hadoop properties. Not supported: any entry is an error.
	ConfigProperties map[string]string `managed:"config_properties"`
	// Filter is a SQL predicate (Calcite syntax): only rows matching it are read. It is
	// pushed into the scan.
	Filter string `managed:"filter"`
	// Keep lists the only columns to emit. Exclusive with Drop.
	Keep []string `managed:"keep"`
	// Drop lists the columns not to emit. Exclusive with Keep.
	Drop []string `managed:"drop"`
}

// check reports the problems of the source keys: the table and catalog (see
// checkCommon), a table template (writes only), keep with drop, and malformed column
// names.
func (s Source) check(errs *Errors) {
	checkCommon(errs, s.Table, s.CatalogName, s.CatalogProperties, s.ConfigProperties)
	if strings.ContainsAny(s.Table, "{}") {
		errs.Add(Errorf(KeyTable, "table templates ({column}) are only for writes"))
	}
	checkExclusive(errs, map[string]bool{KeyKeep: len(s.Keep) > 0, KeyDrop: len(s.Drop) > 0}, KeyKeep, KeyDrop)
	checkColumns(errs, KeyKeep, s.Keep)
	checkColumns(errs, KeyDrop, s.Drop)
}
