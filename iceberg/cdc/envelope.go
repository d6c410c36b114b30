package cdc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// ErrTombstone is wrapped by the error of a change envelope that carries no change
// (with only set): a row without columns, or one whose change type is null or empty
// and whose row images (only, before_field) are null, such as the tombstone Debezium
// sends after a delete. The write skips such rows and counts them.
var ErrTombstone = errors.New("tombstone")

// UnsequencedSeq is the sequence number of an INSERT whose sequence number is null:
// a snapshot read (Debezium's "r") may carry none. It orders before every numbered
// change of the key.
const UnsequencedSeq = math.MinInt64 + 1

// Envelope reads what one change row carries: its change type (change_type_column,
// mapped by change_type_map), its sequence number (sequence_number_column) and its
// row image. Control columns may be dotted paths into struct fields ("source.lsn").
// With only, the image is that record field of the row (for DELETE and
// UPDATE_BEFORE, before_field when it is set and not null), as in a Debezium
// envelope; without it, the image is the row itself, whose top-level control
// columns are not written. It is not safe for concurrent use.
type Envelope struct {
	table     string
	changeCol string // as configured, for messages; empty: every row is an Insert
	seqCol    string
	onlyCol   string
	beforeCol string
	changeMap map[string]Kind // nil: canonical names
	// paths split at dots; change, only and before are nil when not configured
	change, seq, only, before []string
	project                   func(row.Row) (row.Row, error)

	lastIn *row.Schema
	first  [4]int // top-level position of each path's first part in lastIn, -1 absent
}

// ChangeSpec describes the change rows of a merge-on-read write: where each row's
// change type, sequence number and row image are (the change_type_column,
// change_type_map, sequence_number_column, only and before_field keys) and which
// columns are its key (equality_columns).
type ChangeSpec struct {
	// ChangeTypeColumn names the column (or dotted path) with each row's change type;
	// empty: every row is an Insert.
	ChangeTypeColumn string
	// ChangeTypeMap maps ChangeTypeColumn values to the canonical change types; nil:
	// the values are the canonical names.
	ChangeTypeMap map[string]string
	// SequenceNumberColumn names the INT64 column (or dotted path) ordering a key's
	// changes; empty: config.DefaultSequenceNumberColumn.
	SequenceNumberColumn string
	// EqualityColumns are the key columns.
	EqualityColumns []string
	// Only names the field holding each change's row image, BeforeField the field
	// holding its before-image (see Envelope); empty: the row itself is the image.
	Only, BeforeField string
}

// Positions of the paths in Envelope.first.
const (
	pathChange = iota
	pathSeq
	pathOnly
	pathBefore
)

// NewEnvelope returns the envelope of cfg's change type, sequence number, only and
// before fields, for table (its name, for messages). Errors wrap
// config.ErrInvalidConfig.
func NewEnvelope(table string, cfg ChangeSpec) (*Envelope, error) {
	fail := func(err error) (*Envelope, error) {
		return nil, fmt.Errorf("iceberg: cdc %s: %w", table, err)
	}
	e := &Envelope{table: table, changeCol: cfg.ChangeTypeColumn, seqCol: cfg.SequenceNumberColumn,
		onlyCol: cfg.Only, beforeCol: cfg.BeforeField}
	if e.seqCol == "" {
		e.seqCol = config.DefaultSequenceNumberColumn
	}
	if e.beforeCol != "" && e.onlyCol == "" {
		return fail(config.Errorf(config.KeyBeforeField, "needs %s", config.KeyOnly))
	}
	split := func(p string) []string {
		if p == "" {
			return nil
		}
		return strings.Split(p, ".")
	}
	e.change, e.seq, e.only, e.before = split(e.changeCol), split(e.seqCol), split(e.onlyCol), split(e.beforeCol)
	if len(cfg.ChangeTypeMap) > 0 {
		if e.changeCol == "" {
			return fail(config.Errorf(config.KeyChangeTypeMap, "needs %s", config.KeyChangeTypeColumn))
		}
		e.changeMap = make(map[string]Kind, len(cfg.ChangeTypeMap))
		for from, to := range cfg.ChangeTypeMap {
			k, err := ParseKind(to)
			if err != nil {
				return fail(config.Errorf(config.KeyChangeTypeMap+"."+from, "%v", err))
			}
			e.changeMap[from] = k
		}
	}
	return e, nil
}

// SetProjection makes the envelope apply f (keep or drop) to each row image.
func (e *Envelope) SetProjection(f func(row.Row) (row.Row, error)) { e.project = f }

