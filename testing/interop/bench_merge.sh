#!/usr/bin/env bash
# Side-by-side bench of icebeam's merge-on-read CDC write and Spark 3.5 + Iceberg
# 1.10.1 MERGE INTO on the same table (bench_merge.py). A command to run and
# report, not a test: run.sh and `make test` never call it.
#
#   bash testing/interop/bench_merge.sh [--rounds N] [--rows N] [--batch N] [--work DIR] \
#     [--bundles N] [--source file|parts|textio] [--workers N] ...
#
# --bundles N: each batch in N part files, morbatch's parse stage in N bundles
# (--source parts, one part per bundle; textio: the runner's bundles), counted and
# reported as parse_bundles, with the key files read against the candidate files.
# --workers N: icebeam on Beam Python's portable job service (beamvenv beside the
# jars) with N worker processes, each one's peak RSS reported. See README.md.
#
# Environment and work dir: see bench_lib.sh.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
run_bench merge morbatch bench_merge.py "$@"
