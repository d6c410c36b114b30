package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// ErrProjection is wrapped when keep, drop or only cannot be applied to a row: a named
// field the row lacks, or an only field that is null or not a record. Rows of a
// PCollection of Row that fail go to the dead letter output; a struct type that fails
// is a construction error.
var ErrProjection = errors.New("cannot project row")

// Projection is the keep, drop or only setting of a write, with Dataflow's semantics:
// keep writes only the listed fields, drop writes all but the listed fields, only
// writes the one listed record field (which must be a struct) as the row. Fields are
// named by dotted paths: "a.b" keeps or drops field b of struct field a. Field order is
// the row's. The zero Projection writes rows as they are.
type Projection struct {
	key  string // config.KeyKeep, KeyDrop, KeyOnly; empty: none
	sel  *selector
	only []string

	cache map[*row.Schema]*projected // top-level plans by input schema
}

// selector is a set of fields of one record, each whole or projected further.
type selector struct {
	keep   bool
	fields map[string]*selector // nil value: the whole field
	order  []string             // the configured names, to report missing ones in order
}

// projected is the plan of a projection for one input row schema.
type projected struct {
	schema *row.Schema
	idx    []int       // input column of each output column
	sub    []*selector // nested projection of each output column, nil for none
}

// maxProjectionCache bounds the plans kept per Projection (rows built one schema each).
const maxProjectionCache = 1024

// NewProjection returns the Projection of keep, drop and only (at most one may be set;
// config validation enforces it).
func NewProjection(keep, drop []string, only string) (*Projection, error) {
	switch {
	case len(keep) > 0 && len(drop) == 0 && only == "":
		return &Projection{key: config.KeyKeep, sel: newSelector(true, keep)}, nil
	case len(drop) > 0 && len(keep) == 0 && only == "":
		return &Projection{key: config.KeyDrop, sel: newSelector(false, drop)}, nil
	case only != "" && len(keep) == 0 && len(drop) == 0:
		return &Projection{key: config.KeyOnly, only: strings.Split(only, ".")}, nil
	case len(keep) == 0 && len(drop) == 0 && only == "":
		return &Projection{}, nil
	}
	return nil, config.Errorf(config.KeyKeep, "keep, drop and only are mutually exclusive")
}

func newSelector(keep bool, paths []string) *selector {
	root := &selector{keep: keep, fields: map[string]*selector{}}
	for _, p := range paths {
		root.insert(strings.Split(p, "."))
	}
	return root
}

// insert adds a field path; a whole field wins over nested paths into it.
func (sel *selector) insert(path []string) {
	name := path[0]
	sub, seen := sel.fields[name]
	if !seen {
		sel.order = append(sel.order, name)
	}
	switch {
	case len(path) == 1:
		sel.fields[name] = nil
	case seen && sub == nil: // already whole
	default:
		if sub == nil {
			sub = &selector{keep: sel.keep, fields: map[string]*selector{}}
			sel.fields[name] = sub
		}
		sub.insert(path[1:])
	}
}

// field reports whether field name is written and, if so, its nested projection.
func (sel *selector) field(name string) (sub *selector, written bool) {
	sub, listed := sel.fields[name]
	if sel.keep {
		return sub, listed
	}
	return sub, !listed || sub != nil
}

// IsZero reports whether p leaves rows as they are.
func (p *Projection) IsZero() bool { return p == nil || p.key == "" }

// Apply returns r projected. An error wraps ErrProjection and names the key and field.
func (p *Projection) Apply(r row.Row) (row.Row, error) {
	if p.IsZero() {
		return r, nil
	}
	if p.only != nil {
		return p.applyOnly(r)
	}
	pl, err := p.plan(r.Schema())
	if err != nil {
		return row.Row{}, err
	}
	return pl.apply(p, "", r)
}

func (p *Projection) applyOnly(r row.Row) (row.Row, error) {
	v := any(r)
	for i, name := range p.only {
		cur, ok := v.(row.Row)
		if !ok {
			return row.Row{}, p.fail(strings.Join(p.only[:i], "."), "is %T, not a record", v)
		}
		if v, ok = cur.Get(name); !ok {
			return row.Row{}, p.fail(strings.Join(p.only[:i+1], "."), "is not in the row")
		}
	}
	out, ok := v.(row.Row)
	switch {
	case v == nil:
		return row.Row{}, p.fail(strings.Join(p.only, "."), "is null")
	case !ok:
		return row.Row{}, p.fail(strings.Join(p.only, "."), "is %T, not a record", v)
	}
	return out, nil
}

func (p *Projection) fail(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: field %q %s", ErrProjection, p.key, path, fmt.Sprintf(format, args...))
}

