package interop

import (
	"os"
	"strings"
	"testing"
)

// TestCompatTableInREADME fails when README.md's compatibility table (between the
// compat markers) is not compat.md, the table compat.py made from an interop run;
// run.sh fails when a run's results no longer make compat.md. Fix a failure with
// `python3 testing/interop/compat.py WORK --write` on a run's folder.
func TestCompatTableInREADME(t *testing.T) {
	const begin, end = "<!-- compat:begin -->", "<!-- compat:end -->"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("compat.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s ... %s section", begin, end)
	}
	if got := s[i+len(begin) : j]; got != "\n"+string(want) {
		t.Errorf("README.md's compatibility table differs from testing/interop/compat.md: run "+
			"python3 testing/interop/compat.py WORK --write on an interop run's folder\nREADME:\n%s\ncompat.md:\n%s", got, want)
	}
}
