#!/usr/bin/env bash
# icebeam's interop suite: installs the engines (install.sh), starts
# PostgreSQL and Iceberg's Java REST catalog fixture on 127.0.0.1, runs the
# Go tests behind the "interop" build tag (which drive Spark, PyIceberg and
# DuckDB through engines.py), the catalogs package's PostgreSQL test, the
# runner matrix (the examples and a core set of pipeline tests on prism and on
# Beam Python's portable job service), and prints the engine x scenario report. Exits non-zero on any failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEPS="${ICEBEAM_INTEROP_DEPS:-$HERE/.deps}"
GO="${GO:-go}"
export CGO_ENABLED=0 TZ=UTC
T0=$(date +%s)
step() { echo "interop: === $* ($(( $(date +%s) - T0 ))s)"; }

step install
bash "$HERE/install.sh"

WORK="${ICEBEAM_INTEROP_RUN:-$DEPS/run}"  # a run folder of its own lets two checkouts share one DEPS
rm -rf "$WORK"
mkdir -p "$WORK"
PIDS=()
PGDIR=""
PGBIN=""
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [[ -n "$PGDIR" && -n "$PGBIN" ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null 2>&1
    rm -rf "$PGDIR"
  fi
}
trap cleanup EXIT

free_port() { "$DEPS/venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- PostgreSQL, as user postgres, in a temp dir ------------------------------
step postgresql
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
PGDIR="$(mktemp -d /tmp/icebeam-pg.XXXXXX)"
chown postgres "$PGDIR"
PGPORT=$(free_port)
echo icebeam >"$PGDIR/pw" && chown postgres "$PGDIR/pw"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDIR/data" -U icebeam --pwfile="$PGDIR/pw" -A scram-sha-256 >"$PGDIR/initdb.log" 2>&1 \
  || { cat "$PGDIR/initdb.log"; exit 1; }
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 \
  -o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $PGDIR" start >/dev/null \
  || { cat "$PGDIR/server.log"; exit 1; }
PGPASSWORD=icebeam "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U icebeam -d postgres -qc "CREATE DATABASE icebeam" 
export ICEBEAM_PG_DSN="postgres://icebeam:icebeam@127.0.0.1:$PGPORT/icebeam?sslmode=disable"

# --- Iceberg's Java REST catalog fixture ---------------------------------------
step rest-catalog
RESTPORT=$(free_port)
mkdir -p "$WORK/rest/warehouse"
CATALOG_WAREHOUSE="file://$WORK/rest/warehouse" CATALOG_URI="jdbc:sqlite:$WORK/rest/catalog.db" \
  CATALOG_REST_PORT=$RESTPORT java -cp "$DEPS/rest-jars/*" org.apache.iceberg.rest.RESTCatalogServer \
  >"$WORK/rest/server.log" 2>&1 &
PIDS+=($!)
for i in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$RESTPORT/v1/config" >/dev/null && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$WORK/rest/server.log"; echo "interop: REST catalog died" >&2; exit 1; }
  sleep 1
done
curl -sf "http://127.0.0.1:$RESTPORT/v1/config" >/dev/null || { cat "$WORK/rest/server.log"; exit 1; }
export ICEBEAM_INTEROP_REST_URI="http://127.0.0.1:$RESTPORT"

# --- tests ----------------------------------------------------------------------
export ICEBEAM_INTEROP_WORK="$WORK" ICEBEAM_INTEROP_PYTHON="$DEPS/venv/bin/python" ICEBEAM_INTEROP_JARS="$DEPS/jars"
# The further Spark legs (Iceberg 1.12 on Spark 3.5 and on Spark 4.1), from install.sh.
ICEBEAM_INTEROP_SPARK_LEGS="$(cat "$DEPS/spark-legs")"
export ICEBEAM_INTEROP_SPARK_LEGS
rc=0
step "go test -tags interop ./testing/interop/..."
(cd "$ROOT" && "$GO" test -tags interop -count=1 -timeout 40m -v ./testing/interop/...) >"$WORK/go-test.log" 2>&1 || rc=1
# The full log (every check, Spark's and prism's logs) stays in $WORK/go-test.log.
grep -vE '^(=== RUN|=== PAUSE|=== CONT)|^interop: ok |level=INFO|WARN|^\[Stage|^\s*$' "$WORK/go-test.log" || true
step "go test ./iceberg/internal/catalogs/ -run Postgres"
(cd "$ROOT" && "$GO" test -count=1 -v -run Postgres ./iceberg/internal/catalogs/) >"$WORK/pg-test.log" 2>&1 || rc=1
grep -E '^(---|ok|FAIL|PASS|\s+\S+_test.go)' "$WORK/pg-test.log" || true
grep -q -- '--- SKIP' "$WORK/pg-test.log" && { echo "interop: the catalogs Postgres test skipped" >&2; rc=1; }

# --- runner matrix (matrix.sh): the examples and a core set of pipeline tests on
# prism and on Beam Python's portable job service.
step "runner matrix"
GO="$GO" ICEBEAM_INTEROP_DEPS="$DEPS" bash "$HERE/matrix.sh" "$WORK" || rc=1

step report
"$DEPS/venv/bin/python" "$HERE/report.py" "$WORK" || rc=1
# The README's compatibility table (compat.md) must be what this run's results make.
"$DEPS/venv/bin/python" "$HERE/compat.py" "$WORK" --check >"$WORK/compat.log" 2>&1 || { cat "$WORK/compat.log"; rc=1; }
step "done (exit $rc)"
exit $rc
