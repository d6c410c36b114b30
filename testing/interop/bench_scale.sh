#!/usr/bin/env bash
# Scale bench (issue 27): bench_merge.sh at several table sizes, then one table of
# icebeam against Spark MERGE INTO per (rows, batch size). A command to run and
# report, not a test: run.sh and `make test` never call it. Run it with the machine
# otherwise idle.
#
#   bash testing/interop/bench_scale.sh [--sizes 1000000,10000000,50000000] \
#     [--layouts 2m,compact,small] [--batch 10000,100000] [--rounds 5] [--work DIR] \
#     [--bundles 8] [--workers N] [--stream ROWS] [--stream-seconds 60] \
#     [other bench_merge.py args, e.g. --warmups 2 --source textio]
#
# Each size and layout runs in its own bench_merge.sh (its own tables, Spark JVM
# and warm-up, work dir DIR/rows-N-LAYOUT, results in its bench_merge.json). The
# layouts of the initial tables: 2m, one data file per 2M rows (at least 4); compact,
# one file per 512 MB (Spark's default target size, as a compaction leaves them:
# one file up to about 80M rows); small, one file per 100k rows (at least 8), as
# frequent small appends leave them. Above 5M rows the tables are checked equal to
# each other (count, checksum, EXCEPT ALL) rather than to a model.
#
# Each batch arrives in --bundles part files (default 8), which morbatch's parse
# stage reads in that many bundles on prism (bench_merge.py --bundles: one part per
# bundle, counted as parse_bundles). --workers N (default 0: none) adds, per size and
# layout, a run of the icebeam side on Beam Python's portable job service with N
# worker processes (bench_merge.py --workers; its parse stage reads the parts with
# textio, the job service's bundles; work dir DIR/rows-N-LAYOUT-wN, its own tables
# and Spark run): per-worker peak RSS.
#
# Then the streaming run (--stream ROWS, default the largest size; 0: none):
# BenchmarkStreamingMergeOnRead on a table seeded with ROWS rows, --stream-seconds
# one-second windows of 10,000 changes/s with inline maintenance every 10 commits,
# checked against its model (output in DIR/stream.log). --sizes "" runs it alone.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sizes=1000000,10000000,50000000 layouts=2m,compact,small batch=10000,100000 rounds=5 work="" stream="" stream_s=60 args=()
bundles=8 workers=0
while (($#)); do
  case "$1" in
    --sizes) sizes="$2"; shift 2 ;;
    --layouts) layouts="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --stream) stream="$2"; shift 2 ;;
    --stream-seconds) stream_s="$2"; shift 2 ;;
    --bundles) bundles="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
work="${work:-$(mktemp -d /tmp/icebeam-bench-scale.XXXXXX)}"
mkdir -p "$work"
status=0
for n in ${sizes//,/ }; do
  for layout in ${layouts//,/ }; do
    case "$layout" in
      2m) files=$((n / 2000000)); ((files >= 4)) || files=4 ;;
      compact) files=1 ;; # one Spark task: files roll at the 512 MB target size
      small) files=$((n / 100000)); ((files >= 8)) || files=8 ;;
      *) echo "bench: unknown layout $layout (2m, compact, small)" >&2; exit 2 ;;
    esac
    # Spark's MERGE over 50M rows runs out of direct buffer memory in a 3 GB driver.
    mem=3g; ((n < 20000000)) || mem=8g
    runs=("rows-$n-$layout")
    ((workers > 0)) && runs+=("rows-$n-$layout-w$workers")
    for run in "${runs[@]}"; do
      extra=()
      [[ "$run" == *-w"$workers" ]] && extra=(--workers "$workers")
      ICEBEAM_SPARK_DRIVER_MEMORY="${ICEBEAM_SPARK_DRIVER_MEMORY:-$mem}" bash "$here/bench_merge.sh" --work "$work/$run" --rows "$n" --files "$files" \
        --batch "$batch" --rounds "$rounds" --bundles "$bundles" "${extra[@]}" "${args[@]}" | tee "$work/$run.log" || status=1
    done
  done
done
if [[ -z "$stream" ]]; then
  stream=0
  for n in ${sizes//,/ }; do ((n > stream)) && stream=$n; done
fi
if ((stream > 0)); then
  (cd "$here/../.." && TMPDIR="$work" ${GO:-go} test -run '^$' -bench '^BenchmarkStreamingMergeOnRead$' -benchtime 1x \
    -timeout 2h ./iceberg/ -args -stream_bench_keys="$stream" -stream_bench_duration="${stream_s}s" \
    -stream_bench_maintain=10 -stream_bench_batch=false) 2>&1 | grep -v 'level=' | tee "$work/stream.log" || status=1
fi
python3 "$here/bench_scale_summary.py" "$work" || status=1
exit "$status"
