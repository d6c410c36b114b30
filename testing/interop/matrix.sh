#!/usr/bin/env bash
# The runner matrix, run by run.sh (make test) after install.sh: the examples and
# a core set of pipeline tests, each checked against a model, once on prism and
# once on Beam Python's portable job service (internal/runnertest starts it from
# $DEPS/beamvenv). Usage: matrix.sh [WORKDIR]; logs go to WORKDIR/matrix-*.log.
# ICEBEAM_MATRIX_RUNNERS names the legs (default "prism python"); `make test` runs
# only python, since `make unit` has just run every one of these tests on prism;
# "none" skips the matrix (an interop run for the engines only).
# Prints the pass and fail counts per runner; exits non-zero on any failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEPS="${ICEBEAM_INTEROP_DEPS:-$HERE/.deps}"
GO="${GO:-go}"
WORK="${1:-$DEPS/run}"
mkdir -p "$WORK"
export CGO_ENABLED=0 TZ=UTC
T0=$(date +%s)
if [[ "${ICEBEAM_MATRIX_RUNNERS:-}" == none ]]; then  # an interop run for the engines only
  echo "matrix: skipped (ICEBEAM_MATRIX_RUNNERS=none)"
  exit 0
fi
[[ -x "$DEPS/beamvenv/bin/python" ]] || { echo "matrix: $DEPS/beamvenv is missing: run testing/interop/install.sh" >&2; exit 1; }
rc=0
# the examples and a core set of pipeline tests on prism and
# on Beam Python's portable job service (internal/runnertest starts it from
# .deps/beamvenv). A skipped test fails the leg: it would not have shown anything.
# The tests built on TestStream alone (TestStreamingMergeOnRead, ...) run on prism only,
# in `make unit`: the FnApiRunner rejects the pipeline with
# "NotImplementedError: beam:transform:teststream:v1" (fn_runner.py, _check_requirements).
# TestStreamingLateModel (the late-row and restart model, 16 seeds, both modes) runs here
# with its stream from a splittable DoFn (and also from a TestStream on prism);
# TestLateRowsScenario is the streaming append and merge-on-read scenario (a periodic
# source, 1 s windows, rows 3 s and 15 s late).
# TestStreamingSeveralWorkerProcesses and TestMergeOnReadSeparateWorkerProcess run their
# workers in processes of their own (runnertest.WorkerProcesses): one on prism, two
# taking the bundles in turn on the job service.
CORE_ICEBERG='^(TestWriteRoundTrip|TestWriteStructProjectionAndHash|TestMergeOnReadSeed|TestMergeOnReadDebezium|TestReadChanges|TestLateRowsScenario|TestStreamingLateModel|TestStreamingSeveralWorkerProcesses|TestMergeOnReadSeparateWorkerProcess|TestMaintenanceAcrossBatchRuns|TestReadKeepDrop)$'
CORE_EXAMPLES='^(TestQuickstart|TestQuickstartStreaming|TestCDCExample|TestCDCExampleInput|TestCDCExampleStreaming|TestCDCExampleMaintain|TestMirror|TestMirrorIncremental)$'
WANT=19  # top-level tests: 11 of iceberg, 8 of the examples
# The test binaries are built once, for every leg (each is a 400 MB link).
BIN="$WORK/matrix-bin"
rm -rf "$BIN" && mkdir -p "$BIN"
echo "matrix: === build ($(( $(date +%s) - T0 ))s)"
(cd "$ROOT" && "$GO" test -c -o "$BIN/" ./iceberg/ ./examples/cdc/ ./examples/mirror/ ./examples/quickstart/) || exit 1
for runner in ${ICEBEAM_MATRIX_RUNNERS:-prism python}; do
  echo "matrix: === $runner ($(( $(date +%s) - T0 ))s)"
  log="$WORK/matrix-$runner.log"
  mtmp="$WORK/matrix-$runner-tmp"  # prism's loopback workers leave folders in TMPDIR
  mkdir -p "$mtmp"
  : >"$log"
  for pkgs in "iceberg $CORE_ICEBERG" "examples/cdc $CORE_EXAMPLES" "examples/mirror $CORE_EXAMPLES" "examples/quickstart $CORE_EXAMPLES"; do
    read -r pkg re <<<"$pkgs"
    bin="$BIN/$(basename "$pkg").test"
    [[ -x "$bin" ]] || { echo "matrix: $bin was not built" >&2; rc=1; continue; }
    # A test binary runs in its package's folder, as go test runs it.
    (cd "$ROOT/$pkg" && TMPDIR="$mtmp" ICEBEAM_RUNNER=$runner ICEBEAM_BEAM_PYTHON="$DEPS/beamvenv/bin/python" \
      "$bin" -test.count=1 -test.timeout 30m -test.v -test.run "$re") >>"$log" 2>&1 || rc=1
  done
  grep -E '^(--- |ok|FAIL|runnertest:)' "$log" | grep -v -- '--- PASS: .*/' || true
  grep -q -- '--- SKIP' "$log" && { echo "matrix ($runner): a test skipped" >&2; rc=1; }
  pass=$(grep -cE '^--- PASS' "$log" || true)
  echo "matrix ($runner): $pass of $WANT top-level tests passed, $(grep -cE '^--- FAIL' "$log" || true) failed"
  [[ "$pass" == "$WANT" ]] || rc=1
  rm -rf "$mtmp"
done
rm -rf "$BIN"

exit $rc
