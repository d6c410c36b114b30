package iceberg

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
)

// TestRowAliasDocsListMethods: Row and RowSchema are aliases of internal types, so
// go doc shows their methods only through the alias's comment; every exported
// method must be listed there.
func TestRowAliasDocsListMethods(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "row.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok && g.Doc != nil {
				docs[ts.Name.Name] = g.Doc.Text()
			}
		}
	}
	for name, typ := range map[string]reflect.Type{"Row": reflect.TypeFor[Row](), "RowSchema": reflect.TypeFor[*RowSchema](), "Variant": reflect.TypeFor[Variant]()} {
		if typ.NumMethod() == 0 {
			t.Fatalf("%s has no methods", name)
		}
		for i := range typ.NumMethod() {
			m := typ.Method(i).Name
			if !strings.Contains(docs[name], m+"(") {
				t.Errorf("the doc comment of %s does not list its method %s", name, m)
			}
		}
	}
}
