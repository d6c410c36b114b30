package cdc

import (
	"errors"
	"slices"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

// envelopeConfig is a Debezium envelope: the row image in after (before for
// deletes), the operation in op and the log position in source.lsn.
func envelopeConfig() ChangeSpec {
	return ChangeSpec{ChangeTypeColumn: "op", SequenceNumberColumn: "source.lsn",
		ChangeTypeMap:   map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE", "r": "INSERT"},
		EqualityColumns: []string{"id"}, Only: "after", BeforeField: "before"}
}

var (
	cityImage     = row.NewSchema([]string{"id", "city", "state"}, nil)
	sourceSchema  = row.NewSchema([]string{"db", "lsn"}, nil)
	envelopeNames = []string{"before", "after", "source", "op", "ts_ms"}
)

func city(id int64, c, st string) row.Row { return row.Of(cityImage, []any{id, c, st}) }

// event is a Debezium envelope row; a nil image, or lsn < 0 (no source), is null.
func event(op any, before, after *row.Row, lsn int64) row.Row {
	vals := []any{nil, nil, nil, op, int64(1732000000000)}
	if before != nil {
		vals[0] = *before
	}
	if after != nil {
		vals[1] = *after
	}
	if lsn >= 0 {
		vals[2] = row.Of(sourceSchema, []any{"shop", lsn})
	}
	return row.New(envelopeNames, vals)
}

func ptr(r row.Row) *row.Row { return &r }

func TestParseEnvelope(t *testing.T) {
	p, err := NewParser("db.t", citySchema(), envelopeConfig())
	if err != nil {
		t.Fatal(err)
	}
	old, cur := city(7, "Austin", "TX"), city(7, "Dallas", "TX")
	for _, tc := range []struct {
		name string
		r    row.Row
		kind Kind
		seq  int64
		city string
	}{
		{"create", event("c", nil, ptr(cur), 10), Insert, 10, "Dallas"},
		{"update", event("u", ptr(old), ptr(cur), 11), UpdateAfter, 11, "Dallas"},
		{"delete takes the before-image", event("d", ptr(old), nil, 12), Delete, 12, "Austin"},
		{"snapshot read", event("r", nil, ptr(cur), 13), Insert, 13, "Dallas"},
		{"snapshot read without a source", event("r", nil, ptr(cur), -1), Insert, UnsequencedSeq, "Dallas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Parse(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind != tc.kind || c.Seq != tc.seq || c.Key[0] != int64(7) || c.Row.Value(1) != tc.city {
				t.Fatalf("got %+v", c)
			}
			if !slices.Equal(c.Row.Names(), []string{"id", "city", "state"}) {
				t.Fatalf("row %v", c.Row)
			}
		})
	}

	// Tombstones: no change at all.
	for name, r := range map[string]row.Row{
		"zero row":                 {},
		"null envelope fields":     event(nil, nil, nil, 12),
		"empty op and null images": event("", nil, nil, -1),
		"no columns":               row.New(nil, nil),
	} {
		t.Run("tombstone "+name, func(t *testing.T) {
			if !p.env.IsTombstone(r) {
				t.Errorf("IsTombstone = false")
			}
			if _, err := p.Parse(r); !errors.Is(err, ErrTombstone) || errors.Is(err, ErrInvalidChange) {
				t.Fatalf("err %v, want ErrTombstone", err)
			}
		})
	}

	// Changes that cannot be applied name the field.
	for _, tc := range []struct {
		name string
		r    row.Row
		want []string
	}{
		{"delete without images", event("d", nil, nil, 5), []string{"no row image", `"before" and "after" are null (change type DELETE)`}},
		{"create without after", event("c", ptr(old), nil, 5), []string{"no row image", `"after" is null (change type INSERT)`}},
		{"update without sequence number", event("u", nil, ptr(cur), -1), []string{`"source.lsn" is null`}},
		{"unknown op", event("t", nil, nil, 5), []string{`unknown value "t"`}},
		{"source not a record", row.New(envelopeNames, []any{nil, cur, "pg", "c", int64(1)}), []string{`"source.lsn"`, `"source" holds string`}},
		{"after not a record", row.New(envelopeNames, []any{nil, "x", nil, "c", int64(1)}), []string{`"after" holds string`}},
		{"no after field", row.New([]string{"op", "source"}, []any{"c", row.Of(sourceSchema, []any{"shop", int64(1)})}), []string{`no record field "after"`}},
		{"image column not in the table", event("c", nil, ptr(row.New([]string{"id", "zip"}, []any{int64(1), "x"})), 5), []string{`"zip" is not in the table`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Parse(tc.r)
			if !errors.Is(err, ErrInvalidChange) {
				t.Fatalf("err %v, want ErrInvalidChange", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %s", err, w)
				}
			}
		})
	}

	// Without before_field a delete needs its image in only.
	cfg := envelopeConfig()
	cfg.BeforeField = ""
	p2, err := NewParser("db.t", citySchema(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Parse(event("d", ptr(old), nil, 5)); !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), `"after" is null (change type DELETE)`) {
		t.Fatalf("delete with a null only field: %v", err)
	}
	if c, err := p2.Parse(event("d", nil, ptr(old), 5)); err != nil || c.Kind != Delete || c.Row.Value(1) != "Austin" {
		t.Fatalf("delete with its image in only: %+v %v", c, err)
	}
}

