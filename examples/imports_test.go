// Package examples holds no code: its test checks that the example programs import
// only what a user's program can, so that they can be copied into another module.
package examples

import (
	"os/exec"
	"strings"
	"testing"
)

// TestExamplesImportOnlyPublicPackages fails when an example program (its non-test
// code, with every package it depends on) imports a package of this module under
// internal/ (which other modules cannot import) or testing/ (test fixtures).
func TestExamplesImportOnlyPublicPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, out)
	}
	var mains int
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(pkg, "github.com/icebeam/icebeam/examples/"):
			mains++
		case strings.HasPrefix(pkg, "github.com/icebeam/icebeam/internal/"),
			strings.HasPrefix(pkg, "github.com/icebeam/icebeam/testing/"):
			t.Errorf("an example depends on %s: examples import only public packages (iceberg, iceberg/catalogs/..., iceberg/storage/..., iceberg/jobrun, Beam)", pkg)
		}
	}
	if mains < 4 {
		t.Errorf("go list found %d example packages, want the four examples:\n%s", mains, out)
	}
}
