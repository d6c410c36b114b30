package cdc

import (
	"errors"
	"fmt"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// ErrInvalidChange is wrapped by the error of a change row that cannot be applied
// (unknown change type, null sequence number, null key, a value of the wrong type, a
// column the table does not have). Such a row belongs in the dead letter output.
var ErrInvalidChange = errors.New("invalid change row")

// Kind is a change type. Its numeric order is the order in which changes with equal
// key and sequence number apply: UpdateBefore < Delete < UpdateAfter < Insert, so a
// before-image goes before its after-image and a delete before a re-insert.
type Kind uint8

// Change kinds, in apply order for equal (key, sequence number).
const (
	// UpdateBefore is the before-image of an update: the committed row goes.
	UpdateBefore Kind = iota + 1
	// Delete deletes the committed row.
	Delete
	// UpdateAfter is the after-image of an update: the row to write.
	UpdateAfter
	// Insert is a new row.
	Insert
)

// String returns the change type's name (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE).
func (k Kind) String() string {
	switch k {
	case Insert:
		return config.ChangeInsert
	case UpdateBefore:
		return config.ChangeUpdateBefore
	case UpdateAfter:
		return config.ChangeUpdateAfter
	case Delete:
		return config.ChangeDelete
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Valid reports whether k is one of the four change kinds.
func (k Kind) Valid() bool { return k >= UpdateBefore && k <= Insert }

// ParseKind parses a change type name (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE,
// case-sensitive, as change_type_map values are).
func ParseKind(s string) (Kind, error) {
	switch s {
	case config.ChangeInsert:
		return Insert, nil
	case config.ChangeUpdateBefore:
		return UpdateBefore, nil
	case config.ChangeUpdateAfter:
		return UpdateAfter, nil
	case config.ChangeDelete:
		return Delete, nil
	}
	return 0, fmt.Errorf("%w: unknown change type %q (want %s, %s, %s or %s)", ErrInvalidChange, s,
		config.ChangeInsert, config.ChangeUpdateBefore, config.ChangeUpdateAfter, config.ChangeDelete)
}

// Change is one parsed change row.
type Change struct {
	// Kind is the change type.
	Kind Kind
	// Seq is the sequence number ordering the key's changes.
	Seq int64
	// Key holds the equality column values, normalized to their Iceberg types.
	Key []any
	// Row is the row without the control columns, in the table's column order and
	// schema (Parser.Schema); columns the input row lacks are null.
	Row row.Row
}

// Parser validates and parses the change rows of one table. It is not safe for
// concurrent use (it caches the layout of the last input schema).
type Parser struct {
	table      string
	env        *Envelope
	keys       *keyCodec
	keyIdx     []int // key column positions in the output schema
	required   []int // required columns' positions in the output schema
	out        *row.Schema
	lastIn     *row.Schema
	lastLayout layout
	vals, key  []any // ParseReusing's
}

// layout maps one row image schema onto the output.
type layout struct {
	src     []int // output column -> image position, -1 when absent
	unknown string
}

// NewParser returns the parser of table (its name, for messages) with schema sc,
// configured by cfg (see Envelope for its change type, sequence number, only and
// before fields). Without a change_type_column every row is an
// Insert (with upsert, that replaces the committed row). Errors wrap
// config.ErrInvalidConfig.
func NewParser(table string, sc *ibg.Schema, cfg ChangeSpec) (*Parser, error) {
	fail := func(err error) (*Parser, error) {
		return nil, fmt.Errorf("iceberg: cdc %s: %w", table, err)
	}
	env, err := NewEnvelope(table, cfg)
	if err != nil {
		return nil, err
	}
	keys, err := newKeyCodec(sc, cfg.EqualityColumns)
	if err != nil {
		return fail(err)
	}
	p := &Parser{table: table, env: env, keys: keys}
	for key, c := range map[string]string{config.KeyChangeTypeColumn: env.changeCol, config.KeySequenceNumberColumn: env.seqCol} {
		if _, ok := sc.FindFieldByName(c); ok && env.topLevelControl(c) {
			return fail(config.Errorf(key, "control column %q is a table column; it is stripped before writing", c))
		}
	}
	fields := sc.Fields()
	names := make([]string, len(fields))
	types := make([]ibg.Type, len(fields))
	for i, f := range fields {
		names[i], types[i] = f.Name, f.Type
		if f.Required {
			p.required = append(p.required, i)
		}
	}
	p.out = row.NewSchema(names, types)
	for _, c := range cfg.EqualityColumns {
		i := p.out.Index(c)
		if i < 0 {
			return fail(config.Errorf(config.KeyEqualityColumns, "%q is not a top-level column", c))
		}
		p.keyIdx = append(p.keyIdx, i)
	}
	return p, nil
}

// SetProjection makes the parser apply f (the write's keep or drop) to each row
// image before mapping it onto the table.
func (p *Parser) SetProjection(f func(row.Row) (row.Row, error)) { p.env.SetProjection(f) }

// Schema returns the schema of parsed rows: the table's columns, in table order,
// without the control columns. Packed rows (row.AppendBody) decode with it.
func (p *Parser) Schema() *row.Schema { return p.out }

// KeyColumns returns the equality columns.
func (p *Parser) KeyColumns() []string { return p.keys.names }

// KeyIndexes returns the positions of the equality columns in Schema.
func (p *Parser) KeyIndexes() []int { return p.keyIdx }

func (p *Parser) layoutOf(in *row.Schema) layout {
	if in == p.lastIn && in != nil {
		return p.lastLayout
	}
	l := layout{src: make([]int, p.out.Len())}
	for i, n := range p.out.Names() {
		l.src[i] = in.Index(n)
	}
	for _, n := range in.Names() {
		if p.out.Index(n) < 0 && !p.env.topLevelControl(n) {
			l.unknown = n
			break
		}
	}
	p.lastIn, p.lastLayout = in, l
	return l
}

func (p *Parser) invalid(format string, args ...any) error {
	return fmt.Errorf("iceberg: cdc %s: %w: %s", p.table, ErrInvalidChange, fmt.Sprintf(format, args...))
}

// Validate checks r without building the parsed change: the same checks as Parse.
func (p *Parser) Validate(r row.Row) error {
	_, err := p.ParseReusing(r)
	return err
}

// Parse validates r and returns its change. An error wraps ErrTombstone for a
// tombstone (see Envelope.IsTombstone) and otherwise ErrInvalidChange, naming the
// column and the value: an unknown or null change type, a missing sequence number or
// a null one outside an INSERT, a missing or null row image, a null key column, a
// value of the wrong type, a column the table does not have, or a null in a
// required column of a row to write (INSERT or UPDATE_AFTER).
func (p *Parser) Parse(r row.Row) (Change, error) {
	return p.parse(r, make([]any, p.out.Len()), make([]any, len(p.keyIdx)))
}

// ParseReusing is Parse for a caller done with each change before it parses the next
// row (it encodes it, say): the change's Row and Key hold slices of the parser that
// the next call to ParseReusing or Validate overwrites.
func (p *Parser) ParseReusing(r row.Row) (Change, error) {
	if p.vals == nil {
		p.vals, p.key = make([]any, p.out.Len()), make([]any, len(p.keyIdx))
	}
	clear(p.vals)
	return p.parse(r, p.vals, p.key)
}

// parse is Parse, filling vals (of Schema's length, all nil) and key (one per
// equality column).
func (p *Parser) parse(r row.Row, vals, key []any) (Change, error) {
	kind, seq, img, err := p.env.Open(r)
	if err != nil {
		return Change{}, err
	}
	l := p.layoutOf(img.Schema())
	if l.unknown != "" {
		return Change{}, p.invalid("column %q is not in the table", l.unknown)
	}
	c := Change{Kind: kind, Seq: seq}
	types := p.out.Types()
	for i, src := range l.src {
		if src < 0 {
			continue
		}
		v, err := row.Normalize(img.Value(src), types[i])
		if err != nil {
			return Change{}, p.invalid("column %q: %v", p.out.Names()[i], err)
		}
		vals[i] = v
	}
	if c.Kind == Insert || c.Kind == UpdateAfter {
		for _, i := range p.required {
			if vals[i] == nil {
				return Change{}, p.invalid("required column %q is null in a row to write (%s)", p.out.Names()[i], c.Kind)
			}
		}
	}
	c.Key = key
	for j, i := range p.keyIdx {
		if vals[i] == nil {
			return Change{}, p.invalid("equality column %q is null", p.out.Names()[i])
		}
		c.Key[j] = vals[i]
	}
	c.Row = row.Of(p.out, vals)
	return c, nil
}

// AppendKey appends the encoded key (bytewise comparable, equal for equal values)
// of the key values key, as found in Change.Key.
func (p *Parser) AppendKey(dst []byte, key []any) ([]byte, error) {
	out, err := p.keys.append(dst, key)
	if err != nil {
		return nil, p.invalid("%v", err)
	}
	return out, nil
}

// KeyOf returns the key values of a row of Schema.
func (p *Parser) KeyOf(r row.Row) []any {
	out := make([]any, len(p.keyIdx))
	for j, i := range p.keyIdx {
		out[j] = r.Value(i)
	}
	return out
}
