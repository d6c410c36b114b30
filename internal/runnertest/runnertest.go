// Package runnertest runs a package's tests on the runner the environment
// names: prism (the default), or Beam Python's portable job service (the
// FnApiRunner), which it starts and stops itself. It is the second runner of
// icebeam's runner matrix (testing/interop/run.sh runs the matrix).
//
//	func TestMain(m *testing.M) { runnertest.Main(m) }
//
// The job service is Beam Python's local_job_service_main, started through a
// launcher that also lets a job ask for several SDK workers (SeveralWorkers); a
// test's pipelines run with workers in processes of their own on either runner with
// WorkerProcesses.
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
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/pool"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/icebeam/icebeam/iceberg/jobrun"
	"github.com/icebeam/icebeam/testing/icebergtest"
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
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("worker"); f != nil && f.Value.String() == "true" {
		// The test binary started as an SDK worker (SeveralWorkers, or prism's
		// PROCESS environment): it runs no tests and needs no job service.
		return ptest.MainRet(m)
	}
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
	cmd := exec.Command(py, JobServiceArgs(port)...)
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

// JobServiceArgs returns the arguments that make the python of a venv with
// apache-beam run the job service on port of every interface, through the launcher
// the tests use (jobServiceLauncher): testing/interop's merge bench runs its jobs on it.
func JobServiceArgs(port int) []string {
	return []string{"-c", jobServiceLauncher, "--port", strconv.Itoa(port)}
}

// jobServiceLauncher runs Beam Python's local_job_service_main with one change: a
// job whose options ask for a parallelism N > 1 (--parallelism, see SeveralWorkers)
// runs on N SDK workers. The job service's FnApiRunner has that many workers only when
// told (the Python DirectRunner's --direct_num_workers sets it; the job service builds
// its FnApiRunner with the default of 1, local_job_service.py BeamJob._invoke_runner,
// and run_via_runner_api reads no worker count); it then hands each bundle to the next
// worker in turn, stateful stages' bundles one at a time (fn_runner.py BundleManager).
//
// It also ends a job's gRPC servers without a grace period. The FnApiRunner closes
// them once every bundle has run and the job's result is decided (fn_runner.py
// run_stages, worker_handler_manager.close_all in its finally), with 5 s of grace
// (worker_handlers.py GrpcServer._DEFAULT_SHUTDOWN_TIMEOUT_SECS) for streams the
// worker keeps open; the Go harness keeps its data, state and logging streams open
// until the runner ends them, so every job waited the full 5 s after its last bundle
// and then had the streams cancelled anyway (the runner matrix's iceberg tests on the
// job service took 25 min before, 8.5 min after, on a loaded 2-core machine).
const jobServiceLauncher = `
import logging, signal, sys
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.job import utils as job_utils
from apache_beam.runners.portability import local_job_service, local_job_service_main
from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

worker_handlers.GrpcServer._DEFAULT_SHUTDOWN_TIMEOUT_SECS = 0

def _invoke_runner(self):
    self.set_state(beam_job_api_pb2.JobState.RUNNING)
    runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
    n = int(job_utils.struct_to_dict(self._pipeline_options).get('beam:option:parallelism:v1') or 1)
    if n > 1:
        runner._num_workers = n
    return runner.run_via_runner_api(self._pipeline_proto, self.pipeline_options())

local_job_service.BeamJob._invoke_runner = _invoke_runner
signal.signal(signal.SIGTERM, lambda *args: sys.exit(0))
logging.basicConfig()
logging.getLogger().setLevel(logging.INFO)
local_job_service_main.run(sys.argv[1:])
`

// SeveralWorkers makes the rest of t run its pipelines on n SDK worker processes of
// the job service, each the test binary started by the SDK boot loader through an
// external worker pool served here (environment EXTERNAL): bundles go to the workers
// in turn, so a stage's work moves between processes, and every DoFn travels in its
// serialized configuration. Output collected in package variables stays in the
// workers: such a test collects through files. workers reports how many worker
// processes started so far. On prism, which starts one worker per environment
// (prism/internal/execute.go RunPipeline), it fails the test.
func SeveralWorkers(t *testing.T, n int) (workers func() int) {
	t.Helper()
	if !OnPython() {
		t.Fatalf("SeveralWorkers: %s=%s starts one worker per environment; run with %s=python", Env, Runner(), Env)
	}
	script := icebergtest.BootLoader(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wp, err := pool.New(ctx, port, script)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go wp.ServeAndWait()
	start := time.Now()
	envType, envConfig, parallelism := *jobopts.EnvironmentType, *jobopts.EnvironmentConfig, *jobopts.Parallelism
	*jobopts.EnvironmentType, *jobopts.EnvironmentConfig = "EXTERNAL", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	*jobopts.Parallelism = n
	t.Cleanup(func() {
		*jobopts.EnvironmentType, *jobopts.EnvironmentConfig, *jobopts.Parallelism = envType, envConfig, parallelism
		wp.Stop(ctx)
		cancel()
	})
	return func() int { return icebergtest.WorkerCopies(t, start, false) }
}

// WorkerProcesses makes the rest of t run its pipelines with the workers in
// processes other than the test's: on prism its PROCESS environment (one worker
// process, icebergtest.ProcessEnvironment), on the job service SeveralWorkers(t, 2).
// want is the number of worker processes each pipeline run gets; started reports
// how many have started so far.
func WorkerProcesses(t *testing.T) (want int, started func() int) {
	t.Helper()
	if OnPython() {
		return 2, SeveralWorkers(t, 2)
	}
	start := time.Now()
	icebergtest.ProcessEnvironment(t)
	return 1, func() int { return icebergtest.WorkerCopies(t, start, false) }
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
// example must then get past that failure itself (iceberg/jobrun), as it does
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
