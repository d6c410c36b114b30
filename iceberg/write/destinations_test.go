package write

import (
	"errors"
	"testing"
	"time"

	ibg "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg/internal/config"
	"github.com/icebeam/icebeam/iceberg/internal/row"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		in      string
		static  bool
		columns []string
		wantErr bool
	}{
		{in: "db.events", static: true},
		{in: "a.b.c", static: true},
		{in: "db.events_{region}", columns: []string{"region"}},
		{in: "db_{a}.t_{b.c}_x", columns: []string{"a", "b.c"}},
		{in: "events", wantErr: true},
		{in: "db.", wantErr: true},
		{in: "db.{", wantErr: true},
		{in: "db.}x{a}", wantErr: true},
		{in: "db.t_{}", wantErr: true},
		{in: "db.t_{a..b}", wantErr: true},
		{in: "{region}", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			tpl, err := ParseTemplate(tc.in)
			if tc.wantErr {
				if !errors.Is(err, config.ErrInvalidConfig) {
					t.Fatalf("err = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tpl.IsStatic() != tc.static {
				t.Errorf("IsStatic = %v", tpl.IsStatic())
			}
			got := tpl.Columns()
			if len(got) != len(tc.columns) {
				t.Fatalf("Columns = %v, want %v", got, tc.columns)
			}
			for i := range got {
				if got[i] != tc.columns[i] {
					t.Errorf("Columns = %v, want %v", got, tc.columns)
				}
			}
		})
	}
}

func TestTemplateRender(t *testing.T) {
	nested := row.New([]string{"c"}, []any{"x"})
	day := ibg.Date(time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	u := uuid.MustParse("123e4567-e89b-12d3-a456-426614174000")
	r := row.New(
		[]string{"region", "n", "b", "d", "u", "nested", "nul", "f", "evil", "empty", "nullparent"},
		[]any{"eu-west", int32(-7), true, day, u, nested, nil, 1.5, "../x.y z", "", nil},
	)
	tests := []struct {
		tpl     string
		want    string
		wantErr bool
	}{
		{tpl: "db.static", want: "db.static"},
		{tpl: "db.e_{region}", want: "db.e_eu_west"},
		{tpl: "db.e_{n}", want: "db.e__7"},
		{tpl: "db.e_{b}", want: "db.e_true"},
		{tpl: "db.e_{d}", want: "db.e_2024_03_05"},
		{tpl: "db.e_{u}", want: "db.e_123e4567_e89b_12d3_a456_426614174000"},
		{tpl: "db_{region}.t_{nested.c}", want: "db_eu_west.t_x"},
		{tpl: "db.e_{evil}", want: "db.e____x_y_z"},
		{tpl: "db.e_{nul}", wantErr: true},
		{tpl: "db.e_{missing}", wantErr: true},
		{tpl: "db.e_{nested.missing}", wantErr: true},
		{tpl: "db.e_{nullparent.c}", wantErr: true},
		{tpl: "db.e_{f}", wantErr: true},
		{tpl: "db.e_{empty}", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.tpl, func(t *testing.T) {
			tpl, err := ParseTemplate(tc.tpl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Render(rowGetter(r))
			if tc.wantErr {
				if !errors.Is(err, errNoDestination) {
					t.Fatalf("Render = %q, %v; want errNoDestination", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Render = %q, want %q", got, tc.want)
			}
			if _, err := parseIdent(got); err != nil {
				t.Errorf("rendered name is not an identifier: %v", err)
			}
		})
	}
}

func FuzzTemplateRender(f *testing.F) {
	f.Add("eu-west")
	f.Add("a.b.c")
	f.Add("{x}")
	f.Fuzz(func(t *testing.T, v string) {
		tpl, err := ParseTemplate("db.t_{c}")
		if err != nil {
			t.Fatal(err)
		}
		got, err := tpl.Render(rowGetter(row.New([]string{"c"}, []any{v})))
		if err != nil {
			if v == "" {
				return
			}
			t.Fatalf("Render(%q): %v", v, err)
		}
		id, err := parseIdent(got)
		if err != nil || len(id) != 2 || id[0] != "db" {
			t.Fatalf("Render(%q) = %q: not db.<table>", v, got)
		}
	})
}
