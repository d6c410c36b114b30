//go:build interop

package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/google/uuid"

	"github.com/icebeam/icebeam/iceberg"
)

// TestMain runs the suite's pipelines on prism, the SDK's embedded runner.
func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.DoFn2x1[beam.T, func(string), error](&canonFn{})
	register.Emitter1[string]()
	register.DoFn1x1[string, error](&sinkFn{})
}

// rowValues is what Read's default Row output offers (its column names and
// Iceberg-typed values), asserted without importing its internal package.
type rowValues interface {
	Names() []string
	Values() []any
}

// canonFn formats each row read by iceberg.Read as a canonical row of Cols.
type canonFn struct {
	Cols []string
}

func (f *canonFn) ProcessElement(elm beam.T, emit func(string)) error {
	r, ok := elm.(rowValues)
	if !ok {
		return fmt.Errorf("interop: Read emitted %T, not a Row", elm)
	}
	names, vals := r.Names(), r.Values()
	if len(names) != len(f.Cols) {
		return fmt.Errorf("interop: Read emitted columns %v, want %v", names, f.Cols)
	}
	out := make([]string, len(f.Cols))
	for i, c := range f.Cols {
		if names[i] != c {
			return fmt.Errorf("interop: Read emitted columns %v, want %v", names, f.Cols)
		}
		s, err := Canonical(vals[i])
		if err != nil {
			return fmt.Errorf("interop: column %s: %w", c, err)
		}
		out[i] = s
	}
	emit(CanonicalRow(out))
	return nil
}

// sinkFn writes each bundle's canonical rows to a new file in Dir (prism
// runs the workers in this process's machine, so the test reads them back).
type sinkFn struct {
	Dir  string
	rows []string
}

func (f *sinkFn) StartBundle() { f.rows = f.rows[:0] }

func (f *sinkFn) ProcessElement(r string) error {
	f.rows = append(f.rows, r)
	return nil
}

func (f *sinkFn) FinishBundle() error {
	if len(f.rows) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(f.Dir, uuid.NewString()+".rows"), []byte(strings.Join(f.rows, "\n")+"\n"), 0o644)
}

// beamReader reads with icebeam's iceberg.Read on prism: one pipeline per
// read, with the filter and keep given to Read itself.
func beamReader(t *testing.T, name string, props map[string]string) readFunc {
	return func(ident, filter string, keep []string) ([]string, error) {
		dir, err := os.MkdirTemp(t.TempDir(), "rows")
		if err != nil {
			return nil, err
		}
		p, s := beam.NewPipelineWithRoot()
		rows, err := iceberg.TryRead(s, iceberg.ReadConfig{
			Table: ident, CatalogName: name, CatalogProperties: props, Filter: filter, Keep: keep,
		})
		if err != nil {
			return nil, err
		}
		lines := beam.ParDo(s, &canonFn{Cols: keep}, rows)
		beam.ParDo0(s, &sinkFn{Dir: dir}, lines)
		if _, err := beam.Run(context.Background(), "prism", p); err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.rows"))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
		}
		return out, nil
	}
}
