package config

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePartitionField(t *testing.T) {
	tests := []struct {
		in   string
		want PartitionField
		err  string
	}{
		{in: "region", want: PartitionField{Source: "region", Transform: TransformIdentity}},
		{in: " a.b ", want: PartitionField{Source: "a.b", Transform: TransformIdentity}},
		{in: "identity(x)", want: PartitionField{Source: "x", Transform: TransformIdentity}},
		{in: "bucket(16, id)", want: PartitionField{Source: "id", Transform: TransformBucket, Param: 16}},
		{in: "bucket(id, 16)", want: PartitionField{Source: "id", Transform: TransformBucket, Param: 16}},
		{in: "BUCKET[16](id)", want: PartitionField{Source: "id", Transform: TransformBucket, Param: 16}},
		{in: "truncate(name, 4)", want: PartitionField{Source: "name", Transform: TransformTruncate, Param: 4}},
		{in: "truncate[4](name)", want: PartitionField{Source: "name", Transform: TransformTruncate, Param: 4}},
		{in: "year(ts)", want: PartitionField{Source: "ts", Transform: TransformYear}},
		{in: "months(ts)", want: PartitionField{Source: "ts", Transform: TransformMonth}},
		{in: "day( ts )", want: PartitionField{Source: "ts", Transform: TransformDay}},
		{in: "hour(ts)", want: PartitionField{Source: "ts", Transform: TransformHour}},
		{in: "void(x)", want: PartitionField{Source: "x", Transform: TransformVoid}},
		{in: "", err: "empty"},
		{in: "bucket(id)", err: "width and a column"},
		{in: "bucket(0, id)", err: "between 1"},
		{in: "bucket(-2, id)", err: "between 1"},
		{in: "bucket(1, 2)", err: "ambiguous"},
		{in: "bucket(a, b)", err: "integer width"},
		{in: "bucket[x](id)", err: "integer parameter"},
		{in: "bucket[4](id, 3)", err: "one column"},
		{in: "bucket[4", err: "missing ]"},
		{in: "day[4](ts)", err: "no [N]"},
		{in: "week(ts)", err: "unknown transform"},
		{in: "day(a, b)", err: "one column"},
		{in: "day()", err: "empty column"},
		{in: "day(ts", err: "want day(...)"},
		{in: "day((ts))", err: "nested"},
		{in: "my col", err: "bad column name"},
		{in: "a..b", err: "nested column"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePartitionField(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, errTerm) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			back, err := ParsePartitionField(got.String())
			if err != nil || back != got {
				t.Errorf("String() %q reparses as %+v, %v", got.String(), back, err)
			}
		})
	}
}

func TestParseSortField(t *testing.T) {
	tests := []struct {
		in   string
		want SortField
		err  string
	}{
		{in: "id", want: SortField{Source: "id", Transform: TransformIdentity, NullsFirst: true}},
		{in: "id ASC", want: SortField{Source: "id", Transform: TransformIdentity, NullsFirst: true}},
		{in: "id desc", want: SortField{Source: "id", Transform: TransformIdentity, Descending: true}},
		{in: "id desc nulls first", want: SortField{Source: "id", Transform: TransformIdentity, Descending: true, NullsFirst: true}},
		{in: "id nulls last", want: SortField{Source: "id", Transform: TransformIdentity}},
		{in: "bucket(16, id) desc", want: SortField{Source: "id", Transform: TransformBucket, Param: 16, Descending: true}},
		{in: "bucket(id, 4)", want: SortField{Source: "id", Transform: TransformBucket, Param: 4, NullsFirst: true}},
		{in: "day(ts) asc nulls last", want: SortField{Source: "ts", Transform: TransformDay}},
		{in: "truncate[3](s)", want: SortField{Source: "s", Transform: TransformTruncate, Param: 3, NullsFirst: true}},
		{in: "", err: "empty"},
		{in: "id up", err: "unexpected"},
		{in: "id desc asc", err: "want nulls first or nulls last"},
		{in: "id nulls", err: "unexpected"},
		{in: "id nulls middle", err: "unexpected"},
		{in: "bucket(16, id", err: "missing )"},
		{in: "week(ts) desc", err: "unknown transform"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSortField(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			back, err := ParseSortField(got.String())
			if err != nil || back != got {
				t.Errorf("String() %q reparses as %+v, %v", got.String(), back, err)
			}
		})
	}
}

func TestParseFieldLists(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		sorts []string
		n     int
	}{
		{"duplicate partition", []string{"a", "a"}, nil, 1},
		{"two time transforms", []string{"year(ts)", "day(ts)"}, nil, 1},
		{"duplicate sort term", nil, []string{"id", "id desc"}, 1},
		{"two bad entries", []string{"x(", "bucket(a)"}, []string{"a b", "c d"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, perr := ParsePartitionFields(tt.parts)
			_, serr := ParseSortFields(tt.sorts)
			if n := len(configErrors(perr)) + len(configErrors(serr)); n != tt.n {
				t.Errorf("%d problems, want %d: %v / %v", n, tt.n, perr, serr)
			}
		})
	}
}

// configErrors returns every *ConfigError inside err.
func configErrors(err error) []*ConfigError {
	var out []*ConfigError
	var walk func(error)
	walk = func(e error) {
		if ce, ok := e.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}
