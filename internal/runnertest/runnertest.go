// Package runnertest runs a package's tests on the runner the environment
// names: prism (the default), or Beam Python's portable job service (the
// FnApiRunner), which it starts and stops itself. It is the second runner of
// icebeam's runner matrix (testing/interop/run.sh runs the matrix).
//
//	func TestMain(m *testing.M) { runnertest.Main(m) }
//
// ICEBEAM_RUNNER=python selects the job service; ICEBEAM_BEAM_PYTHON is then
// the Python interpreter of a venv with apache-beam (testing/interop/install.sh
// makes .deps/beamvenv). Without it the run fails: a matrix leg that cannot
// start its runner must not pass by skipping. The Go workers run in the test
// process (--environment_type=LOOPBACK), so tests can collect output in
// package variables as they do on prism.
package runnertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/internal/jobrun"
)

// Env names the runner: "" or "prism" for prism, "python" for the job service.
const Env = "ICEBEAM_RUNNER"

// PythonEnv names the interpreter that runs the job service.
const PythonEnv = "ICEBEAM_BEAM_PYTHON"

// pythonRunner is the runner name the tests use on the job service: the
// universal runner, with a job that reached DONE not failed because the job
// service could not return its metrics (see jobrun.MetricsOnly).
const pythonRunner = "icebeam-python-job-service"

func init() {
	beam.RegisterRunner(pythonRunner, func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		pr, err := universal.Execute(ctx, p)
		if err != nil && jobrun.MetricsOnly(err) {
			fmt.Fprintf(os.Stderr, "runnertest: the job finished; the job service could not return its metrics: %v\n", err)
			return jobrun.NoMetrics(), nil
		}
		return pr, err
	})
}

// Runner returns the runner the environment names, "prism" or "python".
func Runner() string {
	if r := os.Getenv(Env); r != "" {
		return r
	}
	return "prism"
}

// OnPython reports whether the tests run on Beam Python's job service.
func OnPython() bool { return Runner() == "python" }

// Main runs the tests as ptest.Main does, on the runner of the environment.
func Main(m *testing.M) { os.Exit(MainRet(m)) }

// MainRet is Main without the exit.
func MainRet(m *testing.M) int {
	switch r := Runner(); r {
	case "prism":
		return ptest.MainRet(m)
	case "python":
		stop, err := startJobService()
		if err != nil {
			fmt.Fprintf(os.Stderr, "runnertest: %v\n", err)
			return 2
		}
		defer stop()
		return ptest.MainRet(m)
	default:
		fmt.Fprintf(os.Stderr, "runnertest: %s=%q: want prism or python\n", Env, r)
		return 2
	}
}

// startJobService starts Beam Python's portable job service on a free port of
// 127.0.0.1, waits until it accepts connections, and points the runner flags
// at it. stop ends it and removes its folder.
func startJobService() (stop func(), err error) {
	py := os.Getenv(PythonEnv)
	if py == "" {
		return nil, fmt.Errorf("%s=python needs %s, the python of a venv with apache-beam (testing/interop/install.sh)", Env, PythonEnv)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "icebeam-jobservice-")
	if err != nil {
		return nil, err
	}
	log, err := os.Create(dir + "/jobservice.log")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(py, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", strconv.Itoa(port))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the job service: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		// The job service's own process group: it and any worker it started.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		log.Close()
		os.RemoveAll(dir)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(dir + "/jobservice.log")
			exited <- err
			stop()
			return nil, fmt.Errorf("the job service exited (%v):\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the job service did not listen on %s within 90 s", addr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	*runners.Runner = pythonRunner
	*jobopts.Endpoint = addr
	*jobopts.EnvironmentType = "LOOPBACK"
	fmt.Fprintf(os.Stderr, "runnertest: Beam Python job service (apache_beam %s) on %s\n", pythonBeamVersion(py), addr)
	return stop, nil
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pythonBeamVersion returns the apache_beam version of py, for the log.
func pythonBeamVersion(py string) string {
	out, err := exec.Command(py, "-c", "import importlib.metadata as m; print(m.version('apache-beam'))").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// PlainUniversal makes the rest of the test use the SDK's own universal runner on
// the job service, without this package's tolerance of a failed metrics call: an
// example must then get past that failure itself (internal/jobrun), as it does
// when a user runs it with --runner=universal. On prism it does nothing.
func PlainUniversal(t *testing.T) {
	t.Helper()
	if !OnPython() {
		return
	}
	old := *runners.Runner
	*runners.Runner = "universal"
	t.Cleanup(func() { *runners.Runner = old })
}
