package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	ibg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/iceberg/write/commit"
)

// SchemaUpdates counts the schema updates evolve_schema committed (see EvolveTable).
var SchemaUpdates = beam.NewCounter(commit.MetricsNamespace, "schema_updates")

// SchemaChange is one change EvolveTable makes to a table's schema: exactly one of
// Add (a new optional column of that type), Widen (an existing column's wider type)
// and Optional (a required column becomes optional) is set.
type SchemaChange struct {
	// Path names the column from the top level ("element", "key" and "value" step
	// into lists and maps).
	Path     []string
	Add      ibg.Type
	Widen    ibg.Type
	Optional bool
}

func (c SchemaChange) String() string {
	name := strings.Join(c.Path, ".")
	switch {
	case c.Add != nil:
		return fmt.Sprintf("add %s %s", name, c.Add)
	case c.Widen != nil:
		return fmt.Sprintf("widen %s to %s", name, c.Widen)
	}
	return "make " + name + " optional"
}

// PlanEvolution returns the changes that let a table of schema sc take row r (already
// projected), nil when it can as it is:
//
//   - a column (or struct field) r has and sc lacks becomes a new optional column of
//     the type r declares for it, or of its value's inferred type (row.InferType),
//     nested fields optional too;
//   - a column whose value sc's type cannot take (see row.Normalize) widens: int to
//     long, float to double, decimal(P,S) to decimal(P2,S) with P2 > P;
//   - a required column r leaves null, or lacks, becomes optional.
//
// Any other difference (a narrowing, another type change, a change to a column of
// keys, the equality columns, or to an identifier field of sc) is an error wrapping
// ErrSchemaMismatch that names the column.
func PlanEvolution(sc *ibg.Schema, r row.Row, keys []string) ([]SchemaChange, error) {
	p := newPlanner(sc, keys)
	if err := p.row(nil, sc.Fields(), r); err != nil {
		return nil, err
	}
	return p.changes, nil
}

// CheckEvolvable is CheckSchema for writes with evolve_schema: it reports whether
// rows of schema rows (inferred from a Go struct type) can be written to a table of
// schema tbl once it has evolved (see PlanEvolution; keys are the equality columns).
// The error wraps ErrSchemaMismatch and names the column.
func CheckEvolvable(tbl, rows *ibg.Schema, keys []string) error {
	ts, rs := tbl.AsStruct(), rows.AsStruct()
	return newPlanner(tbl, keys).typ(nil, ibg.NestedField{Type: &ts}, &rs)
}

func newPlanner(sc *ibg.Schema, keys []string) *planner {
	p := &planner{locked: map[int]string{}}
	for _, id := range sc.IdentifierFieldIDs {
		p.locked[id] = "an identifier field"
	}
	for _, k := range keys {
		if f, ok := sc.FindFieldByName(k); ok {
			p.locked[f.ID] = "an equality column"
		}
	}
	return p
}

type planner struct {
	locked  map[int]string // field id -> why it cannot change
	changes []SchemaChange
}

func child(path []string, name string) []string {
	return append(slices.Clip(path), name)
}

