"""The Python side of icebeam's interop suite, in one process so Spark's JVM
starts once:

1. Spark (Iceberg's Java library through PySpark) writes its scenarios into
   the shared SQLite catalog "local" and records what it reads back in
   expected/spark.json (the answers icebeam's Read must give);
2. Spark SQL, PyIceberg and DuckDB read every scenario of every other
   writer (expected/*.json) and, as a control, Spark's own;
3. results go to results/python.json; the exit status is 1 on any failure.

A further Spark leg (another Spark or Iceberg version) runs as its own process,
at the same time: engines.py --engines spark --spark-name NAME --spark-runtime JAR
with that Spark's Python. It writes its tables to namespace NAME's (made
identifier-safe) and expected/NAME.json, records its results as engine NAME in
results/python-NAME.json, and reads the tables of the writers whose expected files
were there when it started (the Go writers') and its own.

Usage: engines.py --work DIR --jars DIR [--engines spark,pyiceberg,duckdb]
                  [--spark-name NAME --spark-runtime JAR]

With --dv-merge-table TABLE --dv-merge-delete PREDICATE it only runs that
merge-on-read DELETE on TABLE with the leg's Spark (the middle step of the
"icebeam_dvmerge" scenarios, write_icebeam_dvmerge_test.go) and exits.
"""
import argparse
import fcntl
import glob
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402

SPARK_ROWS = 100_000
CATALOG = "local"
QUERIES = [  # the same as StandardQueries in rows.go
    dict(name="qty>=50 and category='c3'", filter="qty >= 50 AND category = 'c3'", keep=["id", "qty", "amount"]),
    dict(name="score is null or id<100", filter="score IS NULL OR id < 100", keep=["id", "score", "flag"]),
]
LOOKUPS = [0, 3, 7, 13, 150, 507, 999, 12345, 39999, 59999, 99999, 100000]
COLUMNS = [("id", "long"), ("category", "string"), ("qty", "int"), ("amount", "decimal(10,2)"),
           ("score", "double"), ("day", "date"), ("ts", "timestamptz"), ("flag", "boolean")]


def log(msg):
    print("interop: " + msg, flush=True)


def paths(work):
    cat = os.path.join(work, "catalog")
    return os.path.join(cat, "catalog.db"), os.path.join(cat, "warehouse")


# ---------------------------------------------------------------- Spark ----

def spark_session(work, jars, runtime=None):
    from pyspark.sql import SparkSession
    db, wh = paths(work)
    jar_list = sorted(([runtime] if runtime else glob.glob(os.path.join(jars, "iceberg-spark-runtime-*.jar"))) +
                      glob.glob(os.path.join(jars, "sqlite-jdbc-*.jar")))
    if len(jar_list) != 2:
        raise SystemExit("interop: Spark jars missing in %s: %s" % (jars, jar_list))
    c = f"spark.sql.catalog.{CATALOG}"
    return (SparkSession.builder.master("local[2]").appName("icebeam-interop")
            .config("spark.jars", ",".join(jar_list))
            .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config(c, "org.apache.iceberg.spark.SparkCatalog")
            .config(c + ".type", "jdbc")
            # Spark legs run at once on one catalog file: wait for its lock
            # (their writes take turns, see main).
            .config(c + ".uri", "jdbc:sqlite:" + db + "?busy_timeout=60000")
            .config(c + ".jdbc.schema-version", "V1")
            .config(c + ".warehouse", "file://" + wh)
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", os.environ.get("ICEBEAM_SPARK_DRIVER_MEMORY", "3g"))
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate())


def spark_delete_formats(spark, ident):
    rows = spark.sql(f"SELECT DISTINCT file_format, content FROM {CATALOG}.{ident}.delete_files").collect()
    kinds = {1: "position", 2: "equality"}
    return sorted("%s/%s" % (r.file_format, kinds.get(r.content, r.content)) for r in rows)


def spark_read(spark, ident):
    # Timestamps leave Spark as microseconds: PySpark's own conversion to Python
    # datetimes (TimestampType.fromInternal) cannot hold years before 1 or after 9999
    # once shifted, which is a limit of the Python client, not of Spark's Iceberg read.
    from pyspark.sql.types import TimestampNTZType, TimestampType
    kinds = {f.name: f.dataType for f in spark.table("%s.%s" % (CATALOG, ident)).schema.fields}

    def column(k):
        t = kinds.get(k)
        if isinstance(t, TimestampType):
            return "unix_micros(%s) AS %s" % (k, k)
        if isinstance(t, TimestampNTZType):  # the session time zone is UTC
            return "unix_micros(CAST(%s AS TIMESTAMP)) AS %s" % (k, k)
        return k

    def read(flt, keep):
        q = "SELECT %s FROM %s.%s" % (", ".join(column(k) for k in keep), CATALOG, ident)
        if flt:
            q += " WHERE " + flt
        return [tuple(r) for r in spark.sql(q).collect()]
    return read