// topLevelControl reports whether name is a top-level control column of rows
// without only: such columns are not part of the row image.
func (e *Envelope) topLevelControl(name string) bool {
	if e.only != nil {
		return false
	}
	return (len(e.seq) == 1 && name == e.seqCol) || (len(e.change) == 1 && name == e.changeCol)
}

func (e *Envelope) invalid(format string, args ...any) error {
	return fmt.Errorf("iceberg: cdc %s: %w: %s", e.table, ErrInvalidChange, fmt.Sprintf(format, args...))
}

// firsts returns the top-level positions of the paths' first parts in schema in.
func (e *Envelope) firsts(in *row.Schema) [4]int {
	if in == e.lastIn {
		return e.first
	}
	var out [4]int
	for i, p := range [4][]string{e.change, e.seq, e.only, e.before} {
		out[i] = -1
		if p != nil {
			out[i] = in.Index(p[0])
		}
	}
	e.lastIn, e.first = in, out
	return out
}

// lookup returns the value at path (whose first part is at top-level position
// first) in r. A null struct on the way makes the value null. found is false when
// a part is missing; err names a part that is not a record.
func lookup(r row.Row, first int, path []string, name string) (v any, found bool, err error) {
	if first < 0 {
		return nil, false, nil
	}
	v = r.Value(first)
	for i, part := range path[1:] {
		if v == nil {
			return nil, true, nil
		}
		rec, ok := v.(row.Row)
		if !ok {
			return nil, false, fmt.Errorf("field path %q: %q holds %T, not a record", name, strings.Join(path[:i+1], "."), v)
		}
		if v, ok = rec.Get(part); !ok {
			return nil, false, nil
		}
	}
	return v, true, nil
}

// IsTombstone reports whether r is a tombstone (see ErrTombstone): with only set, a
// row without columns, or one whose change type (when configured) is null or empty
// and whose only and before_field are null.
func (e *Envelope) IsTombstone(r row.Row) bool {
	if e.only == nil {
		return false
	}
	in := r.Schema()
	if in == nil || in.Len() == 0 {
		return true
	}
	first := e.firsts(in)
	for _, p := range []struct {
		at   int
		path []string
		name string
	}{{pathChange, e.change, e.changeCol}, {pathOnly, e.only, e.onlyCol}, {pathBefore, e.before, e.beforeCol}} {
		if p.path == nil {
			continue
		}
		v, found, err := lookup(r, first[p.at], p.path, p.name)
		if err != nil || !found {
			return false
		}
		if s, ok := v.(string); !(v == nil || ok && s == "" && p.at == pathChange) {
			return false
		}
	}
	return true
}

// tombstoneOr returns an error wrapping ErrTombstone when r is a tombstone, else err.
func (e *Envelope) tombstoneOr(r row.Row, err error) error {
	if e.IsTombstone(r) {
		return fmt.Errorf("iceberg: cdc %s: %w: the change type and the row images are null", e.table, ErrTombstone)
	}
	return err
}

// Open returns the change type, the sequence number and the row image of r. The
// image of a row without only still holds its top-level control columns. An error
// wraps ErrTombstone (see IsTombstone) or ErrInvalidChange and names the column: a
// missing, null or unknown change type, a missing sequence number or a null one on
// a change other than an INSERT (an INSERT without one gets UnsequencedSeq), a
// missing or null row image, or a path through a field that is not a record.
func (e *Envelope) Open(r row.Row) (kind Kind, seq int64, img row.Row, err error) {
	fail := func(err error) (Kind, int64, row.Row, error) { return 0, 0, row.Row{}, err }
	in := r.Schema()
	if in == nil || in.Len() == 0 {
		if e.only != nil {
			return fail(fmt.Errorf("iceberg: cdc %s: %w: a row without columns", e.table, ErrTombstone))
		}
		return fail(e.invalid("row without columns"))
	}
	first := e.firsts(in)
	kind = Insert
	if e.change != nil {
		v, found, err := lookup(r, first[pathChange], e.change, e.changeCol)
		switch {
		case err != nil:
			return fail(e.invalid("change type column: %v", err))
		case !found:
			return fail(e.invalid("no change type column %q", e.changeCol))
		}
		if kind, err = e.kind(v); err != nil {
			return fail(e.tombstoneOr(r, err))
		}
	}
	img = r
	if e.only != nil {
		if img, err = e.image(r, first, kind); err != nil {
			return fail(e.tombstoneOr(r, err))
		}
	}
	if e.project != nil {
		if img, err = e.project(img); err != nil {
			return fail(e.invalid("%v", err))
		}
	}
	v, found, err := lookup(r, first[pathSeq], e.seq, e.seqCol)
	switch {
	case err != nil:
		return fail(e.invalid("sequence number column: %v", err))
	case !found:
		return fail(e.invalid("no sequence number column %q", e.seqCol))
	}
	switch s := v.(type) {
	case nil:
		if kind != Insert {
			return fail(e.invalid("sequence number column %q is null (only an INSERT, such as a snapshot read, may have none)", e.seqCol))
		}
		seq = UnsequencedSeq
	case int64:
		seq = s
	case int32:
		seq = int64(s)
	case int:
		seq = int64(s)
	default:
		return fail(e.invalid("sequence number column %q holds %#v (%T), want a long", e.seqCol, s, s))
	}
	return kind, seq, img, nil
}

