// Command keygen writes what package iceberg spells for each managed config key from
// the one place the key is defined, a field of ReadConfig, WriteConfig, ChangesConfig
// or MaintainConfig:
//
//	// NumShards is the number of key-hash shards per destination ... Default: `16`.
//	NumShards *int `managed:"num_shards" option:"WithNumShards(n)"`
//
// The managed tag is the key; the field's doc comment is the key's doc, shown by go doc
// on the field, on the key constant and on the option, and, turned into Markdown, in
// README.md's key table; the option tag names the With* option that sets the field.
// keygen writes
//
//   - iceberg/internal/config/keys_gen.go: the key constants (KeyNumShards = "num_shards"),
//     named after the field;
//   - iceberg/keys_gen.go: their re-exports, each with the doc of every field it tags;
//   - iceberg/options_gen.go: the options of the option tags;
//   - README.md: the key table between <!-- keys:begin --> and <!-- keys:end -->.
//
// Run it with go generate ./iceberg/ (see iceberg/keys.go); TestGeneratedFilesAreFresh
// fails when a generated file differs from what keygen would write.
//
// A field doc starts with the field's name, may end with "Default: <text>." or
// "Required ..." (the README's default column), names other keys as `key` and Go names
// as doc links ([ErrUnsupported]; a parenthesised list of them, "([DefaultNumShards])",
// is left out of the README), and may point at a README section as "see <Section> in
// the README".
//
// An option tag is "Name(param)" or "Name(param kind)": the option takes the field's
// type (its element type, variadic, for a slice; int for *int), or with kind seconds a
// time.Duration stored rounded up to whole seconds, with kind millis a time.Time stored
// as epoch milliseconds. Options with more logic than that are written by hand
// (options.go).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// configs are the config types in the order their keys are listed, with the
// transform name of the README's transform column and of the key docs.
var configs = []struct{ typ, transform, call string }{
	{"ReadConfig", "read", "Read"},
	{"WriteConfig", "write", "Write"},
	{"MaintainConfig", "maintain", "Maintain"},
	{"ChangesConfig", "changes", "ReadChanges"},
}

// field is one managed field of a config type.
type field struct {
	config string // ReadConfig, ...
	name   string // Go field name
	key    string // managed tag
	typ    string // Go type as written
	doc    string // doc comment, one paragraph per blank-line-separated block
	option string // option tag, empty when the field has no generated option
}

// key is one managed key with the fields it tags, in configs order.
type key struct {
	name   string // the constant: "Key" + field name
	key    string
	fields []field
}

func main() {
	dir := flag.String("dir", ".", "the directory of package iceberg")
	flag.Parse()
	files, err := generate(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keygen:", err)
		os.Exit(1)
	}
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "keygen:", err)
			os.Exit(1)
		}
	}
}

// generate returns the content of every file keygen writes, by path, for package
// iceberg in dir.
func generate(dir string) (map[string][]byte, error) {
	fields, err := parseConfigs(dir)
	if err != nil {
		return nil, err
	}
	keys, err := collectKeys(fields)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	add := func(path string, gen func() ([]byte, error)) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = gen(); err == nil {
			out[path] = b
		}
	}
	add(filepath.Join(dir, "internal", "config", "keys_gen.go"), func() ([]byte, error) { return internalKeys(keys) })
	add(filepath.Join(dir, "keys_gen.go"), func() ([]byte, error) { return publicKeys(keys) })
	add(filepath.Join(dir, "options_gen.go"), func() ([]byte, error) { return options(fields) })
	readme := filepath.Join(dir, "..", "README.md")
	add(readme, func() ([]byte, error) {
		b, err := os.ReadFile(readme)
		if err != nil {
			return nil, err
		}
		return readmeTable(b, keys)
	})
	return out, err
}

