package config

import "reflect"

// ChangesConfig configures a changelog read (ReadChanges): the rows changed between two
// snapshots of one table, or continuously (Streaming) by each new snapshot. Each managed field is tagged with its managed key; the zero
// value of a field means "not set".
type ChangesConfig struct {
	// Source is the table, its catalog, and the filter and columns of the changed rows
	// to emit.
	Source
	// Range is the snapshot range of the changes: from FromSnapshot (exclusive),
	// FromTimestamp or StartingStrategy (default "earliest") to ToSnapshot, ToTimestamp
	// or the current snapshot (inclusive); with Streaming, continuous, polling every
	// PollIntervalSeconds.
	Range
}

var changesSchema = buildSchema("changes", reflect.TypeFor[ChangesConfig]())

// ChangesKeys returns the managed keys ChangesConfig accepts, in field order.
func ChangesKeys() []string { return append([]string(nil), changesSchema.keys...) }

// ParseChangesConfig builds a ChangesConfig from a managed-style map and validates it.
// Every problem is reported at once (see ParseReadConfig for the error form).
func ParseChangesConfig(m map[string]any) (ChangesConfig, error) {
	return parse[ChangesConfig](changesSchema, m, readSchema)
}

// ParseChangesConfigJSON parses a JSON object of managed keys (see ParseChangesConfig).
// Numbers keep their full precision, so 64-bit snapshot ids survive.
func ParseChangesConfigJSON(b []byte) (ChangesConfig, error) {
	return parseDoc(b, decodeJSON, ParseChangesConfig)
}

// ParseChangesConfigYAML parses a YAML mapping of managed keys (see ParseChangesConfig).
func ParseChangesConfigYAML(b []byte) (ChangesConfig, error) {
	return parseDoc(b, decodeYAML, ParseChangesConfig)
}

// Map returns the managed-style map of the keys set in c: the inverse of
// ParseChangesConfig.
func (c ChangesConfig) Map() map[string]any {
	return changesSchema.encode(reflect.ValueOf(c))
}

// Validate reports every problem of c at once (see ParseReadConfig for the error form).
func (c ChangesConfig) Validate() error {
	var errs Errors
	c.Source.check(&errs)
	c.Range.check(&errs)
	return errs.Err()
}
