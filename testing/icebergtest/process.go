package icebergtest

import (
	"bytes"
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

// ProcessEnvironment sets the job options that make prism start workers as separate
// processes, as on Dataflow: the SDK boot loader (built here with the go command)
// running the test binary as the worker, so every DoFn must travel in its serialized
// configuration. It restores the options and removes the worker copies the boot loader
// leaves in /tmp when the test ends, and fails the test if no worker process ran.
// The test binary must register every type and DoFn the pipeline uses (importing the
// packages that do is enough).
func ProcessEnvironment(t *testing.T) {
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