// parseConfigs returns the managed fields of the config types declared in the
// non-test Go files of dir, in configs order, then field order.
func parseConfigs(dir string) ([]field, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	types := map[string]*ast.StructType{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_gen.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					types[ts.Name.Name] = st
				}
			}
		}
	}
	var fields []field
	for _, c := range configs {
		st, ok := types[c.typ]
		if !ok {
			return nil, fmt.Errorf("no struct type %s in %s", c.typ, dir)
		}
		for _, f := range st.Fields.List {
			if f.Tag == nil || len(f.Names) != 1 {
				continue
			}
			tagText, _ := strconv.Unquote(f.Tag.Value)
			tag := reflect.StructTag(tagText)
			k := tag.Get("managed")
			if k == "" || k == "-" {
				if tag.Get("option") != "" {
					return nil, fmt.Errorf("%s.%s: option tag on a field without a managed key", c.typ, f.Names[0].Name)
				}
				continue
			}
			name := f.Names[0].Name
			doc := docText(f.Doc)
			if !strings.HasPrefix(doc, name+" ") {
				return nil, fmt.Errorf("%s.%s: the doc comment must start with %q", c.typ, name, name+" ")
			}
			var typ bytes.Buffer
			if err := format.Node(&typ, fset, f.Type); err != nil {
				return nil, err
			}
			fields = append(fields, field{config: c.typ, name: name, key: k, typ: typ.String(), doc: doc, option: tag.Get("option")})
		}
	}
	return fields, nil
}

// docText returns the text of a doc comment: each paragraph on one line, paragraphs
// separated by a blank line.
func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(g.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}

// collectKeys groups the fields by key, in order of first appearance.
func collectKeys(fields []field) ([]key, error) {
	var keys []key
	index := map[string]int{}
	for _, f := range fields {
		i, ok := index[f.key]
		if !ok {
			i = len(keys)
			index[f.key] = i
			keys = append(keys, key{name: "Key" + f.name, key: f.key})
		}
		if keys[i].name != "Key"+f.name {
			return nil, fmt.Errorf("key %q tags %s.%s and a field named %s: a key's fields share a name", f.key, f.config, f.name, strings.TrimPrefix(keys[i].name, "Key"))
		}
		keys[i].fields = append(keys[i].fields, f)
	}
	return keys, nil
}

const header = "// Code generated by keygen (iceberg/internal/config/keygen) from the config types' managed fields; DO NOT EDIT.\n\n"

// internalKeys writes package config's key constants.
func internalKeys(keys []key) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("package config\n\n")
	b.WriteString("// Managed configuration keys, one per managed field of package iceberg's config types;\n")
	b.WriteString("// package iceberg re-exports them with the fields' docs.\n")
	b.WriteString("const (\n")
	for _, k := range keys {
		var refs []string
		for _, f := range k.fields {
			refs = append(refs, "iceberg."+f.config+"."+f.name)
		}
		writeComment(&b, "\t", fmt.Sprintf("%s is the key of %s.", k.name, join(refs)))
		fmt.Fprintf(&b, "\t%s = %q\n", k.name, k.key)
	}
	b.WriteString(")\n")
	return gofmt(b.Bytes())
}

// publicKeys writes package iceberg's re-exports of the key constants, each with the
// docs of the fields it tags.
func publicKeys(keys []key) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("package iceberg\n\n")
	b.WriteString("import \"github.com/icebeam/icebeam/iceberg/internal/config\"\n\n")
	b.WriteString("// Managed configuration keys: the keys of Dataflow's managed Iceberg I/O, plus icebeam's\n")
	b.WriteString("// own. Each is the managed tag of one field of ReadConfig, WriteConfig, ChangesConfig or\n")
	b.WriteString("// MaintainConfig, whose doc comment is the key's doc; ParseReadConfig, ParseWriteConfig,\n")
	b.WriteString("// ParseChangesConfig and ParseMaintainConfig accept exactly these, and README.md lists\n")
	b.WriteString("// each with its type, default and meaning.\n")
	b.WriteString("const (\n")
	for i, k := range keys {
		if i > 0 {
			b.WriteString("\n")
		}
		var transforms []string
		for _, f := range k.fields {
			transforms = append(transforms, transformOf(f.config))
		}
		paras := []string{fmt.Sprintf("%s is %q, a %s key.", k.name, k.key, join(transforms))}
		for _, g := range groupDocs(k.fields) {
			var refs []string
			for _, f := range g {
				refs = append(refs, "["+f.config+"."+f.name+"]")
			}
			subject := refs[0]
			if len(refs) > 1 {
				subject += " (also " + join(refs[1:]) + ")"
			}
			paras = append(paras, subject+strings.TrimPrefix(g[0].doc, g[0].name))
		}
		writeComment(&b, "\t", strings.Join(paras, "\n\n"))
		fmt.Fprintf(&b, "\t%s = config.%s\n", k.name, k.name)
	}
	b.WriteString(")\n")
	return gofmt(b.Bytes())
}

