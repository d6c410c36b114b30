package write

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebeam/icebeam/iceberg/internal/row"
	"github.com/icebeam/icebeam/testing/icebergtest"
)

// bootScript wraps the SDK boot loader for prism's PROCESS environment: prism passes
// --id='<id>' with literal quotes, which the boot loader would keep in the worker id.
// It runs in the test's temporary folder (the boot loader writes pipeline_options.json
// into its working directory). Output goes to a log file: prism kills the boot loader
// at the end of the job, and a worker left holding the test's stdout would keep go test
// waiting.
const bootScript = `#!/bin/sh
cd %q || exit 1
for a do
  shift
  case $a in
    --id=\'*\') a=--id=${a#--id=\'}; a=${a%%\'} ;;
  esac
  set -- "$@" "$a"
done
exec %q --semi_persist_dir=%q "$@" >>%q 2>&1
`

// processEnvironment sets the job options that make prism start workers as separate
// processes: the SDK boot loader (built here) running this test binary as the worker.
// It restores the options and removes the worker copies the boot loader leaves in /tmp
// when the test ends.
func processEnvironment(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot")
	build := exec.Command("go", "build", "-o", boot, "github.com/apache/beam/sdks/v2/go/container")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the boot loader: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "boot.sh")
	bootLog := filepath.Join(dir, "boot.log")
	if err := os.WriteFile(script, fmt.Appendf(nil, bootScript, dir, boot, filepath.Join(dir, "persist"), bootLog), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{
		"environment_type":   "PROCESS",
		"environment_config": fmt.Sprintf(`{"command": %q}`, script),
		"worker_binary":      self,
	}
	for name, v := range set {
		old := flag.Lookup(name).Value.String()
		if name == "environment_type" && old == "" {
			old = "loopback" // what the prism runner picks when none is set
		}
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { flag.Set(name, old) })
	}
	start := time.Now()
	t.Cleanup(func() {
		removeWorkerCopies(t, self, start)
		if t.Failed() {
			if b, err := os.ReadFile(bootLog); err == nil {
				t.Logf("boot loader and worker output:\n%s", b[max(0, len(b)-8000):])
			}
		}
	})
}

// removeWorkerCopies stops the workers run from /tmp/bin*/worker copies of worker made
// since start (the boot loader copies the worker binary there and runs it; prism stops
// the boot loader, not its child) and removes the copies.
func removeWorkerCopies(t *testing.T, worker string, start time.Time) {
	t.Helper()
	want, err := fileHash(worker)
	if err != nil {
		t.Error(err)
		return
	}
	dirs, _ := filepath.Glob("/tmp/bin*")
	removed := 0
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || fi.ModTime().Before(start.Add(-time.Second)) {
			continue
		}
		if h, err := fileHash(filepath.Join(d, "worker")); err == nil && bytes.Equal(h, want) {
			killRunning(t, filepath.Join(d, "worker"))
			if err := os.RemoveAll(d); err != nil {
				t.Error(err)
			}
			removed++
		}
	}
	if removed == 0 {
		t.Errorf("found no copy of the worker binary under /tmp/bin*: did the pipeline run in a separate process?")
	}
}

// killRunning kills the processes whose executable is exe.
func killRunning(t *testing.T, exe string) {
	t.Helper()
	links, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, l := range links {
		if target, err := os.Readlink(l); err != nil || target != exe {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(l)))
		if err != nil {
			continue
		}
		if proc, err := os.FindProcess(pid); err == nil {
			proc.Kill()
			proc.Release()
		}
	}
}

func fileHash(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// TestAppendSeparateWorkerProcess runs appends (per-bundle and hash distribution) on
// prism with workers in a separate process: everything the DoFns need must travel in
// their serialized configuration and the catalog, nothing through this process.
func TestAppendSeparateWorkerProcess(t *testing.T) {
	ctx := context.Background()
	lc := icebergtest.NewLocalCatalog(t)
	processEnvironment(t)

	const n = 20_000
	p, s := beam.NewPipelineWithRoot()
	seeds := beam.CreateList(s, []int{0, 1, 2, 3})
	rows := beam.ParDo(s, &genRowsFn{Per: n / 4}, seeds)
	bad := beam.CreateList(s, []row.Row{row.New([]string{"id", "s1"}, []any{"not-a-long", "x"})})
	in := beam.Flatten(s, rows, bad)
	for _, hash := range []bool{false, true} {
		spec := testSpec(t, lc, fmt.Sprintf("db.proc_%v", hash))
		spec.SinkID = fmt.Sprintf("proc-%v", hash)
		spec.PartitionFields = []string{"c"}
		spec.Keep = []string{"id", "a", "c", "s1", "ts"}
		spec.Hash = hash
		snaps, dead, err := Append(s, spec, in)
		if err != nil {
			t.Fatal(err)
		}
		passert.Count(s, snaps, "snapshots", 1)
		passert.Count(s, dead, "dead letters", 1)
	}
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	for _, hash := range []bool{false, true} {
		ident := table.Identifier{"db", fmt.Sprintf("proc_%v", hash)}
		if got := countRows(t, lc.Catalog, ident); got != n {
			t.Errorf("%s: rows = %d, want %d", ident, got, n)
		}
		tbl, err := lc.Catalog.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if err := icebergtest.CheckTable(ctx, tbl); err != nil {
			t.Error(err)
		}
		if got := columnNames(tbl); got != "id,a,c,s1,ts" {
			t.Errorf("%s: columns %s", ident, got)
		}
		tok, found, err := FindToken(tbl.Metadata(), table.MainBranch, fmt.Sprintf("proc-%v", hash))
		if err != nil || !found || tok.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			t.Errorf("%s: token %+v, %v, %v", ident, tok, found, err)
		}
		files := dataFiles(t, lc, ident)
		if hash && len(files) != 13 { // one file per partition c = i % 13
			t.Errorf("%s: %d data files with hash distribution, want 13", ident, len(files))
		}
	}
}