def spark_version(spark, runtime):
    """"Spark X + Iceberg Y" of the session and its Iceberg runtime jar."""
    base = os.path.basename(runtime or "")
    ice = base.rsplit("-", 1)[-1][:-len(".jar")] if base.endswith(".jar") else "?"
    return "Spark %s + Iceberg %s" % (spark.version, ice)


def spark_write(spark, work, res, writer="spark", label=""):
    """Writes Spark's scenarios to namespace writer (made identifier-safe) and
    expected/<writer>.json, under that writer name."""
    ns = "".join(ch if ch.isalnum() else "_" for ch in writer)
    exp = dict(writer=writer, scenarios=[])
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    gen = spark.range(SPARK_ROWS).selectExpr(  # the same functions of id as GenRow in rows.go
        "id",
        "CASE WHEN id % 13 = 0 THEN NULL ELSE concat('c', CAST(id % 7 AS STRING)) END AS category",
        "CAST(id % 100 AS INT) AS qty",
        "CAST(CAST(id % 10000 AS DECIMAL(12,0)) / 100 AS DECIMAL(10,2)) AS amount",
        "CASE WHEN id % 17 = 0 THEN NULL ELSE CAST(id % 1000 AS DOUBLE) / 4 END AS score",
        "date_add(DATE'2024-01-01', CAST(id % 365 AS INT)) AS day",
        "timestamp_micros(1700000000000000 + id * 1000003) AS ts",
        "id % 3 = 0 AS flag").repartition(4)
    for version, name, want in ((3, "v3_mor", "PUFFIN/position"), (2, "v2_mor", "PARQUET/position")):
        ident = ns + "." + name
        t0 = time.time()
        spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.{ident}")
        spark.sql(f"""CREATE TABLE {CATALOG}.{ident} (
              id BIGINT NOT NULL, category STRING, qty INT, amount DECIMAL(10,2),
              score DOUBLE, day DATE, ts TIMESTAMP, flag BOOLEAN)
            USING iceberg TBLPROPERTIES ('format-version'='{version}',
              'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',
              'write.merge.mode'='merge-on-read')""")
        gen.writeTo(f"{CATALOG}.{ident}").append()
        spark.sql(f"DELETE FROM {CATALOG}.{ident} WHERE id % 10 = 3")
        spark.sql(f"UPDATE {CATALOG}.{ident} SET qty = qty + 1000, category = 'upd' WHERE id % 25 = 7")
        # A second delete on data files that already have deletes (Spark
        # merges the old DV into the new one on v3).
        spark.sql(f"DELETE FROM {CATALOG}.{ident} WHERE id BETWEEN 500 AND 600 OR id % 1000 = 999")
        formats = spark_delete_formats(spark, ident)
        res.add(exp["writer"], exp["writer"], name, "own delete files", want, ",".join(formats))
        read = spark_read(spark, ident)
        cols = [c for c, _ in COLUMNS]
        types = [t for _, t in COLUMNS]
        n, s = checks.checksum(checks.row_text(r, types) for r in read(None, cols))
        sc = dict(name=name, table=ident, format_version=version,
                  columns=[dict(name=c, type=t) for c, t in COLUMNS],
                  count=n, checksum=s, queries=[], lookups=[], delete_formats=formats,
                  notes=label + ", merge-on-read DELETE/UPDATE/DELETE")
        tmap = dict(COLUMNS)
        for q in QUERIES:
            qn, qs = checks.checksum(checks.row_text(r, [tmap[k] for k in q["keep"]]) for r in read(q["filter"], q["keep"]))
            sc["queries"].append(dict(q, count=qn, checksum=qs))
        for i in LOOKUPS:
            rows = read("id = %d" % i, cols)
            if len(rows) > 1:
                raise SystemExit("interop: Spark returned id %d twice in %s" % (i, ident))
            sc["lookups"].append(dict(id=i, row=checks.row_text(rows[0], types) if rows else None))
        exp["scenarios"].append(sc)
        log("spark wrote %s (v%d): %d rows, delete files %s, in %.1fs" % (ident, version, n, formats, time.time() - t0))
    if writer == "spark":
        log("equality deletes: Spark SQL cannot write them and PyIceberg %s has no equality-delete writer; "
            "the Go writers cover them" % pyiceberg_version())
    import json
    os.makedirs(os.path.join(work, "expected"), exist_ok=True)
    with open(os.path.join(work, "expected", writer + ".json"), "w") as f:
        json.dump(exp, f, indent=2)


