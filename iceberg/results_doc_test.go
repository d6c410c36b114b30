package iceberg

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResultTypesShowFields: go doc shows the fields of the types users receive,
// each with its doc comment. go doc prints a type's declaration as go/doc finds it:
// an alias (type SnapshotInfo = commit.SnapshotInfo) or an embedded struct would
// show one line and hide every field.
func TestResultTypesShowFields(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/icebeam/icebeam/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]*doc.Type{}
	for _, ty := range p.Types {
		types[ty.Name] = ty
	}
	for _, rt := range []reflect.Type{
		reflect.TypeFor[SnapshotInfo](), reflect.TypeFor[DeadLetter](), reflect.TypeFor[MaintenanceReport](),
	} {
		t.Run(rt.Name(), func(t *testing.T) {
			ty := types[rt.Name()]
			if ty == nil {
				t.Fatalf("go doc finds no type %s", rt.Name())
			}
			if ty.Doc == "" {
				t.Errorf("%s has no doc comment", rt.Name())
			}
			spec := ty.Decl.Specs[0].(*ast.TypeSpec)
			if spec.Assign.IsValid() {
				t.Fatalf("%s is an alias: go doc shows none of its fields", rt.Name())
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				t.Fatalf("%s is declared as %T, not a struct: go doc shows none of its fields", rt.Name(), spec.Type)
			}
			var shown []string
			for _, f := range st.Fields.List {
				if len(f.Names) == 0 {
					t.Errorf("%s embeds a type: go doc does not show the embedded type's fields", rt.Name())
					continue
				}
				if f.Doc.Text() == "" {
					t.Errorf("%s: field %s has no doc comment", rt.Name(), f.Names[0].Name)
				}
				for _, n := range f.Names {
					shown = append(shown, n.Name)
				}
			}
			var want []string
			for i := range rt.NumField() {
				want = append(want, rt.Field(i).Name)
			}
			if strings.Join(shown, ",") != strings.Join(want, ",") {
				t.Errorf("go doc shows the fields %v of %s, want %v", shown, rt.Name(), want)
			}
		})
	}
}
