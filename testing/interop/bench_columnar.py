"""Side-by-side bench of icebeam's columnar data path, in the interop environment.

Not a test and not part of run.sh: bench_columnar.sh builds cmd/colbench and runs
this script; see README.md ("Columnar bench").

1. Spark creates bench.t, a format-version 3 table of --rows rows in --files data
   files (id, qty, amount, name, state, flag), then deletes every row whose
   id % 1000 == 7 with merge-on-read, so the table carries deletion vectors.
2. Each round, in alternating order: icebeam (one colbench process: iceberg-go's raw
   Scan.ToArrowRecords, Read with Row output, ReadBatches, a filtered and projected
   Read, and an append of --rows generated rows into a new table), PyIceberg
   (scan().to_arrow(), full and filtered), and Spark (INSERT INTO a new table SELECT
   the same generated rows; the JVM stays up and is warmed by --warmups inserts).
   Every read must return the same row count in every engine, else exit 1.
3. Prints the medians and the ratios the issue asks for: icebeam time / peer time
   for the reads and the append, and ReadBatches' and Read's throughput as a
   fraction of the raw scan's.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engines  # noqa: E402

CATALOG = engines.CATALOG
NS = "bench"
STATES = ["CA", "NY", "TX", "WA", "OR", "NV", "AZ", "CO", "UT", "FL", "GA", "IL", "MA", "NJ", "PA", "OH"]
COLUMNS = "id BIGINT NOT NULL, qty BIGINT NOT NULL, amount DOUBLE NOT NULL, name STRING NOT NULL, state STRING NOT NULL, flag BOOLEAN NOT NULL"
FILTER = "id >= 100000 AND id < 152000"
KEEP = "id,amount"


def log(msg):
    print("bench: " + msg, flush=True)


def gen_select(rows, files):
    """The generated rows as Spark SQL: the same values colbench's genFn emits."""
    states = ", ".join("'%s'" % s for s in STATES)
    return f"""SELECT id, id % 1000, CAST(id % 100000 AS DOUBLE) / 100, concat('name-', CAST(id AS STRING)),
        element_at(array({states}), CAST(id % 16 AS INT) + 1), id % 2 = 0
        FROM range(0, {rows}, 1, {files})"""


def create(spark, ident):
    spark.sql(f"""CREATE TABLE {CATALOG}.{ident} ({COLUMNS}) USING iceberg
        TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')""")


def spark_append(spark, ident, rows, files):
    create(spark, ident)
    t0 = time.perf_counter()
    spark.sql(f"INSERT INTO {CATALOG}.{ident} {gen_select(rows, files)}")
    return time.perf_counter() - t0


def colbench(a, append_ident, logf):
    cmd = [a.colbench, "--catalog_dir", os.path.join(a.work, "catalog"), "--table", f"{NS}.t",
           "--filter", FILTER, "--keep", KEEP, "--append_table", append_ident, "--append_rows", str(a.rows)]
    with open(logf, "w") as err:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    if p.returncode != 0:
        raise SystemExit("bench: colbench failed (exit %d), see %s" % (p.returncode, logf))
    return json.loads(p.stdout.strip().splitlines()[-1])


