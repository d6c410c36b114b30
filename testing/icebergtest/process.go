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
// Each run has a folder of its own under the test's temporary folder, as working
// directory (the boot loader writes pipeline_options.json there) and semi-persistent
// directory (it retrieves the staged worker there): several workers may start at once.
// Output goes to a log file: prism kills the boot loader at the end of the job, and a
// worker left holding the test's stdout would keep go test waiting.
const bootScript = `#!/bin/sh
d=$(mktemp -d %q/w.XXXXXX) || exit 1
cd "$d" || exit 1
for a do
  shift
  case $a in
    --id=\'*\') a=--id=${a#--id=\'}; a=${a%%\'} ;;
  esac
  set -- "$@" "$a"
done
exec %q --semi_persist_dir="$d" "$@" >>%q 2>&1
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
	script := BootLoader(t)
	setFlags(t, map[string]string{
		"environment_type":   "PROCESS",
		"environment_config": fmt.Sprintf(`{"command": %q}`, script),
	})
}

// BootLoader builds the SDK boot loader with the go command and returns a script
// that runs it (in the test's temporary folder, its output in a log file there) with
// a copy of the test binary as the worker binary (--worker_binary), made for this call
// (see uniqueCopy). Each run of the boot loader
// copies the worker to /tmp/bin*/worker and starts it: when the test ends the copies
// made since BootLoader are stopped and removed, the test fails if there were none,
// and the log's tail is shown if it failed.
func BootLoader(t *testing.T) (script string) {
	t.Helper()
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot")
	build := exec.Command("go", "build", "-o", boot, "github.com/apache/beam/sdks/v2/go/container")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the boot loader: %v\n%s", err, out)
	}
	script = filepath.Join(dir, "boot.sh")
	bootLog := filepath.Join(dir, "boot.log")
	if err := os.WriteFile(script, fmt.Appendf(nil, bootScript, dir, boot, bootLog), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The worker is a copy of the test binary with a trailer of its own, so that its
	// copies under /tmp/bin* are this test's alone: another run of the same test
	// binary at the same time (two copies of a stress run) makes copies with another
	// hash, which WorkerCopies neither counts nor stops.
	worker := filepath.Join(dir, "worker")
	if err := uniqueCopy(self, worker, dir); err != nil {
		t.Fatalf("copying the test binary as the worker: %v", err)
	}
	setFlags(t, map[string]string{"worker_binary": worker})
	start := time.Now()
	t.Cleanup(func() {
		if WorkerCopies(t, start, true) == 0 {
			t.Errorf("found no copy of the worker binary under /tmp/bin*: did the pipeline run in a separate process?")
		}
		if t.Failed() {
			if b, err := os.ReadFile(bootLog); err == nil {
				t.Logf("boot loader and worker output:\n%s", b[max(0, len(b)-8000):])
			}
		}
	})
	return script
}

// setFlags sets the named flags for the rest of t.
func setFlags(t *testing.T, set map[string]string) {
	t.Helper()
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
}

// WorkerCopies counts the /tmp/bin*/worker copies of the test's worker binary (the
// worker_binary flag BootLoader set, else the test binary) made since start (the boot
// loader copies the worker binary there and runs it: one per worker process); with
// remove it also stops the workers run from them (prism stops the boot loader, not
// its child) and removes them.
func WorkerCopies(t *testing.T, start time.Time, remove bool) int {
	t.Helper()
	worker := flag.Lookup("worker_binary").Value.String()
	if worker == "" {
		var err error
		if worker, err = os.Executable(); err != nil {
			t.Error(err)
			return 0
		}
	}
	want, err := fileHash(worker)
	if err != nil {
		t.Error(err)
		return 0
	}
	dirs, _ := filepath.Glob("/tmp/bin*")
	n := 0
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || fi.ModTime().Before(start.Add(-time.Second)) {
			continue
		}
		if h, err := fileHash(filepath.Join(d, "worker")); err == nil && bytes.Equal(h, want) {
			n++
			if !remove {
				continue
			}
			killRunning(t, filepath.Join(d, "worker"))
			if err := os.RemoveAll(d); err != nil {
				t.Error(err)
			}
		}
	}
	return n
}

// uniqueCopy copies executable src to dst (mode 0755) and appends a trailer naming
// tag and the time, which the loader ignores and which makes dst's hash its own.
func uniqueCopy(src, dst, tag string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if _, err := fmt.Fprintf(out, "\nicebergtest worker %s %d\n", tag, time.Now().UnixNano()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
