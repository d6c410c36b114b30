#!/usr/bin/env bash
# Side-by-side bench of icebeam's columnar data path against PyIceberg, Spark 3.5 +
# Iceberg 1.10.1 and iceberg-go's raw scan on the same table (bench_columnar.py):
# full and filtered reads, ReadBatches, and an append of 1M rows. A command to run
# and report, not a test: run.sh and `make test` never call it.
#
#   bash testing/interop/bench_columnar.sh [--rounds N] [--rows N] [--work DIR] ...
#
# Environment and work dir: see bench_lib.sh.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
run_bench columnar colbench bench_columnar.py "$@"