// plan returns the cached plan of input schema s.
func (p *Projection) plan(s *row.Schema) (*projected, error) {
	if pl, ok := p.cache[s]; ok {
		return pl, nil
	}
	pl, err := p.sel.plan(p, "", s)
	if err != nil {
		return nil, err
	}
	if p.cache == nil || len(p.cache) >= maxProjectionCache {
		p.cache = map[*row.Schema]*projected{}
	}
	p.cache[s] = pl
	return pl, nil
}

func (sel *selector) plan(p *Projection, prefix string, s *row.Schema) (*projected, error) {
	var names []string
	if s != nil {
		names = s.Names()
	}
	for _, n := range sel.order {
		if !slices.Contains(names, n) {
			return nil, p.fail(prefix+n, "is not in the row")
		}
	}
	pl := &projected{}
	var outNames []string
	var outTypes []ibg.Type
	var outRequired []bool
	for i, n := range names {
		sub, written := sel.field(n)
		if !written {
			continue
		}
		t := s.Types()[i]
		if sub != nil {
			t = sub.projectType(t)
		}
		pl.idx = append(pl.idx, i)
		pl.sub = append(pl.sub, sub)
		outNames = append(outNames, n)
		outTypes = append(outTypes, t)
		outRequired = append(outRequired, s.Required(i))
	}
	pl.schema = row.NewRequiredSchema(outNames, outTypes, outRequired)
	return pl, nil
}

func (sel *selector) apply(p *Projection, prefix string, r row.Row) (row.Row, error) {
	pl, err := sel.plan(p, prefix, r.Schema())
	if err != nil {
		return row.Row{}, err
	}
	return pl.apply(p, prefix, r)
}

// apply projects r, whose schema pl was planned for; prefix is r's path.
func (pl *projected) apply(p *Projection, prefix string, r row.Row) (row.Row, error) {
	vals := make([]any, len(pl.idx))
	for k, i := range pl.idx {
		v := r.Value(i)
		if sub := pl.sub[k]; sub != nil && v != nil {
			nested, ok := v.(row.Row)
			if !ok {
				return row.Row{}, p.fail(prefix+r.Names()[i], "is %T, not a record", v)
			}
			var err error
			if v, err = sub.apply(p, prefix+r.Names()[i]+".", nested); err != nil {
				return row.Row{}, err
			}
		}
		vals[k] = v
	}
	return row.Of(pl.schema, vals), nil
}

// projectType projects a struct type (nil or another type stays as it is: the values
// decide).
func (sel *selector) projectType(t ibg.Type) ibg.Type {
	st, ok := t.(*ibg.StructType)
	if !ok {
		return t
	}
	out := &ibg.StructType{}
	for _, f := range st.FieldList {
		sub, written := sel.field(f.Name)
		if !written {
			continue
		}
		if sub != nil {
			f.Type = sub.projectType(f.Type)
		}
		out.FieldList = append(out.FieldList, f)
	}
	return out
}

// Schema returns sc (the schema of a struct type's rows) projected, or an error naming
// a field sc lacks or an only field that is not a struct.
func (p *Projection) Schema(sc *ibg.Schema) (*ibg.Schema, error) {
	if p.IsZero() {
		return sc, nil
	}
	if p.only != nil {
		var t ibg.Type = &ibg.StructType{FieldList: sc.Fields()}
		for i, name := range p.only {
			st, ok := t.(*ibg.StructType)
			if !ok {
				return nil, p.fail(strings.Join(p.only[:i], "."), "is %s, not a record", t)
			}
			idx := slices.IndexFunc(st.FieldList, func(f ibg.NestedField) bool { return f.Name == name })
			if idx < 0 {
				return nil, p.fail(strings.Join(p.only[:i+1], "."), "is not in the row")
			}
			t = st.FieldList[idx].Type
		}
		st, ok := t.(*ibg.StructType)
		if !ok {
			return nil, p.fail(strings.Join(p.only, "."), "is %s, not a record", t)
		}
		return ibg.NewSchema(sc.ID, st.FieldList...), nil
	}
	whole := &ibg.StructType{FieldList: sc.Fields()}
	if err := p.sel.check(p, "", whole); err != nil {
		return nil, err
	}
	st := p.sel.projectType(whole).(*ibg.StructType)
	return ibg.NewSchema(sc.ID, st.FieldList...), nil
}

// check reports the first listed field that st lacks, or a nested path into a field
// that is not a struct.
func (sel *selector) check(p *Projection, prefix string, st *ibg.StructType) error {
	for _, n := range sel.order {
		idx := slices.IndexFunc(st.FieldList, func(f ibg.NestedField) bool { return f.Name == n })
		if idx < 0 {
			return p.fail(prefix+n, "is not in the row")
		}
		if sub := sel.fields[n]; sub != nil {
			nested, ok := st.FieldList[idx].Type.(*ibg.StructType)
			if !ok {
				return p.fail(prefix+n, "is %s, not a record", st.FieldList[idx].Type)
			}
			if err := sub.check(p, prefix+n+".", nested); err != nil {
				return err
			}
		}
	}
	return nil
}