// row plans the changes for the values of r against the fields of its struct.
func (p *planner) row(path []string, fields []ibg.NestedField, r row.Row) error {
	byName := make(map[string]ibg.NestedField, len(fields))
	for _, f := range fields {
		byName[f.Name] = f
	}
	var types []ibg.Type
	if s := r.Schema(); s != nil {
		types = s.Types()
	}
	seen := make(map[string]bool, r.Len())
	for i, name := range r.Names() {
		seen[name] = true
		v, col := r.Value(i), child(path, name)
		var declared ibg.Type
		if i < len(types) {
			declared = types[i]
		}
		f, ok := byName[name]
		switch {
		case !ok:
			t := declared
			if t == nil {
				var err error
				if t, err = row.InferType(v); err != nil {
					return fmt.Errorf("%w: column %q is not in the table and its type cannot be inferred: %w",
						ErrSchemaMismatch, strings.Join(col, "."), err)
				}
			}
			p.changes = append(p.changes, SchemaChange{Path: col, Add: optionalType(t)})
			continue
		case v == nil:
			if f.Required {
				if err := p.change(col, f, SchemaChange{Optional: true}); err != nil {
					return err
				}
			}
			continue
		}
		if st, ok := f.Type.(*ibg.StructType); ok {
			if rv, ok := v.(row.Row); ok {
				if err := p.row(col, st.FieldList, rv); err != nil {
					return err
				}
				continue
			}
		}
		if _, err := row.Normalize(v, f.Type); err == nil {
			continue
		}
		t := declared
		if t == nil {
			var err error
			if t, err = row.InferType(v); err != nil {
				continue // the writer reports what is wrong with the value
			}
		}
		if err := p.typ(col, f, t); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if f.Required && !seen[f.Name] {
			if err := p.change(child(path, f.Name), f, SchemaChange{Optional: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// typ plans the changes that let field f (at path) take values of type t.
func (p *planner) typ(path []string, f ibg.NestedField, t ibg.Type) error {
	mismatch := func() error {
		return fmt.Errorf("%w: column %q is %s in the table, %s in the rows; evolve_schema only adds columns, widens int to long, float to double and decimal precision, and makes required columns optional",
			ErrSchemaMismatch, strings.Join(path, "."), f.Type, t)
	}
	switch ft := f.Type.(type) {
	case *ibg.StructType:
		rt, ok := t.(*ibg.StructType)
		if !ok {
			return mismatch()
		}
		for _, rf := range rt.FieldList {
			i := slices.IndexFunc(ft.FieldList, func(tf ibg.NestedField) bool { return tf.Name == rf.Name })
			if i < 0 {
				p.changes = append(p.changes, SchemaChange{Path: child(path, rf.Name), Add: optionalType(rf.Type)})
				continue
			}
			if err := p.typ(child(path, rf.Name), ft.FieldList[i], rf.Type); err != nil {
				return err
			}
		}
		return nil
	case *ibg.ListType:
		rt, ok := t.(*ibg.ListType)
		if !ok {
			return mismatch()
		}
		return p.typ(child(path, "element"), ft.ElementField(), rt.Element)
	case *ibg.MapType:
		rt, ok := t.(*ibg.MapType)
		if !ok || checkType(strings.Join(path, ".")+".key", ft.KeyType, rt.KeyType) != nil {
			return mismatch()
		}
		return p.typ(child(path, "value"), ft.ValueField(), rt.ValueType)
	}
	if checkType(strings.Join(path, "."), f.Type, t) == nil {
		return nil
	}
	if !widens(f.Type, t) {
		return mismatch()
	}
	return p.change(path, f, SchemaChange{Widen: t})
}

// change adds c for field f at path unless f may not change.
func (p *planner) change(path []string, f ibg.NestedField, c SchemaChange) error {
	c.Path = path
	if why, ok := p.locked[f.ID]; ok {
		return fmt.Errorf("%w: column %q is %s: evolve_schema cannot %s", ErrSchemaMismatch, strings.Join(path, "."), why, c)
	}
	p.changes = append(p.changes, c)
	return nil
}

// widens reports whether a column of type from may become type to: int to long,
// float to double, decimal(P,S) to decimal(P2,S) with P2 > P.
func widens(from, to ibg.Type) bool {
	switch f := from.(type) {
	case ibg.Int32Type:
		_, ok := to.(ibg.Int64Type)
		return ok
	case ibg.Float32Type:
		_, ok := to.(ibg.Float64Type)
		return ok
	case ibg.DecimalType:
		t, ok := to.(ibg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	}
	return false
}

// optionalType returns t with every nested field, list element and map value optional.
func optionalType(t ibg.Type) ibg.Type {
	switch t := t.(type) {
	case *ibg.StructType:
		fs := slices.Clone(t.FieldList)
		for i := range fs {
			fs[i].Required = false
			fs[i].Type = optionalType(fs[i].Type)
		}
		return &ibg.StructType{FieldList: fs}
	case *ibg.ListType:
		return &ibg.ListType{ElementID: t.ElementID, Element: optionalType(t.Element)}
	case *ibg.MapType:
		return &ibg.MapType{KeyID: t.KeyID, KeyType: t.KeyType, ValueID: t.ValueID, ValueType: optionalType(t.ValueType)}
	}
	return t
}

// EvolveTable evolves the schema of table ident so that it takes row r (see
// PlanEvolution; keys are the write's equality columns) and returns the table as it
// is then. The update is one commit that requires the schema it was planned against:
// on a conflict (another worker evolved or wrote the table first) the loop reloads
// the table and plans again, so that a column another worker added with a type that
// fits is success, not an error, and nothing is added twice. reject (wrapping
// ErrSchemaMismatch) is a reason to dead-letter r; err is a failure of the catalog.
func EvolveTable(ctx context.Context, cat table.CatalogIO, ident table.Identifier, r row.Row, keys []string) (tbl *table.Table, reject, err error) {
	name := strings.Join(ident, ".")
	ev := &evolution{name: name, row: r, keys: keys}
	out, err := commit.Committer{}.CommitTable(ctx, cat, ident, ev)
	if err != nil {
		return nil, nil, config.WrapOp("write", name, fmt.Errorf("evolve schema: %w", err))
	}
	if out.Table != nil {
		log.Infof(ctx, "iceberg: write %s: evolved the schema to id %d: %v", name, out.Table.Schema().ID, ev.changes)
		SchemaUpdates.Inc(ctx, 1)
		ev.tbl = out.Table
	}
	return ev.tbl, ev.reject, nil
}

// evolution is the Change of EvolveTable: one schema update that lets the table take
// row, planned on each attempt's table.
type evolution struct {
	name    string
	row     row.Row
	keys    []string
	changes []SchemaChange // those of the last attempt
	tbl     *table.Table   // the table that needs no change (nothing committed)
	reject  error          // why the row cannot evolve the table
}

func (e *evolution) Op() string { return "evolve schema" }

// Stage plans the row's schema changes on a.Table and stages them; it ends without a
// commit when there is nothing to change or the row cannot evolve the table (reject).
func (e *evolution) Stage(_ context.Context, a *commit.Attempt) (bool, error) {
	var perr error
	e.changes, perr = PlanEvolution(a.Table.Schema(), e.row, e.keys)
	if perr != nil {
		e.reject = config.WrapOp("write", e.name, perr)
		return true, nil
	}
	if len(e.changes) == 0 {
		// Nothing to add: another worker's update, or (after a lost response) ours.
		e.tbl = a.Table
		return true, nil
	}
	for _, c := range e.changes {
		if c.Add != nil && hasVariant(c.Add) {
			e.reject = config.OpErrorf("write", e.name, "%w: evolve_schema cannot add column %q of type %s: iceberg-go v0.7.0's schema update refuses the variant type; add the column to the table first",
				ErrSchemaMismatch, strings.Join(c.Path, "."), c.Add)
			return true, nil
		}
	}
	us := a.Txn.UpdateSchema(true, false)
	for _, c := range e.changes {
		switch {
		case c.Add != nil:
			us.AddColumn(c.Path, c.Add, "", false, nil)
		case c.Widen != nil:
			us.UpdateColumn(c.Path, table.ColumnUpdate{FieldType: ibg.Optional[ibg.Type]{Valid: true, Val: c.Widen}})
		default:
			us.UpdateColumn(c.Path, table.ColumnUpdate{Required: ibg.Optional[bool]{Valid: true, Val: false}})
		}
	}
	if err := us.Commit(); err != nil {
		e.reject = config.OpErrorf("write", e.name, "%w: %v: %w", ErrSchemaMismatch, e.changes, err)
		return true, nil
	}
	return false, nil
}

// Landed is false: the next attempt plans again, and finds nothing to change when an
// earlier attempt's update landed.
func (e *evolution) Landed(context.Context, *commit.Attempt) (bool, error) { return false, nil }

// Abandon does nothing: a schema update writes no file.
func (e *evolution) Abandon(context.Context, *commit.Attempt) {}

// hasVariant reports whether t is or holds a variant.
func hasVariant(t ibg.Type) bool {
	switch t := t.(type) {
	case ibg.VariantType:
		return true
	case *ibg.ListType:
		return hasVariant(t.Element)
	case *ibg.MapType:
		return hasVariant(t.KeyType) || hasVariant(t.ValueType)
	case *ibg.StructType:
		for _, f := range t.FieldList {
			if hasVariant(f.Type) {
				return true
			}
		}
	}
	return false
}
