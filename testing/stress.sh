#!/usr/bin/env bash
# Stress runs of the streaming suites on prism: the iceberg package's test binary is
# built once, then COPIES copies of it run the streaming tests at the same time, ROUNDS
# times, each copy in a TMPDIR of its own; at the end it prints, per top-level test,
# how many runs passed and failed. A copy does not start a round while less than
# MIN_GB GB of memory are available (compiling and running the iceberg package's tests
# takes several GB each; with no swap the kernel would kill something).
#
# Usage: testing/stress.sh [WORKDIR]   (env: ROUNDS=10 COPIES=2 MIN_GB=6 RUN=regexp,
#        BIN=a prebuilt iceberg package test binary instead of building one)
# Each run's output is WORKDIR/c<copy>-r<round>.txt; a failure there says whether a
# model check failed (a real bug) or the environment did (a worker that did not start).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d)}"
ROUNDS="${ROUNDS:-10}" COPIES="${COPIES:-2}" MIN_GB="${MIN_GB:-6}"
RUN="${RUN:-^(TestStreamingLateModel|TestStreamingSeveralWorkerProcesses|TestStreamingAppendRestart|TestLateRowsScenario|TestStreamingAppendWindowsLateRows|TestStreamingMergeOnRead|TestStreamingMergeOnReadMaintenance|TestStreamingWriteBatches|TestMergeOnReadSeparateWorkerProcess|TestStreamingReadsSeparateWorkerProcess)$}"
mkdir -p "$WORK"
BIN="${BIN:-}"
if [[ -z "$BIN" ]]; then
  echo "stress: building the iceberg test binary into $WORK"
  (cd "$ROOT" && CGO_ENABLED=0 go test -c -o "$WORK/iceberg.test" ./iceberg/)
  BIN="$WORK/iceberg.test"
fi

avail_gb() { awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo; }

copy() {
  local c=$1 r
  for r in $(seq 1 "$ROUNDS"); do
    while (( $(avail_gb) < MIN_GB )); do sleep 30; done
    mkdir -p "$WORK/tmp-c$c"
    (cd "$ROOT/iceberg" && TMPDIR="$WORK/tmp-c$c" "$BIN" -test.run "$RUN" -test.count=1 -test.v \
      -test.timeout 60m >"$WORK/c$c-r$r.txt" 2>&1) || true
    rm -rf "$WORK/tmp-c$c"
    echo "stress: copy $c round $r: $(grep -c '^--- PASS' "$WORK/c$c-r$r.txt" || true) passed, $(grep -c '^--- FAIL' "$WORK/c$c-r$r.txt" || true) failed"
  done
}

for c in $(seq 1 "$COPIES"); do
  copy "$c" &
  sleep 20 # the copies do not start in step
done
wait
echo "stress: runs per top-level test (passed, failed):"
cat "$WORK"/c*-r*.txt | sed -nE 's/^--- (PASS|FAIL): (Test[A-Za-z0-9_]+) .*/\2 \1/p' | sort | uniq -c |
  awk '{n[$2]; c[$2 " " $3] = $1} END {for (t in n) printf "  %-45s %3d %3d\n", t, c[t " PASS"], c[t " FAIL"]}' | sort
! grep -q '^--- FAIL' "$WORK"/c*-r*.txt