// groupDocs groups fields with the same doc, in order of first appearance.
func groupDocs(fields []field) [][]field {
	var groups [][]field
	for _, f := range fields {
		i := slices.IndexFunc(groups, func(g []field) bool { return g[0].doc == f.doc })
		if i < 0 {
			groups = append(groups, []field{f})
		} else {
			groups[i] = append(groups[i], f)
		}
	}
	return groups
}

func transformOf(config string) string {
	for _, c := range configs {
		if c.typ == config {
			return c.transform
		}
	}
	panic("unknown config " + config)
}

func callOf(config string) string {
	for _, c := range configs {
		if c.typ == config {
			return c.call
		}
	}
	panic("unknown config " + config)
}

// optionRe matches an option tag: Name(param) or Name(param kind).
var optionRe = regexp.MustCompile(`^(With[A-Za-z]+)\(([a-z]+)(?: (seconds|millis))?\)$`)

// options writes the options of the option tags.
func options(fields []field) ([]byte, error) {
	var b bytes.Buffer
	imports := map[string]bool{}
	seen := map[string]bool{}
	for _, f := range fields {
		if f.option == "" {
			continue
		}
		m := optionRe.FindStringSubmatch(f.option)
		if m == nil {
			return nil, fmt.Errorf("%s.%s: option tag %q is not Name(param) or Name(param seconds|millis)", f.config, f.name, f.option)
		}
		name, param, kind := m[1], m[2], m[3]
		if seen[name] {
			return nil, fmt.Errorf("option %s is tagged twice", name)
		}
		seen[name] = true
		optType := strings.TrimSuffix(f.config, "Config") + "Option"
		var sig, pre, set, note string
		switch {
		case kind == "seconds" && f.typ == "*int":
			sig, pre, set = param+" time.Duration", "s := seconds("+param+")", "&s"
			imports["time"] = true
			note = " (" + param + " rounded up to whole seconds)"
		case kind == "millis" && f.typ == "*int64":
			sig, pre, set = param+" time.Time", "ms := "+param+".UnixMilli()", "&ms"
			imports["time"] = true
			note = " (" + param + " stored as epoch milliseconds)"
		case kind != "":
			return nil, fmt.Errorf("%s.%s: option kind %s does not fit type %s", f.config, f.name, kind, f.typ)
		case f.typ == "[]string":
			sig, pre, set = param+" ...string", param+" = slices.Clone("+param+")", param
			imports["slices"] = true
		case strings.HasPrefix(f.typ, "map["):
			sig, pre, set = param+" "+f.typ, param+" = maps.Clone("+param+")", param
			imports["maps"] = true
		case strings.HasPrefix(f.typ, "*"):
			sig, set = param+" "+strings.TrimPrefix(f.typ, "*"), "&"+param
		default:
			sig, set = param+" "+f.typ, param
		}
		doc := fmt.Sprintf("%s sets %s%s: [%s.%s]%s", name, f.key, note, f.config, f.name, strings.TrimPrefix(f.doc, f.name))
		writeComment(&b, "", doc)
		fmt.Fprintf(&b, "func %s(%s) %s {\n", name, sig, optType)
		if pre != "" {
			fmt.Fprintf(&b, "\t%s\n", pre)
		}
		fmt.Fprintf(&b, "\treturn func(c *%s) { c.%s = %s }\n}\n\n", f.config, f.name, set)
	}
	var head bytes.Buffer
	head.WriteString(header)
	head.WriteString("package iceberg\n\nimport (\n")
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		fmt.Fprintf(&head, "\t%q\n", p)
	}
	head.WriteString(")\n\n")
	return gofmt(append(head.Bytes(), b.Bytes()...))
}

