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

func citySchema() *ibg.Schema {
	return ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "id", Type: ibg.PrimitiveTypes.Int64, Required: true},
		ibg.NestedField{ID: 2, Name: "city", Type: ibg.PrimitiveTypes.String},
		ibg.NestedField{ID: 3, Name: "state", Type: ibg.PrimitiveTypes.String},
	)
}

func debeziumConfig() ChangeSpec {
	return ChangeSpec{ChangeTypeColumn: "op", SequenceNumberColumn: "seq",
		ChangeTypeMap:   map[string]string{"c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE", "r": "INSERT", "b": "UPDATE_BEFORE"},
		EqualityColumns: []string{"id"}}
}

func TestKindOrder(t *testing.T) {
	got := []Kind{Insert, UpdateAfter, Delete, UpdateBefore}
	slices.Sort(got)
	want := []Kind{UpdateBefore, Delete, UpdateAfter, Insert}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for _, k := range want {
		p, err := ParseKind(k.String())
		if err != nil || p != k {
			t.Fatalf("ParseKind(%s) = %v, %v", k, p, err)
		}
	}
	if _, err := ParseKind("UPSERT"); !errors.Is(err, ErrInvalidChange) {
		t.Fatalf("ParseKind(UPSERT) err %v", err)
	}
}

