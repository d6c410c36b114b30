package read

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ibg "github.com/apache/iceberg-go"

	"github.com/icebeam/icebeam/iceberg/internal/config"
)

// filterGoldenInputs returns the inputs of both golden files.
func filterGoldenInputs(tb testing.TB) []string {
	tb.Helper()
	var ins []string
	for _, name := range []string{"accept.txt", "reject.txt"} {
		f, err := os.Open(filepath.Join("testdata", "filter", name))
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if in, ok := strings.CutPrefix(sc.Text(), "in: "); ok {
				ins = append(ins, in)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return ins
}

// FuzzParseFilter checks that ParseFilter never panics, that every error is a
// *FilterError wrapping ErrInvalidConfig, and that whatever it accepts binds and
// survives the round trip through formatFilter.
func FuzzParseFilter(f *testing.F) {
	for _, in := range filterGoldenInputs(f) {
		f.Add(in)
	}
	schema := filterTestSchema(f)
	f.Fuzz(func(t *testing.T, in string) {
		e, err := ParseFilter(in, schema)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || !errors.Is(err, config.ErrInvalidConfig) {
				t.Fatalf("ParseFilter(%q) error %v is not a *FilterError wrapping ErrInvalidConfig", in, err)
			}
			return
		}
		if _, err := ibg.BindExpr(schema, e, true); err != nil {
			t.Fatalf("ParseFilter(%q) = %s does not bind: %v", in, e, err)
		}
		sql := formatFilter(e)
		e2, err := ParseFilter(sql, schema)
		if err != nil {
			t.Fatalf("ParseFilter(%q) ok, but its formatFilter %q fails: %v", in, sql, err)
		}
		if !e.Equals(e2) {
			t.Fatalf("round trip of %q via %q:\n got %s\nwant %s", in, sql, e2, e)
		}
	})
}

// benchFilters are representative filters, from one comparison to one touching most
// features of the parser.
var benchFilters = []struct{ name, filter string }{
	{"compare", `i > 5`},
	{"and-or", `id >= 100 AND s = 'abc' OR amount < 3.5`},
	{"in-null-like", `s IN ('a', 'b', 'c') AND d IS NOT NULL AND "my-col" LIKE 'pre%'`},
	{"typed-literals", `ts >= TIMESTAMP '2024-01-31 10:00:00' AND dt < DATE '2024-12-31' AND u = '123e4567-e89b-12d3-a456-426614174000'`},
	{"medium", `(s LIKE 'abc%' OR "my-col" IN ('a', 'b', 'c')) AND amount BETWEEN 10 AND 99.95 ` +
		`AND ts >= TIMESTAMP '2024-01-31 10:00:00' AND NOT (i IS NULL OR i IN (1, 2, 3)) ` +
		`AND addr.geo.lat > 48.5 AND dt < DATE '2024-12-31' AND u <> '123e4567-e89b-12d3-a456-426614174000'`},
}

// BenchmarkParseFilter measures ParseFilter alone on each of benchFilters.
func BenchmarkParseFilter(b *testing.B) {
	schema := filterTestSchema(b)
	for _, c := range benchFilters {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.filter)))
			for b.Loop() {
				if _, err := ParseFilter(c.filter, schema); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseFilterRoundTrip does what one FuzzParseFilter execution does with an
// accepted input (parse, bind, format, parse again, compare), without the fuzzer's
// own cost per execution (clearing, copying and comparing the coverage counters of
// the whole test binary, which links Beam and iceberg-go).
func BenchmarkParseFilterRoundTrip(b *testing.B) {
	schema := filterTestSchema(b)
	for _, c := range benchFilters {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := ParseFilter(c.filter, schema)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ibg.BindExpr(schema, e, true); err != nil {
					b.Fatal(err)
				}
				e2, err := ParseFilter(formatFilter(e), schema)
				if err != nil || !e.Equals(e2) {
					b.Fatalf("round trip of %q: %v", c.filter, err)
				}
			}
		})
	}
}