const (
	beginMarker = "<!-- keys:begin -->"
	endMarker   = "<!-- keys:end -->"
)

// readmeTable returns readme with its key table replaced by one built from keys.
func readmeTable(readme []byte, keys []key) ([]byte, error) {
	s := string(readme)
	begin, end := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("README.md has no %s ... %s section", beginMarker, endMarker)
	}
	anchors := headings(s)
	details := keyDetails(s)
	var b strings.Builder
	b.WriteString(s[:begin])
	b.WriteString(beginMarker + "\n")
	var shared []string
	for _, k := range keys {
		if slices.ContainsFunc(k.fields, func(f field) bool { return f.config == "ChangesConfig" }) {
			shared = append(shared, "`"+k.key+"`")
		}
	}
	fmt.Fprintf(&b, "`ReadChanges` takes the read keys %s.\n\n", join(shared))
	b.WriteString("| key | transform | type | default | meaning |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		var transforms []string
		for _, f := range k.fields {
			if f.config == "ChangesConfig" && slices.Contains(transforms, "read") {
				continue // ReadChanges also takes the read keys it shares
			}
			transforms = append(transforms, transformOf(f.config))
		}
		var defaults, meanings, labelled []string
		groups := groupDocs(k.fields)
		for _, g := range groups {
			meaning, def := splitDefault(strings.TrimPrefix(g[0].doc, g[0].name+" "))
			meaning, err := markdown(meaning, anchors)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", g[0].config, g[0].name, err)
			}
			def = linkRe.ReplaceAllString(goNamesRe.ReplaceAllString(def, ""), "`$1`")
			label, first := "", strings.ToUpper
			if len(groups) > 1 {
				first = strings.ToLower
			}
			if meaning != "" {
				meaning = first(meaning[:1]) + meaning[1:]
			}
			if len(groups) > 1 {
				var calls []string
				for _, f := range g {
					calls = append(calls, "`"+callOf(f.config)+"`")
				}
				label = join(calls) + ": "
			}
			meanings = append(meanings, label+meaning)
			defaults = append(defaults, def)
			if def != "" {
				labelled = append(labelled, label+def)
			}
		}
		meaning := strings.Join(meanings, " ")
		def := defaults[0]
		if slices.ContainsFunc(defaults, func(d string) bool { return d != def }) {
			def = strings.Join(labelled, "; ")
		}
		if details[k.key] {
			meaning += " See [Key details](#key-details)."
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.key, strings.Join(transforms, ", "), readmeType(k.fields[0]), def, meaning)
	}
	b.WriteString(s[end:])
	return []byte(b.String()), nil
}

// splitDefault splits a field doc (without its leading field name) into its meaning and
// its default: the text of a last sentence "Default: <text>." or "required" for a last
// sentence "Required.".
func splitDefault(doc string) (meaning, def string) {
	if i := strings.LastIndex(doc, "Default: "); i >= 0 && strings.HasSuffix(doc, ".") && (i == 0 || strings.HasSuffix(doc[:i], " ")) && !strings.Contains(doc[i:], ". ") {
		return strings.TrimSpace(doc[:i]), strings.TrimSuffix(doc[i+len("Default: "):], ".")
	}
	if i := strings.LastIndex(doc, " Required"); i >= 0 && strings.HasSuffix(doc, ".") && !strings.Contains(doc[i+1:], ". ") {
		return doc[:i], "r" + strings.TrimSuffix(doc[i+2:], ".")
	}
	return doc, ""
}