// image returns the row image of envelope r of kind: before_field for a DELETE or
// UPDATE_BEFORE when it is set and not null, otherwise only.
func (e *Envelope) image(r row.Row, first [4]int, kind Kind) (row.Row, error) {
	name := e.onlyCol
	var v any
	if e.before != nil && (kind == Delete || kind == UpdateBefore) {
		b, found, err := lookup(r, first[pathBefore], e.before, e.beforeCol)
		switch {
		case err != nil:
			return row.Row{}, e.invalid("%s: %v", config.KeyBeforeField, err)
		case !found:
			return row.Row{}, e.invalid("no record field %q (%s)", e.beforeCol, config.KeyBeforeField)
		}
		v, name = b, e.beforeCol
	}
	if v == nil {
		a, found, err := lookup(r, first[pathOnly], e.only, e.onlyCol)
		switch {
		case err != nil:
			return row.Row{}, e.invalid("%s: %v", config.KeyOnly, err)
		case !found:
			return row.Row{}, e.invalid("no record field %q (%s)", e.onlyCol, config.KeyOnly)
		}
		v, name = a, e.onlyCol
	}
	switch x := v.(type) {
	case nil:
		if e.before != nil && (kind == Delete || kind == UpdateBefore) {
			return row.Row{}, e.invalid("no row image: %q and %q are null (change type %s)", e.beforeCol, e.onlyCol, kind)
		}
		return row.Row{}, e.invalid("no row image: %q is null (change type %s)", e.onlyCol, kind)
	case row.Row:
		if x.Schema() == nil {
			return row.Row{}, e.invalid("no row image: %q has no fields", name)
		}
		return x, nil
	default:
		return row.Row{}, e.invalid("record field %q holds %T, not a record", name, v)
	}
}

// kind parses the change type value v.
func (e *Envelope) kind(v any) (Kind, error) {
	s, ok := v.(string)
	if !ok {
		if v == nil {
			return 0, e.invalid("change type column %q is null", e.changeCol)
		}
		return 0, e.invalid("change type column %q holds %v (%T), want a string", e.changeCol, v, v)
	}
	if e.changeMap != nil {
		if k, ok := e.changeMap[s]; ok {
			return k, nil
		}
		known := make([]string, 0, len(e.changeMap))
		for from := range e.changeMap {
			known = append(known, from)
		}
		sort.Strings(known)
		return 0, e.invalid("change type column %q: unknown value %q (change_type_map has %s)",
			e.changeCol, s, strings.Join(known, ", "))
	}
	k, err := ParseKind(s)
	if err != nil {
		return 0, e.invalid("change type column %q: unknown value %q (want %s, %s, %s or %s)", e.changeCol, s,
			config.ChangeInsert, config.ChangeUpdateBefore, config.ChangeUpdateAfter, config.ChangeDelete)
	}
	return k, nil
}

// Data returns the row r writes, for creating the table from it: its row image
// (projected) without top-level control columns. An error is Open's.
func (e *Envelope) Data(r row.Row) (row.Row, error) {
	_, _, img, err := e.Open(r)
	if err != nil {
		return row.Row{}, err
	}
	in := img.Schema()
	var names []string
	var types []ibg.Type
	var vals []any
	var required []bool
	for i, n := range in.Names() {
		if !e.topLevelControl(n) {
			names, types, vals = append(names, n), append(types, in.Types()[i]), append(vals, img.Value(i))
			required = append(required, in.Required(i))
		}
	}
	if len(names) == in.Len() {
		return img, nil
	}
	return row.Of(row.NewRequiredSchema(names, types, required), vals), nil
}

