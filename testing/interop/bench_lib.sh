# Shared body of the side-by-side bench commands (bench_merge.sh, bench_columnar.sh):
#
#   run_bench NAME CMD SCRIPT "$@"
#
# installs the interop environment when missing (ICEBEAM_INTEROP_DEPS, default
# testing/interop/.deps: its venv and jars), makes the work dir (--work, default a new
# /tmp/icebeam-bench-NAME.XXXXXX, kept; never .deps/run), builds
# ./testing/interop/cmd/CMD into it and runs SCRIPT with --work, --jars, --CMD (the
# built binary) and the other arguments.
run_bench() {
  local name="$1" cmd="$2" script="$3"
  shift 3
  local here root deps work="" args=()
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(cd "$here/../.." && pwd)"
  deps="${ICEBEAM_INTEROP_DEPS:-$here/.deps}"
  export CGO_ENABLED=0 TZ=UTC
  while (($#)); do
    case "$1" in
      --work) work="$2"; shift 2 ;;
      --work=*) work="${1#--work=}"; shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [[ -x "$deps/venv/bin/python" && -d "$deps/jars" ]] || bash "$here/install.sh"
  if [[ -z "$work" ]]; then
    work="$(mktemp -d "/tmp/icebeam-bench-$name.XXXXXX")"
  elif [[ -e "$work/catalog" ]]; then
    echo "bench: $work already holds a catalog; give a new --work" >&2
    exit 1
  fi
  mkdir -p "$work"
  echo "bench: work dir $work"
  (cd "$root" && "${GO:-go}" build -o "$work/$cmd" "./testing/interop/cmd/$cmd")
  exec "$deps/venv/bin/python" "$here/$script" --work "$work" --jars "$deps/jars" \
    "--$cmd" "$work/$cmd" "${args[@]}"
}