// goNamesRe matches a parenthesised list of doc links, such as "([DefaultNumShards])"
// or "(see [ParseSortField])": what Go users see, left out of the README.
var goNamesRe = regexp.MustCompile(` \((?:see )?\[[A-Z][A-Za-z.]+\](?:, \[[A-Z][A-Za-z.]+\])*\)`)

// linkRe matches the other doc links, code in the README.
var linkRe = regexp.MustCompile(`\[([A-Z][A-Za-z.]+)\]`)

// seeRe matches a pointer to a README section in a field doc.
var seeRe = regexp.MustCompile(`([Ss]ee) ([A-Z][A-Za-z ,]*?) in the README`)

// markdown turns a field doc (without its leading field name) into a README cell: a
// leading "is" or "are" goes, parenthesised doc links go and the others become code,
// paragraphs are joined and "see <Section> in the README" becomes a link.
func markdown(doc string, anchors map[string]string) (string, error) {
	doc = strings.ReplaceAll(doc, "\n\n", " ")
	doc = linkRe.ReplaceAllString(goNamesRe.ReplaceAllString(doc, ""), "`$1`")
	for _, verb := range []string{"is ", "are "} {
		if rest, ok := strings.CutPrefix(doc, verb); ok {
			doc = rest
			break
		}
	}
	var err error
	doc = seeRe.ReplaceAllStringFunc(doc, func(m string) string {
		sm := seeRe.FindStringSubmatch(m)
		a, ok := anchors[sm[2]]
		if !ok {
			err = fmt.Errorf("the README has no section %q", sm[2])
			return m
		}
		return sm[1] + " [" + sm[2] + "](#" + a + ")"
	})
	if strings.Contains(doc, "|") {
		doc = strings.ReplaceAll(doc, "|", `\|`)
	}
	return doc, err
}

// headings returns the README's section titles and their anchors.
func headings(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchor := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			case r == ' ':
				return '-'
			}
			return -1
		}, title)
		out[title] = anchor
	}
	return out
}

// keyDetails returns the keys the README's "Key details" section explains, each on a
// bullet "- `key`: ...".
func keyDetails(s string) map[string]bool {
	out := map[string]bool{}
	_, sec, ok := strings.Cut(s, "\n### Key details\n")
	if !ok {
		return out
	}
	if i := strings.Index(sec, "\n#"); i >= 0 {
		sec = sec[:i]
	}
	for _, line := range strings.Split(sec, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			if k, _, ok := strings.Cut(rest, "`:"); ok {
				out[k] = true
			}
		}
	}
	return out
}

// readmeType is the README's type of a field's key, in the YAML terms of Dataflow's
// managed I/O docs.
func readmeType(f field) string {
	switch {
	case f.typ == "string" && strings.HasSuffix(f.name, "Timestamp"):
		return "str or int" // RFC 3339 or epoch milliseconds (see the config Schema)
	case f.typ == "*int64" && strings.HasSuffix(f.name, "Timestamp"):
		return "int64 (epoch ms)"
	case f.typ == "*int64":
		return "int64"
	case f.typ == "*int":
		return "int32"
	case f.typ == "bool":
		return "boolean"
	case f.typ == "[]string":
		return "list[str]"
	case f.typ == "map[string]string":
		return "map[str, str]"
	}
	return "str" // string and the string types (Mode, DeleteFormat, ...)
}

// join lists words as "a", "a and b", "a, b and c".
func join(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// writeComment writes text as a // comment wrapped at 90 columns (a tab counts 4),
// keeping its blank-line-separated paragraphs.
func writeComment(b *bytes.Buffer, indent, text string) {
	width := 90 - 4*strings.Count(indent, "\t") - 3
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			b.WriteString(indent + "//\n")
		}
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				b.WriteString(indent + "// " + line + "\n")
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line != "" {
			b.WriteString(indent + "// " + line + "\n")
		}
	}
}

func gofmt(b []byte) ([]byte, error) {
	out, err := format.Source(b)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, b)
	}
	return out, nil
}
