#!/usr/bin/env bash
# Installs, pinned and cached, what the interop suite needs into
# testing/interop/.deps/ (git-ignored): a Python venv with PySpark, PyIceberg,
# DuckDB and its iceberg extension; a second venv with apache-beam (the Python
# portable job service, the second runner of the runner matrix); Maven-fetched jars (Iceberg Spark runtime,
# sqlite-jdbc, the Java REST catalog fixture); Debian's PostgreSQL.
# Every step is skipped when its result is already there. Fails loudly.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DEPS="${ICEBEAM_INTEROP_DEPS:-$HERE/.deps}"
mkdir -p "$DEPS"

PYSPARK_VERSION=3.5.7
PYICEBERG_VERSION=0.12.0
DUCKDB_VERSION=1.5.5
ICEBERG_VERSION=1.10.1
BEAM_VERSION=2.78.0
# The further Spark legs (run.sh, ICEBEAM_INTEROP_SPARK_LEGS): Iceberg's newest
# runtime on the first leg's Spark 3.5, and on Spark 4.1 (PySpark from PyPI).
ICEBERG_NEW_VERSION=1.12.0
PYSPARK4_VERSION=4.1.4
SQLITE_JDBC_VERSION=3.50.3.0
MVN_DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

stamp() { echo "$1" >"$DEPS/$2.stamp"; }
has_stamp() { [[ -f "$DEPS/$2.stamp" && "$(cat "$DEPS/$2.stamp")" == "$1" ]]; }
t0() { date +%s; }
took() { echo "interop: install $1 took $(( $(date +%s) - $2 ))s"; }