// TestParseNestedControlWithoutOnly reads the sequence number from a struct column
// of a flat change row: the struct is data (it must be a table column or be dropped
// by the write's projection).
func TestParseNestedControlWithoutOnly(t *testing.T) {
	cfg := debeziumConfig()
	cfg.SequenceNumberColumn = "meta.seq"
	p, err := NewParser("db.t", citySchema(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta := row.NewSchema([]string{"seq", "tx"}, nil)
	r := row.New([]string{"op", "id", "city", "state", "meta"}, []any{"u", int64(3), "Reno", "NV", row.Of(meta, []any{int64(42), "t1"})})
	if _, err := p.Parse(r); !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), `"meta" is not in the table`) {
		t.Fatalf("err %v, want meta not in the table", err)
	}
	p.SetProjection(func(r row.Row) (row.Row, error) { // what drop: [meta] does
		var names []string
		var vals []any
		for i, n := range r.Names() {
			if n != "meta" {
				names, vals = append(names, n), append(vals, r.Value(i))
			}
		}
		return row.New(names, vals), nil
	})
	c, err := p.Parse(r)
	if err != nil || c.Seq != 42 || c.Kind != UpdateAfter || c.Row.Value(1) != "Reno" {
		t.Fatalf("got %+v %v", c, err)
	}
	d, err := p.env.Data(r)
	if err != nil || !slices.Equal(d.Names(), []string{"id", "city", "state"}) {
		t.Fatalf("Data = %v, %v", d, err)
	}
}

func TestEnvelopeImageSchemas(t *testing.T) {
	img := func(id int) *ibg.StructType {
		return &ibg.StructType{FieldList: []ibg.NestedField{
			{ID: id, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
			{ID: id + 1, Name: "city", Type: ibg.PrimitiveTypes.String}}}
	}
	src := &ibg.StructType{FieldList: []ibg.NestedField{{ID: 20, Name: "lsn", Type: ibg.PrimitiveTypes.Int64, Required: true}}}
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "before", Type: img(10)},
		ibg.NestedField{ID: 2, Name: "after", Type: img(12)},
		ibg.NestedField{ID: 3, Name: "source", Type: src},
		ibg.NestedField{ID: 4, Name: "op", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 5, Name: "ts_ms", Type: ibg.PrimitiveTypes.Int64})
	e, err := NewEnvelope("db.t", envelopeConfig())
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.ImageSchemas(sc)
	if err != nil || len(got) != 2 || got[0].NumFields() != 2 || got[1].Field(0).Name != "id" {
		t.Fatalf("ImageSchemas = %v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*ChangeSpec)
		key  string
		want string
	}{
		{"missing sequence field", func(c *ChangeSpec) { c.SequenceNumberColumn = "source.pos" }, config.KeySequenceNumberColumn, `no field "source.pos"`},
		{"sequence through a non-struct", func(c *ChangeSpec) { c.SequenceNumberColumn = "op.lsn" }, config.KeySequenceNumberColumn, `"op" is string`},
		{"sequence not a long", func(c *ChangeSpec) { c.SequenceNumberColumn = "op" }, config.KeySequenceNumberColumn, "want long"},
		{"misspelled sequence field", func(c *ChangeSpec) { c.SequenceNumberColumn = "source.lsm" }, config.KeySequenceNumberColumn,
			`no field "source.lsm" (no "lsm" in "source") (did you mean "source.lsn"?); fields of "source": lsn`},
		{"default sequence column missing", func(c *ChangeSpec) { c.SequenceNumberColumn = "" }, config.KeySequenceNumberColumn,
			`no column "_commit_snapshot_sequence_number": set sequence_number_column to the long column`},
		{"missing change column", func(c *ChangeSpec) { c.ChangeTypeColumn = "operation" }, config.KeyChangeTypeColumn, `no column "operation"`},
		{"misspelled change column", func(c *ChangeSpec) { c.ChangeTypeColumn = "opp" }, config.KeyChangeTypeColumn,
			`no column "opp" (did you mean "op"?); columns: before, after, source, op, ts_ms`},
		{"missing only", func(c *ChangeSpec) { c.Only = "payload.after" }, config.KeyOnly, `no column "payload.after"`},
		{"only not a record", func(c *ChangeSpec) { c.Only = "ts_ms" }, config.KeyOnly, "not a record"},
		{"missing before", func(c *ChangeSpec) { c.BeforeField = "old" }, config.KeyBeforeField, `no column "old"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := envelopeConfig()
			tc.mut(&cfg)
			e, err := NewEnvelope("db.t", cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.ImageSchemas(sc)
			var ce *config.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a ConfigError for %s containing %s", err, tc.key, tc.want)
			}
		})
	}
}
