package iceberg

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// readmeRow is one row of README.md's key table.
type readmeRow struct {
	transform, typ, def, meaning string
}

// readmeKeys parses the Markdown table between the keys markers of README.md.
func readmeKeys(t *testing.T) map[string]readmeRow {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- keys:begin -->")
	end := strings.Index(s, "<!-- keys:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no <!-- keys:begin --> ... <!-- keys:end --> section")
	}
	rows := map[string]readmeRow{}
	for i, line := range strings.Split(s[begin:end], "\n")[1:] {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 5 {
			t.Fatalf("table line %d has %d cells, want 5: %s", i, len(cells), line)
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if cells[0] == "key" {
			if !slices.Equal(cells, []string{"key", "transform", "type", "default", "meaning"}) {
				t.Fatalf("header = %v", cells)
			}
			continue
		}
		key := strings.Trim(cells[0], "`")
		if _, dup := rows[key]; dup {
			t.Errorf("README lists %q twice", key)
		}
		rows[key] = readmeRow{transform: cells[1], typ: cells[2], def: cells[3], meaning: cells[4]}
	}
	if len(rows) == 0 {
		t.Fatal("README key table is empty")
	}
	return rows
}

// reexportedKeys returns the Key* constant names of a generated keys file, checking
// that each is defined as config.<same name>.
func reexportedKeys(t *testing.T, file, pkg string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Key") {
					continue
				}
				names = append(names, n.Name)
				if pkg == "" {
					continue
				}
				sel, ok := vs.Values[i].(*ast.SelectorExpr)
				if !ok || fmt.Sprint(sel.X) != pkg || sel.Sel.Name != n.Name {
					t.Errorf("%s: %s is not defined as %s.%s", file, n.Name, pkg, n.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

func TestReadmeKeyTable(t *testing.T) {
	rows := readmeKeys(t)
	ours := reexportedKeys(t, "keys_gen.go", "config")
	theirs := reexportedKeys(t, "internal/config/keys_gen.go", "")
	if !slices.Equal(ours, theirs) {
		t.Errorf("package iceberg re-exports %v, config defines %v", ours, theirs)
	}
	if len(ours) != len(rows) {
		t.Errorf("%d key constants, README lists %d keys", len(ours), len(rows))
	}
	read, write, changes, maintain := ReadKeys(), WriteKeys(), ChangesKeys(), MaintainKeys()
	all := map[string]bool{}
	for _, k := range slices.Concat(read, write, changes, maintain) {
		all[k] = true
	}
	for k := range all {
		t.Run(k, func(t *testing.T) {
			row, ok := rows[k]
			if !ok {
				t.Fatalf("key constant %q is missing from README.md's key table", k)
			}
			want := []string{}
			if slices.Contains(read, k) {
				want = append(want, "read")
			}
			if slices.Contains(write, k) {
				want = append(want, "write")
			}
			if slices.Contains(changes, k) && !slices.Contains(read, k) {
				want = append(want, "changes") // ReadChanges also takes the read keys it shares
			}
			if slices.Contains(maintain, k) {
				want = append(want, "maintain")
			}
			if got := strings.Split(row.transform, ", "); !slices.Equal(got, want) {
				t.Errorf("transform = %q, want %q", row.transform, strings.Join(want, ", "))
			}
			if row.typ == "" || row.meaning == "" {
				t.Errorf("empty type or meaning: %+v", row)
			}
			if def, ok := WriteDefaults()[k]; ok && !strings.Contains(row.def, fmt.Sprintf("`%v`", def)) {
				t.Errorf("default column %q does not show the default `%v`", row.def, def)
			}
			if slices.Contains(MergeOnReadOnlyKeys(), k) && !strings.Contains(row.meaning, "Merge-on-read only") {
				t.Errorf("meaning of a merge-on-read-only key should say so: %q", row.meaning)
			}
		})
	}
	for k := range rows {
		if !all[k] {
			t.Errorf("README.md names key %q, which has no constant", k)
		}
	}
}
