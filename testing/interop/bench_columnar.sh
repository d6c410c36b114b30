#!/usr/bin/env bash
# Side-by-side bench of icebeam's columnar data path against PyIceberg, Spark 3.5 +
# Iceberg 1.10.1 and iceberg-go's raw scan on the same table (bench_columnar.py):
# full and filtered reads, ReadBatches, and an append of 1M rows. A command to run
# and report, not a test: run.sh and `make test` never call it.
#
#   bash testing/interop/bench_columnar.sh [--rounds N] [--rows N] [--work DIR] ...
#
# Uses the environment install.sh makes (ICEBEAM_INTEROP_DEPS, default
# testing/interop/.deps): its venv and jars. Writes everything to --work (default
# a new /tmp/icebeam-bench-columnar.XXXXXX, kept), never to .deps/run.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEPS="${ICEBEAM_INTEROP_DEPS:-$HERE/.deps}"
GO="${GO:-go}"
export CGO_ENABLED=0 TZ=UTC
WORK=""
ARGS=()
while (($#)); do
  case "$1" in
    --work) WORK="$2"; shift 2 ;;
    --work=*) WORK="${1#--work=}"; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ -x "$DEPS/venv/bin/python" && -d "$DEPS/jars" ]] || bash "$HERE/install.sh"
if [[ -z "$WORK" ]]; then
  WORK="$(mktemp -d /tmp/icebeam-bench-columnar.XXXXXX)"
elif [[ -e "$WORK/catalog" ]]; then
  echo "bench: $WORK already holds a catalog; give a new --work" >&2
  exit 1
fi
mkdir -p "$WORK"
echo "bench: work dir $WORK"
(cd "$ROOT" && "$GO" build -o "$WORK/colbench" ./testing/interop/cmd/colbench)
exec "$DEPS/venv/bin/python" "$HERE/bench_columnar.py" --work "$WORK" --jars "$DEPS/jars" \
  --colbench "$WORK/colbench" "${ARGS[@]}"
