package read

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// Spec is everything a worker needs to plan and read a table scan. It is built and
// validated at pipeline construction and travels to workers as a typed field of the
// read DoFns (the SDK serializes a DoFn's exported fields itself), so it holds plain
// values only: no clients.
type Spec struct {
	// CatalogName and CatalogProps identify the catalog (props as sorted key/value pairs).
	CatalogName  string      `json:"catalog_name"`
	CatalogProps [][2]string `json:"catalog_props"`
	// Table is the table identifier, e.g. "db.events".
	Table string `json:"table"`
	// SnapshotID pins the snapshot to read (0: the branch's or table's current snapshot).
	SnapshotID int64 `json:"snapshot_id,omitempty"`
	// AsOfMs reads the snapshot current at this time (epoch millis; 0: unset).
	AsOfMs int64 `json:"as_of_ms,omitempty"`
	// Branch reads the head of a branch or tag instead of main.
	Branch string `json:"branch,omitempty"`
	// Filter is the SQL row filter, validated at construction and parsed again by
	// workers against the schema they read (empty: no filter). iceberg-go cannot
	// serialize unbound timestamp literals, so the SQL is what travels.
	Filter string `json:"filter,omitempty"`
	// Columns are the columns emitted, in output order (empty: all columns).
	Columns []string `json:"columns,omitempty"`
	// Expect are the columns read with the types of the schema the read was built
	// against when it was given up front instead of loaded (ResolveSchema): planning
	// checks the table against them. Empty when construction loaded the table.
	Expect []ExpectedColumn `json:"expect,omitempty"`
}

// ExpectedColumn is a column a read built from a given schema reads, with its type
// as the schema gave it (ibg.Type's String form).
type ExpectedColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// CheckExpected reports, naming the table and the column, each expected column that
// sc (the table's schema when the job runs) lacks or holds with another type.
func (s Spec) CheckExpected(sc *ibg.Schema) error {
	var errs config.Errors
	for _, c := range s.Expect {
		f, ok := sc.FindFieldByName(c.Name)
		switch {
		case !ok:
			errs.Add(config.OpErrorf("read", s.Table, "%w: column %q of the schema given to the read (WithSchema) is not in the table (columns: %s)",
				config.ErrInvalidConfig, c.Name, strings.Join(topNames(sc), ", ")))
		case f.Type.String() != c.Type:
			errs.Add(config.OpErrorf("read", s.Table, "%w: column %q is %s in the table, %s in the schema given to the read (WithSchema)",
				config.ErrInvalidConfig, c.Name, f.Type, c.Type))
		}
	}
	return errs.Err()
}

