#!/usr/bin/env bash
# Side-by-side bench of icebeam's merge-on-read CDC write and Spark 3.5 + Iceberg
# 1.10.1 MERGE INTO on the same table (bench_merge.py). A command to run and
# report, not a test: run.sh and `make test` never call it.
#
#   bash testing/interop/bench_merge.sh [--rounds N] [--rows N] [--batch N] [--work DIR] ...
#
# Environment and work dir: see bench_lib.sh.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
run_bench merge morbatch bench_merge.py "$@"