def pyiceberg_reads(cat):
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    tbl = cat.load_table(f"{NS}.t")
    t0 = time.perf_counter()
    full = tbl.scan().to_arrow().num_rows
    t1 = time.perf_counter()
    flt = tbl.scan(row_filter=And(GreaterThanOrEqual("id", 100000), LessThan("id", 152000)),
                   selected_fields=tuple(KEEP.split(","))).to_arrow().num_rows
    t2 = time.perf_counter()
    return dict(full=dict(s=t1 - t0, rows=full), filtered=dict(s=t2 - t1, rows=flt))


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="folder for the catalog and logs (not .deps/run)")
    ap.add_argument("--jars", required=True)
    ap.add_argument("--colbench", required=True, help="the built cmd/colbench binary")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=4, help="data files of the read table and of Spark's append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmups", type=int, default=2, help="Spark warm-up INSERTs and PyIceberg warm-up reads")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.work, "catalog", "warehouse"), exist_ok=True)
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    db, wh = engines.paths(a.work)
    with sqlite3.connect(db) as c:  # WAL, as icebergtest opens it, before any client
        c.execute("PRAGMA journal_mode=WAL")
    t_start = time.time()

    spark = engines.spark_session(a.work, a.jars)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    t0 = time.time()
    create(spark, f"{NS}.t")
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.t {gen_select(a.rows, a.files)}")
    spark.sql(f"DELETE FROM {CATALOG}.{NS}.t WHERE id % 1000 = 7")
    want_full = a.rows - len(range(7, a.rows, 1000))
    want_filtered = sum(1 for i in range(100000, min(152000, a.rows)) if i % 1000 != 7)
    log("created %s.t: %d rows in %d files, %d live after a DV delete (%.1fs)"
        % (NS, a.rows, a.files, want_full, time.time() - t0))

    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog(CATALOG, uri="sqlite:///" + db, warehouse="file://" + wh)
    for w in range(a.warmups):
        log("warm-up %d: Spark INSERT %.2fs, PyIceberg full read %.2fs"
            % (w + 1, spark_append(spark, f"{NS}.warm_{w}", a.rows, a.files), pyiceberg_reads(cat)["full"]["s"]))

    rounds = []
    for rnd in range(1, a.rounds + 1):
        r = {}
        order = ("icebeam", "pyiceberg", "spark") if rnd % 2 else ("spark", "pyiceberg", "icebeam")
        for engine in order:
            if engine == "icebeam":
                r["icebeam"] = colbench(a, f"{NS}.ib_append_{rnd}", os.path.join(a.work, "logs", "round-%02d.log" % rnd))
            elif engine == "pyiceberg":
                r["pyiceberg"] = pyiceberg_reads(cat)
            else:
                r["spark_append_s"] = spark_append(spark, f"{NS}.sp_append_{rnd}", a.rows, a.files)
        ib, py = r["icebeam"], r["pyiceberg"]
        counts = dict(raw=ib["raw"]["rows"], read=ib["read"]["rows"], batches=ib["batches"]["rows"],
                      pyiceberg=py["full"]["rows"])
        if set(counts.values()) != {want_full} or {ib["filtered"]["rows"], py["filtered"]["rows"]} != {want_filtered}:
            raise SystemExit("bench: round %d: row counts differ: full %s (want %d), filtered icebeam %d pyiceberg %d (want %d)"
                             % (rnd, counts, want_full, ib["filtered"]["rows"], py["filtered"]["rows"], want_filtered))
        log("round %d: read %.2fs pyiceberg %.2fs | filtered %.2fs pyiceberg %.2fs | batches %.2fs raw %.2fs | append %.2fs batches %.2fs spark %.2fs"
            % (rnd, ib["read"]["s"], py["full"]["s"], ib["filtered"]["s"], py["filtered"]["s"],
               ib["batches"]["s"], ib["raw"]["s"], ib["append"]["s"], ib["append_batches"]["s"], r["spark_append_s"]))
        rounds.append(r)

    m = lambda f: median([f(r) for r in rounds])
    rows = [
        ("full read (Row) / PyIceberg to_arrow", m(lambda r: r["icebeam"]["read"]["s"]), m(lambda r: r["pyiceberg"]["full"]["s"]), "<= 1.0"),
        ("filtered read / PyIceberg", m(lambda r: r["icebeam"]["filtered"]["s"]), m(lambda r: r["pyiceberg"]["filtered"]["s"]), "<= 1.0"),
        ("append %d rows / warm Spark INSERT" % a.rows, m(lambda r: r["icebeam"]["append"]["s"]), m(lambda r: r["spark_append_s"]), "<= 1.0"),
        ("WriteBatches append / warm Spark INSERT", m(lambda r: r["icebeam"]["append_batches"]["s"]), m(lambda r: r["spark_append_s"]), "(no target)"),
        ("ReadBatches / raw ToArrowRecords", m(lambda r: r["icebeam"]["batches"]["s"]), m(lambda r: r["icebeam"]["raw"]["s"]), "throughput >= 0.8"),
        ("Read (Row) / raw ToArrowRecords", m(lambda r: r["icebeam"]["read"]["s"]), m(lambda r: r["icebeam"]["raw"]["s"]), "throughput >= 0.5"),
    ]
    print("\nmedians over %d rounds (%d rows, %d files)" % (a.rounds, a.rows, a.files))
    print("%-38s %9s %9s %11s %12s  %s" % ("work", "icebeam", "peer", "time ratio", "throughput", "target"))
    for name, ib, peer, target in rows:
        print("%-38s %8.2fs %8.2fs %11.2f %12.2f  %s" % (name, ib, peer, ib / peer, peer / ib, target))
    with open(os.path.join(a.work, "bench_columnar.json"), "w") as f:
        json.dump(dict(args=vars(a), rounds=rounds, seconds=round(time.time() - t_start, 1)), f, indent=2)
    log("results in %s (total %.0fs)" % (os.path.join(a.work, "bench_columnar.json"), time.time() - t_start))
    spark.stop()


if __name__ == "__main__":
    main()