// topNames returns the names of sc's top-level columns.
func topNames(sc *ibg.Schema) []string {
	out := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// Props returns the catalog properties as a map.
func (s Spec) Props() map[string]string {
	m := make(map[string]string, len(s.CatalogProps))
	for _, kv := range s.CatalogProps {
		m[kv[0]] = kv[1]
	}
	return m
}

// SortedProps turns a property map into the sorted pairs Spec carries.
func SortedProps(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// FilterExpr returns the row filter (AlwaysTrue when none), its literals typed by sc.
func (s Spec) FilterExpr(sc *ibg.Schema) (ibg.BooleanExpression, error) {
	if s.Filter == "" {
		return ibg.AlwaysTrue{}, nil
	}
	e, err := ParseFilter(s.Filter, sc)
	if err != nil {
		return nil, config.WrapOp("read", s.Table, err)
	}
	return e, nil
}

// ScanOptions returns the iceberg-go scan options for the spec.
func (s Spec) ScanOptions(sc *ibg.Schema) ([]table.ScanOption, error) {
	filter, err := s.FilterExpr(sc)
	if err != nil {
		return nil, err
	}
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithCaseSensitive(true)}
	if _, cols := unknownColumns(sc, s.Filter, s.Columns); len(cols) > 0 {
		opts = append(opts, table.WithSelectedFields(cols...))
	}
	switch {
	case s.SnapshotID != 0:
		opts = append(opts, table.WithSnapshotID(s.SnapshotID))
	case s.AsOfMs != 0:
		opts = append(opts, table.WithSnapshotAsOf(s.AsOfMs))
	}
	return opts, nil
}

// NewScan returns the scan of tbl described by the spec.
func (s Spec) NewScan(tbl *table.Table) (*table.Scan, error) {
	opts, err := s.ScanOptions(tbl.Schema())
	if err != nil {
		return nil, err
	}
	scan := tbl.Scan(opts...)
	if s.Branch != "" && s.SnapshotID == 0 && s.AsOfMs == 0 {
		scan, err = scan.UseRef(s.Branch)
		if err != nil {
			return nil, config.OpErrorf("read", s.Table, "branch %q: %w", s.Branch, err)
		}
	}
	return scan, nil
}

// Options are the user-facing read settings Resolve validates against a table.
type Options struct {
	Filter     string
	Keep, Drop []string
	SnapshotID int64
	AsOfMs     int64
	Branch     string
}

// newSpec is the Spec of a read of ident before its columns are resolved.
func newSpec(catalogName string, props map[string]string, ident string, opts Options) Spec {
	return Spec{
		CatalogName:  catalogName,
		CatalogProps: SortedProps(props),
		Table:        ident,
		SnapshotID:   opts.SnapshotID,
		AsOfMs:       opts.AsOfMs,
		Branch:       opts.Branch,
	}
}

// Resolve validates opts against the loaded table and returns the Spec workers run.
// Every problem is reported at once; each names the key, column or filter position.
func Resolve(ctx context.Context, catalogName string, props map[string]string, ident string, tbl *table.Table, opts Options) (Spec, error) {
	spec := newSpec(catalogName, props, ident, opts)
	sc := tbl.Schema()
	var errs config.Errors
	errs.Add(resolveColumns(&spec, sc, tbl.Metadata().Version(), opts))

	if opts.SnapshotID != 0 && tbl.Metadata().SnapshotByID(opts.SnapshotID) == nil {
		errs.Add(config.Errorf(config.KeySnapshotID, "table %s has no snapshot %d", ident, opts.SnapshotID))
	}
	if opts.AsOfMs != 0 && !hasSnapshotAsOf(tbl.Metadata(), opts.AsOfMs) {
		errs.Add(config.Errorf(config.KeyAsOfTimestamp, "table %s has no snapshot at or before %s",
			ident, time.UnixMilli(opts.AsOfMs).UTC().Format(time.RFC3339Nano)))
	}
	if opts.Branch != "" && tbl.Metadata().SnapshotByName(opts.Branch) == nil {
		errs.Add(config.Errorf(config.KeyBranch, "table %s has no branch or tag %q", ident, opts.Branch))
	}
	return spec, errs.Err()
}

// ResolveSchema is Resolve against sc, the table's schema given up front, without
// the table: the snapshot, time and branch are checked when the job plans the scan,
// as is the table's schema against sc (Spec.Expect: the columns read). Lineage
// columns are accepted as on a format-version 3 table.
func ResolveSchema(catalogName string, props map[string]string, ident string, sc *ibg.Schema, opts Options) (Spec, error) {
	spec := newSpec(catalogName, props, ident, opts)
	if err := resolveColumns(&spec, sc, 3, opts); err != nil {
		return Spec{}, err
	}
	names := spec.Columns
	if len(names) == 0 {
		names = topNames(sc)
	}
	for _, n := range names {
		if f, ok := sc.FindFieldByName(n); ok {
			spec.Expect = append(spec.Expect, ExpectedColumn{Name: n, Type: f.Type.String()})
		}
	}
	return spec, nil
}

// resolveColumns checks the filter, keep and drop of opts against sc (of a table of
// format version) and sets spec's Filter and Columns.
func resolveColumns(spec *Spec, sc *ibg.Schema, version int, opts Options) error {
	var errs config.Errors
	if strings.TrimSpace(opts.Filter) != "" {
		if _, err := ParseFilter(opts.Filter, sc); err != nil {
			errs.Add(&config.ConfigError{Key: config.KeyFilter, Err: err})
		} else {
			spec.Filter = opts.Filter
		}
	}

	cols, err := projectColumns(sc, version, opts.Keep, opts.Drop)
	errs.Add(err)
	spec.Columns = cols
	errs.Add(checkReadableTypes(sc, cols, spec.Table))
	return errs.Err()
}

// checkReadableTypes reports, wrapping ErrUnsupported, each column to be read (cols,
// nil for all) that holds a variant inside a list or a map: iceberg-go v0.7.0's
// Parquet projection fails on one ("cannot explicitly project list or map types").
// A variant column, or a variant field of a struct, reads.
func checkReadableTypes(sc *ibg.Schema, cols []string, ident string) error {
	var errs config.Errors
	for _, f := range sc.Fields() {
		if cols != nil && !slices.ContainsFunc(cols, func(c string) bool { return c == f.Name || strings.HasPrefix(c, f.Name+".") }) {
			continue
		}
		if path := variantInCollection(f.Type, f.Name, false); path != "" {
			errs.Add(config.OpErrorf("read", ident, "%w: column %q holds a variant inside a list or map (%s), which iceberg-go v0.7.0 cannot read; leave the column out with keep or drop",
				config.ErrUnsupported, f.Name, path))
		}
	}
	return errs.Err()
}

// variantInCollection returns the path of the first variant in t that is a list
// element or map value (at any depth below one), or "".
func variantInCollection(t ibg.Type, path string, inCollection bool) string {
	switch t := t.(type) {
	case ibg.VariantType:
		if inCollection {
			return path
		}
	case *ibg.ListType:
		return variantInCollection(t.Element, path+".element", true)
	case *ibg.MapType:
		if p := variantInCollection(t.KeyType, path+".key", true); p != "" {
			return p
		}
		return variantInCollection(t.ValueType, path+".value", true)
	case *ibg.StructType:
		for _, f := range t.FieldList {
			if p := variantInCollection(f.Type, path+"."+f.Name, inCollection); p != "" {
				return p
			}
		}
	}
	return ""
}

// hasSnapshotAsOf reports whether the snapshot log has a snapshot current at ms.
func hasSnapshotAsOf(meta table.Metadata, ms int64) bool {
	for e := range meta.SnapshotLogs() {
		if e.TimestampMs <= ms {
			return true
		}
	}
	return false
}

// projectColumns turns keep/drop into the ordered list of emitted columns (nil: all).
// On a format-version 3 table keep may also name the row lineage metadata columns
// _row_id and _last_updated_sequence_number (iceberg-go's scan fills them: a stored
// value, else first_row_id + position and the file's data sequence number).
func projectColumns(sc *ibg.Schema, version int, keep, drop []string) ([]string, error) {
	var errs config.Errors
	top := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		top = append(top, f.Name)
	}
	check := func(key, name string) bool {
		if _, ok := sc.FindFieldByName(name); ok {
			return true
		}
		if isLineageColumn(name) {
			switch {
			case key != config.KeyKeep:
				errs.Add(config.Errorf(key, "%s is a row lineage metadata column, read only when keep names it", name))
			case version < 3:
				errs.Add(config.Errorf(key, "%s: row lineage needs a format-version 3 table (this one is version %d)", name, version))
			default:
				return true
			}
			return false
		}
		errs.Add(config.Errorf(key, "unknown column %q%s (columns: %s)", name, didYouMean(name, top), strings.Join(top, ", ")))
		return false
	}
	switch {
	case len(keep) > 0:
		for _, c := range keep {
			check(config.KeyKeep, c)
		}
		return slices.Clone(keep), errs.Err()
	case len(drop) > 0:
		dropped := map[string]bool{}
		for _, c := range drop {
			if check(config.KeyDrop, c) {
				if !slices.Contains(top, c) {
					errs.Add(config.Errorf(config.KeyDrop, "column %q is nested: drop takes top-level columns", c))
				}
				dropped[c] = true
			}
		}
		var out []string
		for _, c := range top {
			if !dropped[c] {
				out = append(out, c)
			}
		}
		if len(out) == 0 && errs.Err() == nil {
			errs.Add(config.Errorf(config.KeyDrop, "drops every column of the table"))
		}
		return out, errs.Err()
	}
	return nil, nil
}

// didYouMean returns a hint naming the closest candidate, or "".
func didYouMean(name string, candidates []string) string {
	if best := config.Closest(name, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// isLineageColumn reports whether name is one of the row lineage metadata columns of
// format version 3, _row_id and _last_updated_sequence_number.
func isLineageColumn(name string) bool {
	return name == ibg.RowIDColumnName || name == ibg.LastUpdatedSequenceNumberColumnName
}
