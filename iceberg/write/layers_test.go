package write

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPackageLayers fails when a package of the write side imports one above it: data
// flows iceberg -> write -> write/{maintain, schema, late, keyjoin} -> write/commit (and
// write/datafile) -> cdc -> internal; the facade does not reach past write into cdc.
// Compaction (maintain) and the key join (keyjoin) read key columns through cdc.
func TestPackageLayers(t *testing.T) {
	const mod = "github.com/icebeam/icebeam/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"iceberg", mod+"iceberg/write/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// allowed lists, for each package, the packages of the write side (and cdc) it
	// may import.
	allowed := map[string][]string{
		"iceberg":                {"iceberg/write", "iceberg/write/commit", "iceberg/write/maintain", "iceberg/write/schema"},
		"iceberg/write":          {"iceberg/cdc", "iceberg/write/commit", "iceberg/write/datafile", "iceberg/write/keyjoin", "iceberg/write/late", "iceberg/write/maintain", "iceberg/write/schema"},
		"iceberg/write/keyjoin":  {"iceberg/cdc", "iceberg/write/commit"},
		"iceberg/write/maintain": {"iceberg/cdc", "iceberg/write/commit", "iceberg/write/datafile"},
		"iceberg/write/schema":   {"iceberg/write/commit"},
		"iceberg/write/late":     {"iceberg/write/commit"},
		"iceberg/write/commit":   nil,
		"iceberg/write/datafile": nil,
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		ok, checked := allowed[pkg]
		if !checked {
			continue
		}
		seen++
		for _, imp := range fields[1:] {
			imp = strings.TrimPrefix(imp, mod)
			if (imp == "iceberg/cdc" || strings.HasPrefix(imp, "iceberg/write")) && !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s: data flows down (iceberg -> write -> maintain, schema, late, keyjoin -> commit, datafile -> cdc)", pkg, imp)
			}
		}
	}
	if seen != len(allowed) {
		t.Errorf("go list showed %d of the %d packages checked:\n%s", seen, len(allowed), out)
	}
}