// ImageSchemas returns the schemas of the row images of change rows of schema sc
// (a struct type's inferred schema): without only, sc without its top-level
// control columns; with only, the struct type of only, then that of before_field
// when set. The control columns must be there: the change type a string (when
// configured), the sequence number a long. Errors name the key.
func (e *Envelope) ImageSchemas(sc *ibg.Schema) ([]*ibg.Schema, error) {
	whole := &ibg.StructType{FieldList: sc.Fields()}
	var errs config.Errors
	checks := []struct {
		key  string
		path []string
		want ibg.Type
	}{{config.KeySequenceNumberColumn, e.seq, ibg.PrimitiveTypes.Int64}}
	if e.change != nil {
		checks = append(checks, struct {
			key  string
			path []string
			want ibg.Type
		}{config.KeyChangeTypeColumn, e.change, ibg.PrimitiveTypes.String})
	}
	for _, c := range checks {
		t, err := fieldType(whole, c.path, c.key)
		switch {
		case err != nil:
			errs.Add(err)
		case !t.Equals(c.want):
			errs.Add(config.Errorf(c.key, "column %q is %s in the rows, want %s", strings.Join(c.path, "."), t, c.want))
		}
	}
	var out []*ibg.Schema
	if e.only == nil {
		var fields []ibg.NestedField
		for _, f := range sc.Fields() {
			if !e.topLevelControl(f.Name) {
				fields = append(fields, f)
			}
		}
		out = append(out, ibg.NewSchema(sc.ID, fields...))
	}
	for _, p := range []struct {
		key  string
		path []string
	}{{config.KeyOnly, e.only}, {config.KeyBeforeField, e.before}} {
		if p.path == nil {
			continue
		}
		t, err := fieldType(whole, p.path, p.key)
		if err != nil {
			errs.Add(err)
			continue
		}
		st, ok := t.(*ibg.StructType)
		if !ok {
			errs.Add(config.Errorf(p.key, "field %q is %s in the rows, not a record", strings.Join(p.path, "."), t))
			continue
		}
		out = append(out, ibg.NewSchema(sc.ID, slices.Clone(st.FieldList)...))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ImagePrefixes returns, in ImageSchemas' order, the dotted prefix of each row image's
// fields in the rows: "" for the row itself, "after." for only "after".
func (e *Envelope) ImagePrefixes() []string {
	var out []string
	if e.only == nil {
		out = append(out, "")
	}
	for _, p := range [][]string{e.only, e.before} {
		if p != nil {
			out = append(out, strings.Join(p, ".")+".")
		}
	}
	return out
}

// fieldType returns the type of the field at path in st, or an error naming key:
// a missing field or a part that is not a struct.
func fieldType(st *ibg.StructType, path []string, key string) (ibg.Type, error) {
	var t ibg.Type = st
	for i, part := range path {
		s, ok := t.(*ibg.StructType)
		if !ok {
			return nil, config.Errorf(key, "field path %q: %q is %s in the rows, not a struct",
				strings.Join(path, "."), strings.Join(path[:i], "."), t)
		}
		j := slices.IndexFunc(s.FieldList, func(f ibg.NestedField) bool { return f.Name == part })
		if j < 0 {
			return nil, missingField(s, path, i, key)
		}
		t = s.FieldList[j].Type
	}
	return t, nil
}

// missingField is the error of fieldType for path, whose part i is not a field of
// s: it names the closest path and lists the fields of s (the columns, at i 0), and
// for the default sequence number column says which key to set.
func missingField(s *ibg.StructType, path []string, i int, key string) error {
	prefix := strings.Join(path[:i], ".")
	names := make([]string, len(s.FieldList))
	paths := make([]string, len(s.FieldList))
	for k, f := range s.FieldList {
		names[k], paths[k] = f.Name, f.Name
		if i > 0 {
			paths[k] = prefix + "." + f.Name
		}
	}
	full := strings.Join(path, ".")
	hint := ""
	if near := config.Closest(full, paths); near != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", near)
	}
	if i == 0 {
		fix := ""
		if key == config.KeySequenceNumberColumn && full == config.DefaultSequenceNumberColumn {
			fix = fmt.Sprintf(": set %s to the long column (or dotted path into a struct, such as source.lsn) that orders each key's changes",
				config.KeySequenceNumberColumn)
		}
		return config.Errorf(key, "the rows have no column %q%s%s; columns: %s", full, hint, fix, strings.Join(names, ", "))
	}
	return config.Errorf(key, "the rows have no field %q (no %q in %q)%s; fields of %q: %s",
		full, path[i], prefix, hint, prefix, strings.Join(names, ", "))
}