def spark_dv_merge(spark, work, ident, predicate):
    """Deletes the rows matching predicate from ident (written by icebeam, with DVs)
    in merge-on-read mode: on v3 Spark's DV of a data file must merge icebeam's."""
    t0 = time.time()
    with open(os.path.join(work, "catalog", "spark-write.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        spark.sql(f"ALTER TABLE {CATALOG}.{ident} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
        spark.sql(f"DELETE FROM {CATALOG}.{ident} WHERE {predicate}")
    snap = spark.sql(f"SELECT operation, summary FROM {CATALOG}.{ident}.snapshots "
                     "ORDER BY committed_at DESC LIMIT 1").collect()[0]
    log("dv merge: %s DELETE WHERE %s: %s %s, delete files %s, in %.1fs" % (
        ident, predicate, snap.operation, dict(snap.summary), spark_delete_formats(spark, ident), time.time() - t0))


# ------------------------------------------------------------ PyIceberg ----

def pyiceberg_version():
    try:
        import pyiceberg
        return pyiceberg.__version__
    except Exception:
        return "?"


def pyiceberg_reader(work):
    from pyiceberg.catalog.sql import SqlCatalog
    db, wh = paths(work)
    cat = SqlCatalog(CATALOG, uri="sqlite:///" + db, warehouse="file://" + wh)

    def reader(ident):
        tbl = cat.load_table(ident)

        def read(flt, keep):
            scan = tbl.scan(row_filter=flt or "true", selected_fields=tuple(keep))
            at = scan.to_arrow()
            cols = [pyiceberg_column(at.column(k)) for k in keep]
            return list(zip(*cols)) if cols else []
        return read
    return reader


def pyiceberg_column(col):
    """The Python values of Arrow column col; nanosecond timestamps as integers, which
    to_pylist would turn into pandas Timestamps (or drop the nanoseconds of)."""
    import pyarrow as pa
    if pa.types.is_timestamp(col.type) and col.type.unit == "ns":
        col = col.cast(pa.int64())
    return col.to_pylist()


# --------------------------------------------------------------- DuckDB ----

def duckdb_reader(work):
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg
    db, _ = paths(work)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for m in (duckdb_extension_avro, duckdb_extension_iceberg):
        found = glob.glob(os.path.join(os.path.dirname(m.__file__), "extensions", "*", "*.duckdb_extension"))
        if len(found) != 1:
            raise SystemExit("interop: DuckDB extension missing in %s" % m.__file__)
        con.execute("LOAD '%s'" % found[0])
    con.execute("SET TimeZone = 'UTC'")

    def reader(ident):
        ns, name = ident.rsplit(".", 1)
        with sqlite3.connect(db) as s:
            row = s.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                            "table_namespace = ? AND table_name = ?", (CATALOG, ns, name)).fetchone()
        if not row:
            raise LookupError("table %s not in the catalog" % ident)
        meta = row[0]

        scan = "iceberg_scan('%s')" % meta.replace("'", "''")
        # Nanosecond timestamps leave DuckDB as integers: its Python client turns
        # TIMESTAMP_NS into datetimes, which drop the nanoseconds.
        kinds = {r[0]: r[1] for r in con.execute("DESCRIBE SELECT * FROM " + scan).fetchall()}

        def column(k):
            return "epoch_ns(%s) AS %s" % (k, k) if kinds.get(k) == "TIMESTAMP_NS" else k

        def read(flt, keep):
            q = "SELECT %s FROM %s" % (", ".join(column(k) for k in keep), scan)
            if flt:
                q += " WHERE " + flt
            return con.execute(q).fetchall()
        return read
    return reader, duckdb.__version__


# ----------------------------------------------------------------- main ----

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--jars", required=True)
    ap.add_argument("--engines", default="spark,pyiceberg,duckdb")
    ap.add_argument("--no-spark-write", action="store_true")
    ap.add_argument("--spark-name", default="spark", help="the Spark leg's engine and writer name")
    ap.add_argument("--spark-runtime", help="the Iceberg Spark runtime jar (default: the one in --jars)")
    ap.add_argument("--dv-merge-table", help="only DELETE --dv-merge-delete's rows from this table")
    ap.add_argument("--dv-merge-delete", help="the predicate of --dv-merge-table's DELETE")
    a = ap.parse_args()
    if a.dv_merge_table:
        spark = spark_session(a.work, a.jars, a.spark_runtime)
        log("%s is %s" % (a.spark_name, spark_version(spark, a.spark_runtime or next(
            iter(glob.glob(os.path.join(a.jars, "iceberg-spark-runtime-*.jar"))), ""))))
        spark_dv_merge(spark, a.work, a.dv_merge_table, a.dv_merge_delete)
        return
    engines = a.engines.split(",")
    sname = a.spark_name
    out = "python.json" if sname == "spark" else "python-%s.json" % sname
    res = checks.Results(os.path.join(a.work, "results", out))
    # The writers to read: those whose answers are there now (the Go writers') and
    # this process's Spark; not another Spark leg's, which runs at the same time.
    exp_dir = os.path.join(a.work, "expected")
    readable = {f for f in os.listdir(exp_dir) if f.endswith(".json")} if os.path.isdir(exp_dir) else set()
    readable.add(sname + ".json")
    timings = {}
    try:
        if "spark" in engines:
            t0 = time.time()
            spark = spark_session(a.work, a.jars, a.spark_runtime)
            runtime = a.spark_runtime or next(iter(glob.glob(os.path.join(a.jars, "iceberg-spark-runtime-*.jar"))), "")
            label = spark_version(spark, runtime)
            log("%s is %s" % (sname, label))
            checks.write_engine(a.work, sname, label)
            timings["spark start"] = time.time() - t0
            if not a.no_spark_write:
                t0 = time.time()
                # One Spark leg writes to the catalog file at a time: SQLite in WAL mode
                # fails a write whose connection read before another process's write
                # (SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out). Reads overlap.
                os.makedirs(os.path.join(a.work, "catalog"), exist_ok=True)
                with open(os.path.join(a.work, "catalog", "spark-write.lock"), "w") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    timings["spark write lock wait"] = time.time() - t0
                    spark_write(spark, a.work, res, sname, label)
                timings["spark write"] = time.time() - t0
        expected = [e for e in checks.load_expected(a.work) if e["writer"] + ".json" in readable]
        readers = {}
        if "spark" in engines:
            readers[sname] = lambda ident: spark_read(spark, ident)
        if "pyiceberg" in engines:
            readers["pyiceberg"] = pyiceberg_reader(a.work)
            checks.write_engine(a.work, "pyiceberg", "PyIceberg " + pyiceberg_version())
        if "duckdb" in engines:
            readers["duckdb"], dv = duckdb_reader(a.work)
            checks.write_engine(a.work, "duckdb", "DuckDB " + dv)
        for engine, reader in readers.items():
            t0 = time.time()
            for exp in expected:
                is_spark = engine == sname and "spark" in engines
                if is_spark and exp["writer"] == sname:
                    continue  # Spark's own answers are the expectation
                for sc in exp["scenarios"]:
                    try:
                        read = reader(sc["table"])
                    except Exception as e:
                        res.add(engine, exp["writer"], sc["name"], "load table", "ok", "error",
                                error=f"{type(e).__name__}: {e}"[:400])
                        continue
                    checks.check_scenario(res, engine, exp["writer"], sc, read, lineage=is_spark)
                    if is_spark:
                        want = ",".join(sorted(sc.get("delete_formats") or []))
                        try:
                            got = ",".join(spark_delete_formats(spark, sc["table"]))
                            res.add(engine, exp["writer"], sc["name"], "delete files", want, got)
                        except Exception as e:
                            res.add(engine, exp["writer"], sc["name"], "delete files", want, "error",
                                    error=f"{type(e).__name__}: {e}"[:400])
            timings[engine + " checks"] = time.time() - t0
    finally:
        res.write()
    for k, v in timings.items():
        log("%s took %.1fs" % (k, v))
    known = checks.load_known()
    bad = [r for r in res.failed() if not checks.known_for(r, known)]
    log("%d python-side check(s) failed as known issues (see report)" % (len(res.failed()) - len(bad)))
    if bad:
        log("%d python-side check(s) failed" % len(bad))
        sys.exit(1)


if __name__ == "__main__":
    main()
