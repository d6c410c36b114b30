//go:build interop

package interop

import (
	"path/filepath"
	"sync"
	"testing"
)

var resultsMu sync.Mutex

// recordResult appends r to results/go-<file>.json.
func recordResult(t *testing.T, file string, r Result) {
	t.Helper()
	resultsMu.Lock()
	defer resultsMu.Unlock()
	path := filepath.Join(resultsDir(t), "go-"+file+".json")
	var rs []Result
	_ = ReadJSON(path, &rs)
	rs = append(rs, r)
	if err := WriteJSON(path, rs); err != nil {
		t.Fatal(err)
	}
}
