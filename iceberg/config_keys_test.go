package iceberg

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// keyConstants returns the Key* constants of internal/config/keys_gen.go by name and value.
func keyConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "internal/config/keys_gen.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("constant %s is not a literal", n.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				out[n.Name] = v
			}
		}
	}
	return out
}

func TestKeyConstantsMatchTags(t *testing.T) {
	consts := keyConstants(t)
	tagged := map[string]bool{}
	for _, k := range slices.Concat(ReadKeys(), WriteKeys(), ChangesKeys(), MaintainKeys()) {
		tagged[k] = true
	}
	values := map[string]bool{}
	for name, v := range consts {
		values[v] = true
		t.Run(name, func(t *testing.T) {
			if !tagged[v] {
				t.Errorf("constant %s = %q tags no field", name, v)
			}
		})
	}
	for k := range tagged {
		if !values[k] {
			t.Errorf("tag %q has no Key constant", k)
		}
	}
	for _, k := range []string{KeyTable, KeySnapshotID, KeyAsOfTimestamp, KeyBranch, KeyKeep} {
		if !slices.Contains(ReadKeys(), k) {
			t.Errorf("read keys miss %q", k)
		}
	}
	if slices.Contains(ReadKeys(), KeyMode) || slices.Contains(WriteKeys(), KeyFilter) {
		t.Error("read and write keys mixed up")
	}
	if len(WriteKeys()) != 40 {
		t.Errorf("%d write keys, want 40", len(WriteKeys()))
	}
}

func TestMergeOnReadOnlyKeysAreWriteKeys(t *testing.T) {
	for _, k := range MergeOnReadOnlyKeys() {
		if !slices.Contains(WriteKeys(), k) {
			t.Errorf("%q is not a write key", k)
		}
	}
}