# --- System packages (Debian): JDK, Maven, PostgreSQL, python venv, curl ------
need=()
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v curl >/dev/null || need+=(curl)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
s=$(t0)
if ((${#need[@]})); then
  echo "interop: apt-get install ${need[*]}"
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
took system-packages "$s"
[[ "${1:-}" == "--system" ]] && exit 0

# --- Python venv --------------------------------------------------------------
PYKEY="pyspark==$PYSPARK_VERSION pyiceberg[sql-sqlite,pyarrow]==$PYICEBERG_VERSION duckdb==$DUCKDB_VERSION duckdb-extension-iceberg==$DUCKDB_VERSION duckdb-extension-avro==$DUCKDB_VERSION pytz==2025.2"
s=$(t0)
if ! has_stamp "$PYKEY" venv || [[ ! -x "$DEPS/venv/bin/python" ]]; then
  rm -rf "$DEPS/venv"
  "${PYTHON:-python3}" -m venv "$DEPS/venv"
  # pip's own cache (~/.cache/pip) makes a re-creation cheap.
  "$DEPS/venv/bin/pip" install -q --disable-pip-version-check $PYKEY
  stamp "$PYKEY" venv
fi
took venv "$s"

# --- Beam Python's portable job service (the second runner) -------------------
# A venv of its own: apache-beam pins pyarrow, protobuf and grpcio ranges that
# need not agree with PySpark's and PyIceberg's. testing/runners starts
# `python -m apache_beam.runners.portability.local_job_service_main` from it.
BEAMKEY="apache-beam==$BEAM_VERSION"
s=$(t0)
if ! has_stamp "$BEAMKEY" beamvenv || [[ ! -x "$DEPS/beamvenv/bin/python" ]]; then
  rm -rf "$DEPS/beamvenv"
  "${PYTHON:-python3}" -m venv "$DEPS/beamvenv"
  "$DEPS/beamvenv/bin/pip" install -q --disable-pip-version-check $BEAMKEY
  "$DEPS/beamvenv/bin/python" -c 'import apache_beam.runners.portability.local_job_service_main'
  stamp "$BEAMKEY" beamvenv
fi
took beamvenv "$s"

# --- Jars (Maven Central through mvn; ~/.m2 is the cache) ----------------------
JARS="$DEPS/jars"
mkdir -p "$JARS"
ARTIFACTS=(
  "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:$ICEBERG_VERSION:jar"
  "org.xerial:sqlite-jdbc:$SQLITE_JDBC_VERSION:jar"
  "org.apache.iceberg:iceberg-open-api:$ICEBERG_VERSION:jar:test-fixtures"
)
s=$(t0)
for a in "${ARTIFACTS[@]}"; do
  IFS=: read -r g art v _ cls <<<"$a"
  f="$JARS/$art-$v${cls:+-$cls}.jar"
  [[ -s "$f" ]] && continue
  mvn -q -B "$MVN_DEP_PLUGIN:copy" -Dartifact="$a" -DoutputDirectory="$JARS" -Dmdep.overWriteIfNewer=true
  [[ -s "$f" ]] || { echo "interop: $a did not produce $f" >&2; exit 1; }
done
# The REST catalog fixture's classpath: iceberg-open-api's test-fixtures jar
# declares no dependencies, rest/pom.xml lists them.
REST_JARS="$DEPS/rest-jars"
if [[ ! -f "$REST_JARS/.complete" || "$HERE/rest/pom.xml" -nt "$REST_JARS/.complete" ]]; then
  rm -rf "$REST_JARS"
  mvn -q -B -f "$HERE/rest/pom.xml" "$MVN_DEP_PLUGIN:copy-dependencies" -DoutputDirectory="$REST_JARS" -DincludeScope=runtime
  ls "$REST_JARS"/iceberg-open-api-*-test-fixtures.jar >/dev/null
  touch "$REST_JARS/.complete"
fi
took jars "$s"

# --- The further Spark legs ----------------------------------------------------
# PySpark 4.1 in a venv of its own (only Spark runs there: the first leg's venv has
# PyIceberg and DuckDB), and the Iceberg runtime jars in jars-<version>. The legs,
# as run.sh passes them to the tests, go to $DEPS/spark-legs.
SPARK4KEY="pyspark==$PYSPARK4_VERSION pytz==2025.2"
s=$(t0)
if ! has_stamp "$SPARK4KEY" venv-spark41 || [[ ! -x "$DEPS/venv-spark41/bin/python" ]]; then
  rm -rf "$DEPS/venv-spark41"
  "${PYTHON:-python3}" -m venv "$DEPS/venv-spark41"
  "$DEPS/venv-spark41/bin/pip" install -q --disable-pip-version-check $SPARK4KEY
  stamp "$SPARK4KEY" venv-spark41
fi
NEWJARS="$DEPS/jars-$ICEBERG_NEW_VERSION"
mkdir -p "$NEWJARS"
for art in iceberg-spark-runtime-3.5_2.12 iceberg-spark-runtime-4.1_2.13; do
  f="$NEWJARS/$art-$ICEBERG_NEW_VERSION.jar"
  [[ -s "$f" ]] && continue
  mvn -q -B "$MVN_DEP_PLUGIN:copy" -Dartifact="org.apache.iceberg:$art:$ICEBERG_NEW_VERSION:jar" -DoutputDirectory="$NEWJARS"
  [[ -s "$f" ]] || { echo "interop: $art did not produce $f" >&2; exit 1; }
done
NEWV="${ICEBERG_NEW_VERSION%.*}"  # 1.12
echo "spark-3.5-iceberg-$NEWV=$DEPS/venv/bin/python=$NEWJARS/iceberg-spark-runtime-3.5_2.12-$ICEBERG_NEW_VERSION.jar;spark-4.1-iceberg-$NEWV=$DEPS/venv-spark41/bin/python=$NEWJARS/iceberg-spark-runtime-4.1_2.13-$ICEBERG_NEW_VERSION.jar" >"$DEPS/spark-legs.tmp"
mv "$DEPS/spark-legs.tmp" "$DEPS/spark-legs"
took spark-legs "$s"