func TestParse(t *testing.T) {
	p, err := NewParser("db.t", citySchema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"op", "id", "city", "state", "seq"}
	for _, tc := range []struct {
		op   string
		kind Kind
	}{{"c", Insert}, {"u", UpdateAfter}, {"d", Delete}, {"r", Insert}, {"b", UpdateBefore}} {
		c, err := p.Parse(row.New(names, []any{tc.op, int64(7), "Austin", "TX", int64(3)}))
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		if c.Kind != tc.kind || c.Seq != 3 || c.Key[0] != int64(7) {
			t.Fatalf("%s: got %+v", tc.op, c)
		}
		if got := c.Row.Names(); !slices.Equal(got, []string{"id", "city", "state"}) {
			t.Fatalf("control columns not stripped: %v", got)
		}
	}
	// An INSERT without a sequence number (a snapshot read) orders before every
	// numbered change.
	c, err := p.Parse(row.New(names, []any{"r", int64(7), "Austin", "TX", nil}))
	if err != nil || c.Seq != UnsequencedSeq || c.Kind != Insert {
		t.Fatalf("unsequenced insert: %+v %v", c, err)
	}
	// Values are normalized (an int for a long column).
	c, err = p.Parse(row.New([]string{"op", "id", "seq"}, []any{"c", 9, int64(1)}))
	if err != nil || c.Key[0] != int64(9) || c.Row.Value(1) != nil {
		t.Fatalf("normalized parse: %+v %v", c, err)
	}
	for _, tc := range []struct {
		name string
		vals []any
		want []string
	}{
		{"unknown change type", []any{"x", int64(1), "a", "b", int64(1)}, []string{`"op"`, `unknown value "x"`}},
		{"null change type", []any{nil, int64(1), "a", "b", int64(1)}, []string{`"op"`, "null"}},
		{"null sequence", []any{"u", int64(1), "a", "b", nil}, []string{`"seq"`, "null"}},
		{"null sequence of a delete", []any{"d", int64(1), "a", "b", nil}, []string{`"seq"`, "null"}},
		{"null key", []any{"c", nil, "a", "b", int64(1)}, []string{`"id"`, "null"}},
		{"bad key type", []any{"c", "one", "a", "b", int64(1)}, []string{`"id"`}},
		{"bad sequence type", []any{"c", int64(1), "a", "b", "x"}, []string{`"seq"`, `"x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(row.New(names, tc.vals))
			if !errors.Is(err, ErrInvalidChange) {
				t.Fatalf("err %v, want ErrInvalidChange", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "iceberg: cdc db.t: ") {
				t.Errorf("error %q lacks the prefix", err)
			}
		})
	}
	if err := p.Validate(row.New([]string{"op", "id", "seq", "zip"}, []any{"c", int64(1), int64(1), "x"})); err == nil ||
		!strings.Contains(err.Error(), `"zip"`) {
		t.Fatalf("unknown column: %v", err)
	}
	s, err := p.env.Data(row.New(names, []any{"c", int64(1), "a", "b", int64(1)}))
	if err != nil || !slices.Equal(s.Names(), []string{"id", "city", "state"}) {
		t.Fatalf("Data %v, %v", s.Names(), err)
	}
}

// TestParseReusing: ParseReusing gives Parse's change, and a row that lacks a
// column does not keep the previous row's value in it (the slices are reused).
func TestParseReusing(t *testing.T) {
	p, err := NewParser("db.t", citySchema(), debeziumConfig())
	if err != nil {
		t.Fatal(err)
	}
	full := row.New([]string{"op", "id", "city", "state", "seq"}, []any{"u", int64(7), "Austin", "TX", int64(3)})
	part := row.New([]string{"op", "id", "seq"}, []any{"c", 9, int64(4)})
	for _, r := range []row.Row{full, part, full} {
		want, err := p.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.ParseReusing(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != want.Kind || got.Seq != want.Seq || !slices.Equal(got.Key, want.Key) || !row.Equal(got.Row, want.Row) {
			t.Fatalf("ParseReusing(%s) = %+v, Parse = %+v", r, got, want)
		}
	}
	a, _ := p.ParseReusing(full)
	b, _ := p.ParseReusing(part)
	if &a.Key[0] != &b.Key[0] || b.Row.Value(1) != nil {
		t.Fatalf("the second call did not reuse the slices, or kept city %v", b.Row.Value(1))
	}
}

func TestNewParserErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*ChangeSpec)
		want error
	}{
		{"no key", func(c *ChangeSpec) { c.EqualityColumns = nil }, config.ErrInvalidConfig},
		{"missing key", func(c *ChangeSpec) { c.EqualityColumns = []string{"zip"} }, config.ErrInvalidConfig},
		{"bad map", func(c *ChangeSpec) { c.ChangeTypeMap = map[string]string{"c": "UPSERT"} }, config.ErrInvalidConfig},
		{"control column in table", func(c *ChangeSpec) { c.SequenceNumberColumn = "city" }, config.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := debeziumConfig()
			tc.mut(&cfg)
			if _, err := NewParser("db.t", citySchema(), cfg); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	sc := ibg.NewSchema(0, ibg.NestedField{ID: 1, Name: "x", Type: ibg.PrimitiveTypes.Float64, Required: true})
	cfg := debeziumConfig()
	cfg.EqualityColumns = []string{"x"}
	if _, err := NewParser("db.t", sc, cfg); !errors.Is(err, config.ErrUnsupported) {
		t.Fatalf("double key: %v", err)
	}
}

func TestKeyEncodingOrder(t *testing.T) {
	sc := ibg.NewSchema(0,
		ibg.NestedField{ID: 1, Name: "a", Type: ibg.PrimitiveTypes.String, Required: true},
		ibg.NestedField{ID: 2, Name: "b", Type: ibg.PrimitiveTypes.Int64, Required: true})
	k, err := newKeyCodec(sc, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	keys := [][]any{{"", int64(-5)}, {"", int64(3)}, {"a", int64(-1)}, {"a\x00", int64(0)}, {"ab", int64(0)}, {"b", int64(-9)}}
	var prev []byte
	for i, key := range keys {
		b, err := k.append(nil, key)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && string(prev) >= string(b) {
			t.Fatalf("key %v encodes before or equal to %v", key, keys[i-1])
		}
		prev = b
	}
	if Shard(prev, 8) != Shard(append([]byte(nil), prev...), 8) || Shard(prev, 1) != 0 {
		t.Fatal("shard not stable")
	}
}
