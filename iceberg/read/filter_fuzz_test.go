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
// survives the round trip through FormatFilter.
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
		sql := FormatFilter(e)
		e2, err := ParseFilter(sql, schema)
		if err != nil {
			t.Fatalf("ParseFilter(%q) ok, but its FormatFilter %q fails: %v", in, sql, err)
		}
		if !e.Equals(e2) {
			t.Fatalf("round trip of %q via %q:\n got %s\nwant %s", in, sql, e2, e)
		}
	})
}

// BenchmarkParseFilter parses a medium-sized filter touching most features.
func BenchmarkParseFilter(b *testing.B) {
	schema := filterTestSchema(b)
	const filter = `(s LIKE 'abc%' OR "my-col" IN ('a', 'b', 'c')) AND amount BETWEEN 10 AND 99.95 ` +
		`AND ts >= TIMESTAMP '2024-01-31 10:00:00' AND NOT (i IS NULL OR i IN (1, 2, 3)) ` +
		`AND addr.geo.lat > 48.5 AND dt < DATE '2024-12-31' AND u <> '123e4567-e89b-12d3-a456-426614174000'`
	b.ReportAllocs()
	b.SetBytes(int64(len(filter)))
	for b.Loop() {
		if _, err := ParseFilter(filter, schema); err != nil {
			b.Fatal(err)
		}
	}
}
