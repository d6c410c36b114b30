package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// iceberg is the directory of package iceberg, from this package's.
const iceberg = "../../.."

// TestGeneratedFilesAreFresh fails when a file keygen writes differs from what it
// would write now: a config field's tag or doc changed without go generate.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := generate(iceberg)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Errorf("keygen writes %d files, want 4", len(files))
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if line, ok := firstDiff(got, want); ok {
			t.Errorf("%s is stale (run go generate ./iceberg/): line %d is\n\t%s\nwant\n\t%s", path, line+1, lineOf(got, line), lineOf(want, line))
		}
	}
}

// TestFreshnessSeesATagChange runs keygen on a copy of the config types with one
// managed tag changed: the generated files it would write differ from the ones in the
// tree, so TestGeneratedFilesAreFresh fails when a tag changes without go generate.
func TestFreshnessSeesATagChange(t *testing.T) {
	dir := copyConfigs(t, func(src string) string {
		return strings.Replace(src, `managed:"num_shards"`, `managed:"shard_count"`, 1)
	})
	files, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"keys_gen.go", filepath.Join("internal", "config", "keys_gen.go"), "README.md"} {
		path := filepath.Join(dir, name)
		if name == "README.md" {
			path = filepath.Join(dir, "..", name)
		}
		real, err := os.ReadFile(filepath.Join(iceberg, name))
		if name == "README.md" {
			real, err = os.ReadFile(filepath.Join(iceberg, "..", name))
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, differ := firstDiff(real, files[path]); !differ {
			t.Errorf("%s: a changed tag leaves it unchanged", name)
		}
		if !bytes.Contains(files[path], []byte("shard_count")) {
			t.Errorf("%s does not show the new key shard_count", name)
		}
	}
}

// TestBadFields checks that keygen refuses what it cannot generate from.
func TestBadFields(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"doc not starting with the field name", "// NumShards is the number", "// The number", `must start with "NumShards "`},
		{"bad option tag", `option:"WithNumShards(n)"`, `option:"WithNumShards(n, m)"`, "is not Name(param)"},
		{"option kind and type", `option:"WithNumShards(n)"`, `option:"WithNumShards(n millis)"`, "does not fit type *int"},
		{"option tagged twice", `option:"WithNumShards(n)"`, `option:"WithSinkID(n)"`, "tagged twice"},
		{"one key, two names", `Keep []string ` + "`" + `managed:"keep" option:"WithWriteKeep(cols)"`, `Kept []string ` + "`" + `managed:"keep" option:"WithWriteKeep(cols)"`, "share a name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyConfigs(t, func(src string) string {
				if c.name == "one key, two names" {
					src = strings.Replace(src, "// Keep lists the only fields kept", "// Kept lists the only fields kept", 1)
				}
				return strings.Replace(src, c.from, c.to, 1)
			})
			if _, err := generate(dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// copyConfigs copies the non-test Go files of package iceberg, each edited by edit,
// and README.md into a temporary tree, and returns the directory standing for iceberg.
func copyConfigs(t *testing.T, edit func(string) string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "iceberg")
	if err := os.MkdirAll(filepath.Join(dir, "internal", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(iceberg, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	edited := false
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src := edit(string(b))
		edited = edited || src != string(b)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !edited {
		t.Fatal("the edit changed no file")
	}
	readme, err := os.ReadFile(filepath.Join(iceberg, "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// firstDiff returns the index of the first line where a and b differ.
func firstDiff(a, b []byte) (int, bool) {
	if bytes.Equal(a, b) {
		return 0, false
	}
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i, true
		}
	}
	return min(len(la), len(lb)), true
}

func lineOf(b []byte, i int) string {
	lines := strings.Split(string(b), "\n")
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
