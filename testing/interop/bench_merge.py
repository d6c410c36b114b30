"""Side-by-side bench: icebeam's merge-on-read CDC write against Spark 3.5 +
Iceberg 1.10.1 MERGE INTO, on the same table, in the interop environment.

Not a test and not part of run.sh: bench_merge.sh builds cmd/morbatch and runs
this script; see README.md ("Merge bench").

1. Spark creates two identical format-version 3 tables (merge-on-read write
   properties, id the identifier field) of --rows rows in the SQLite catalog
   "local" under --work: bench.icebeam and bench.spark; and a throwaway
   bench.warmup of the same size.
2. Spark runs --warmups MERGE statements on bench.warmup, then icebeam one write
   (its files in the page cache); the Spark JVM stays up for the whole run.
3. For each batch size of --batch (a comma list, e.g. 10000,100000), --rounds
   rounds: each generates a seeded batch of that many changes (uniformly random
   existing ids: ~60% updates, ~20% deletes; ~20% inserts of new ids; no id
   twice) as JSON lines, then applies it with icebeam (morbatch, one process and
   one pipeline on prism per round, so a cold worker each time) and with Spark
   MERGE INTO, in alternating order, each after the machine is idle again
   (settle: the Spark JVM's work after a MERGE slowed the next icebeam run by up
   to 2x on 2 cores). Times: icebeam's pipeline run time as
   morbatch reports it and the process wall time; Spark's MERGE statement wall
   time. Also icebeam's peak RSS (morbatch's VmHWM) and, when its counters
   report it (icebeam.key_index_build_ms), the share of the pipeline time spent
   building the key index (the cold start).
4. Both tables must equal the model of the batches (Spark EXCEPT ALL both ways,
   and a second read with PyIceberg); a mismatch exits 1. With --check tables
   (the default above 5M rows, where a model in Python would take minutes and
   gigabytes) the icebeam table must equal Spark's instead: count, distinct ids,
   checksum and EXCEPT ALL both ways.

With --bundles N each batch is written as N part files (Spark reads their folder)
and morbatch's parse stage runs in N bundles (--source parts: one part per bundle;
--source textio: textio.Read of the parts, the runner's bundles); each round records
the bundles morbatch counted (parse_bundles), and the candidate data files of the
batch (live data files whose id bounds hold one of its keys, by PyIceberg before
the round) next to icebeam's key_files_read. With --workers N the icebeam side runs
on Beam Python's portable job service (started once, kept up like Spark's JVM) with
N worker processes, each round reporting each worker's peak RSS.
"""
import argparse
import bisect
import glob
import json
import os
import random
import shutil
import socket
import sqlite3
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engines  # noqa: E402

CATALOG = engines.CATALOG
NS = "bench"
STATES = ["CA", "NY", "TX", "WA", "OR", "NV", "AZ", "CO", "UT", "FL", "GA", "IL", "MA", "NJ", "PA", "OH"]
BATCH_SCHEMA = "op STRING, seq BIGINT, id BIGINT, name STRING, state STRING, amount DOUBLE"
MERGE = f"""MERGE INTO {CATALOG}.%s t USING batch s ON t.id = s.id
  WHEN MATCHED AND s.op = 'D' THEN DELETE
  WHEN MATCHED THEN UPDATE SET t.name = s.name, t.state = s.state, t.amount = s.amount
  WHEN NOT MATCHED AND s.op <> 'D' THEN INSERT (id, name, state, amount) VALUES (s.id, s.name, s.state, s.amount)"""


def log(msg):
    print("bench: " + msg, flush=True)


def base_row(i):
    """The initial row of id i; the same function as the SQL in create_table."""
    return ("name-%d" % i, STATES[i % len(STATES)], (i % 100000) / 100)


class Model:
    """The live rows: ids below next_id that are alive, with their values when a
    batch changed them (else base_row)."""

    def __init__(self, rows):
        self.alive = bytearray(b"\x01") * rows
        self.next_id = rows
        self.changed = {}

    def batch(self, rng, size, rnd):
        """A batch of size changes, each (op, seq, id, name, state, amount)."""
        limit, used, out = self.next_id, set(), []
        for i in range(size):
            r = rng.random()
            if r < 0.2:
                op, key = "I", self.next_id
                self.next_id += 1
            else:
                op = "U" if r < 0.8 else "D"
                while True:
                    key = rng.randrange(limit)
                    if self.alive[key] and key not in used:
                        break
            used.add(key)
            if op == "D":
                vals = (None, None, None)
            else:
                vals = ("n%d-%d" % (rnd, rng.randrange(10**9)), rng.choice(STATES), rng.randrange(10**7) / 100)
            out.append((op, rnd * 1_000_000 + i, key) + vals)
        return out

    def apply(self, changes):
        for op, _, key, name, state, amount in changes:
            if op == "D":
                self.alive[key] = 0
                self.changed.pop(key, None)
            else:
                if key >= len(self.alive):
                    self.alive.extend(b"\x00" * (key + 1 - len(self.alive) + 100_000))
                self.alive[key] = 1
                self.changed[key] = (name, state, amount)

    def arrow(self):
        import pyarrow as pa
        ids, names, states, amounts = [], [], [], []
        for i in range(self.next_id):
            if self.alive[i]:
                n, s, a = self.changed.get(i) or base_row(i)
                ids.append(i)
                names.append(n)
                states.append(s)
                amounts.append(a)
        return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string()),
                         "state": pa.array(states, pa.string()), "amount": pa.array(amounts, pa.float64())})


def write_batch(path, changes, parts=1):
    """Writes changes as JSON lines: to the file path, or with parts > 1 to that many
    part files of about equal size in the folder path. Returns morbatch's --input (the
    file, or a glob of the parts) and Spark's (the file or the folder)."""
    lines = [json.dumps(dict(op=op, seq=seq, id=key, name=name, state=state, amount=amount)) + "\n"
             for op, seq, key, name, state, amount in changes]
    if parts <= 1:
        with open(path, "w") as f:
            f.writelines(lines)
        return path, path
    os.makedirs(path, exist_ok=True)
    for i in range(parts):
        with open(os.path.join(path, "part-%05d.jsonl" % i), "w") as f:
            f.writelines(lines[len(lines) * i // parts:len(lines) * (i + 1) // parts])
    return os.path.join(path, "part-*.jsonl"), path


def candidate_files(a, ident, changes):
    """Returns the live data files of ident whose id bounds (lower and upper bound
    metrics) hold a key of changes: the files whose key column a batch write must
    read, which icebeam's key_files_read should equal. By PyIceberg, before the round."""
    from pyiceberg.catalog.sql import SqlCatalog
    db, wh = engines.paths(a.work)
    tbl = SqlCatalog(CATALOG, uri="sqlite:///" + db, warehouse="file://" + wh).load_table(ident)
    fid = tbl.schema().find_field("id").field_id
    keys = sorted(c[2] for c in changes)
    n = 0
    for task in tbl.scan().plan_files():
        lo, hi = task.file.lower_bounds.get(fid), task.file.upper_bounds.get(fid)
        if lo is None or hi is None:
            n += 1
            continue
        lo, hi = struct.unpack("<q", lo)[0], struct.unpack("<q", hi)[0]
        i = bisect.bisect_left(keys, lo)
        n += i < len(keys) and keys[i] <= hi
    return n


def start_job_service(a):
    """Starts Beam Python's portable job service (morbatch --job_service_port: the
    launcher of icebeam's runner matrix) on a free port and builds the Go SDK boot
    loader the worker pools start; returns the job service process."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a.boot = os.path.join(a.work, "boot")
    subprocess.run([os.environ.get("GO", "go"), "build", "-o", a.boot, "github.com/apache/beam/sdks/v2/go/container"],
                   cwd=root, env=dict(os.environ, CGO_ENABLED="0"), check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jdir = os.path.join(a.work, "jobservice")
    os.makedirs(jdir, exist_ok=True)
    logf = open(os.path.join(a.work, "logs", "jobservice.log"), "w")
    proc = subprocess.Popen([a.morbatch, "--job_service_port", str(port), "--beam_python", a.beam_python],
                            cwd=jdir, env=dict(os.environ, TMPDIR=jdir), stdout=logf, stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise SystemExit("bench: the job service did not start, see %s" % logf.name)
            time.sleep(0.2)
    a.endpoint = "127.0.0.1:%d" % port
    log("job service (Beam Python) on %s, %d worker processes per job" % (a.endpoint, a.workers))
    return proc


def create_table(spark, ident, rows, files):
    states = ", ".join("'%s'" % s for s in STATES)
    spark.sql(f"""CREATE TABLE {CATALOG}.{ident} (id BIGINT NOT NULL, name STRING, state STRING, amount DOUBLE)
        USING iceberg TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read',
          'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')""")
    spark.sql(f"ALTER TABLE {CATALOG}.{ident} SET IDENTIFIER FIELDS id")
    spark.sql(f"""INSERT INTO {CATALOG}.{ident}
        SELECT id, concat('name-', CAST(id AS STRING)), element_at(array({states}), CAST(id % {len(STATES)} AS INT) + 1),
               CAST(id % 100000 AS DOUBLE) / 100
        FROM range(0, {rows}, 1, {files})""")


def cpu_ticks():
    """Returns the machine's busy and total CPU ticks from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    return sum(vals) - idle, sum(vals)


def settle(max_s=15.0, window=0.25, busy_frac=0.1):
    """Waits until the machine is idle (at most busy_frac of its CPUs busy over a
    window), at most max_s seconds, and returns the seconds waited. On 2 cores the
    Spark JVM's work after a MERGE (GC, cleanup) otherwise lands on the next run."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_s:
        b0, t0_ticks = cpu_ticks()
        time.sleep(window)
        b1, t1_ticks = cpu_ticks()
        if t1_ticks > t0_ticks and (b1 - b0) / (t1_ticks - t0_ticks) <= busy_frac:
            break
    return time.perf_counter() - t0


def spark_merge(spark, ident, path):
    spark.read.schema(BATCH_SCHEMA).json(path).createOrReplaceTempView("batch")
    t0 = time.perf_counter()
    spark.sql(MERGE % ident)
    return time.perf_counter() - t0


def icebeam_merge(a, ident, path, sink_id, logf):
    cmd = [a.morbatch, "--catalog_dir", os.path.join(a.work, "catalog"), "--table", ident,
           "--input", path, "--sink_id", sink_id]
    if a.source:
        cmd += ["--source", a.source]
    if a.workers:
        cmd += ["--runner", "universal", "--endpoint", a.endpoint, "--workers", str(a.workers), "--boot", a.boot]
    if a.num_shards:
        cmd += ["--num_shards", str(a.num_shards)]
    if a.maintain:
        cmd += ["--maintain_every", str(a.maintain)]
    t0 = time.perf_counter()
    with open(logf, "w") as err:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    wall = time.perf_counter() - t0
    if a.workers:
        # The job service keeps each job's staged worker binary (about 250 MB).
        for d in glob.glob(os.path.join(a.work, "jobservice", "tmp*", "go-job-*")):
            shutil.rmtree(d, ignore_errors=True)
    if p.returncode != 0:
        raise SystemExit("bench: morbatch failed (exit %d), see %s" % (p.returncode, logf))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = wall
    return res


def files_of(spark, ident):
    q = lambda s: spark.sql(s).collect()[0][0]
    t = f"{CATALOG}.{ident}"
    return dict(data_files=q(f"SELECT count(*) FROM {t}.data_files"),
                delete_files=q(f"SELECT count(*) FROM {t}.delete_files"),
                delete_file_paths=q(f"SELECT count(DISTINCT file_path) FROM {t}.delete_files"),
                snapshots=q(f"SELECT count(*) FROM {t}.snapshots"))


def verify(spark, a, model):
    """Compares both tables with the model: Spark (count, distinct ids, checksum,
    EXCEPT ALL both ways) and PyIceberg (a sorted full compare). Returns (ok, report)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    t0 = time.time()
    want = model.arrow()
    mpath = os.path.join(a.work, "model.parquet")
    pq.write_table(want, mpath)
    spark.read.parquet(mpath).createOrReplaceTempView("model")
    ok, rep = True, {}
    checksum = "sum(CAST(xxhash64(id, name, state, amount) AS DECIMAL(38,0)))"
    for name, src in (("model", "model"), ("icebeam", f"{CATALOG}.{NS}.icebeam"), ("spark", f"{CATALOG}.{NS}.spark")):
        r = spark.sql(f"SELECT count(*), count(DISTINCT id), {checksum} FROM {src}").collect()[0]
        rep[name] = dict(count=r[0], distinct_ids=r[1], checksum=str(r[2]))
        if name != "model":
            for way, q in (("missing", f"SELECT * FROM model EXCEPT ALL SELECT * FROM {src}"),
                           ("extra", f"SELECT * FROM {src} EXCEPT ALL SELECT * FROM model")):
                n = spark.sql(f"SELECT count(*) FROM ({q})").collect()[0][0]
                rep[name][way] = n
                ok = ok and n == 0
            ok = ok and rep[name] == dict(rep["model"], missing=0, extra=0)
    # A second reader: PyIceberg, a full compare after sorting by id.
    from pyiceberg.catalog.sql import SqlCatalog
    db, wh = engines.paths(a.work)
    cat = SqlCatalog(CATALOG, uri="sqlite:///" + db, warehouse="file://" + wh)
    for name in ("icebeam", "spark"):
        got = cat.load_table(f"{NS}.{name}").scan().to_arrow()
        got = got.take(pc.sort_indices(got, [("id", "ascending")]))
        same = got.num_rows == want.num_rows and all(
            got.column(c).combine_chunks().equals(want.column(c).combine_chunks()) for c in want.column_names)
        rep[name]["pyiceberg_equal"] = same
        ok = ok and same
    rep["seconds"] = round(time.time() - t0, 1)
    return ok, rep


def verify_tables(spark):
    """Compares icebeam's table with Spark's (count, distinct ids, checksum, EXCEPT
    ALL both ways). Returns (ok, report)."""
    t0 = time.time()
    checksum = "sum(CAST(xxhash64(id, name, state, amount) AS DECIMAL(38,0)))"
    rep = {}
    for name in ("icebeam", "spark"):
        r = spark.sql(f"SELECT count(*), count(DISTINCT id), {checksum} FROM {CATALOG}.{NS}.{name}").collect()[0]
        rep[name] = dict(count=r[0], distinct_ids=r[1], checksum=str(r[2]))
    a, b = f"{CATALOG}.{NS}.icebeam", f"{CATALOG}.{NS}.spark"
    for way, q in (("missing", f"SELECT * FROM {b} EXCEPT ALL SELECT * FROM {a}"),
                   ("extra", f"SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b}")):
        rep["icebeam"][way] = spark.sql(f"SELECT count(*) FROM ({q})").collect()[0][0]
    ok = rep["icebeam"] == dict(rep["spark"], missing=0, extra=0)
    rep["seconds"] = round(time.time() - t0, 1)
    return ok, rep


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def run_rounds(spark, a, model, batch, done, run_id):
    """Runs a.rounds rounds of batch changes each (numbered after the done rounds of
    earlier batch sizes), icebeam and Spark in alternating order; returns them."""
    rounds = []
    hdr = "%5s %17s %9s %11s %11s %9s %11s %7s %7s %11s" % (
        "round", "changes U/D/I", "icebeam", "(process)", "spark", "ib/spark", "RSS MB", "index", "bundles",
        "kfiles/cand")
    print("\nbatches of %d changes\n%s\n%s" % (batch, hdr, "-" * len(hdr)), flush=True)
    for rnd in range(done + 1, done + a.rounds + 1):
        changes = model.batch(random.Random("%d:round:%d" % (a.seed, rnd)), batch, rnd)
        ib_path, sp_path = write_batch(os.path.join(a.work, "batches", "round-%03d" % rnd + (
            ".jsonl" if a.bundles <= 1 else "")), changes, a.bundles)
        counts = {k: sum(1 for c in changes if c[0] == k) for k in "UDI"}
        cand = candidate_files(a, f"{NS}.icebeam", changes)
        ib = sp = None
        for engine in (("icebeam", "spark") if rnd % 2 else ("spark", "icebeam")):
            settle()
            if engine == "icebeam":
                ib = icebeam_merge(a, f"{NS}.icebeam", ib_path, "bench-%s-r%d" % (run_id, rnd),
                                   os.path.join(a.work, "logs", "round-%03d.log" % rnd))
            else:
                sp = spark_merge(spark, f"{NS}.spark", sp_path)
        model.apply(changes)
        index_s = ib["counters"].get("icebeam.key_index_build_ms")
        index_s = index_s / 1000 if index_s is not None else None
        wrss = ib.get("worker_peak_rss_mb") or []
        rounds.append(dict(round=rnd, batch=batch, changes=counts, icebeam_pipeline_s=ib["pipeline_s"],
                           icebeam_build_s=ib["build_s"], icebeam_process_s=ib["wall_s"], spark_merge_s=sp,
                           icebeam_peak_rss_mb=ib.get("peak_rss_mb"), icebeam_worker_peak_rss_mb=wrss,
                           icebeam_index_build_s=index_s, parse_bundles=ib.get("parse_bundles"),
                           source=ib.get("source"), candidate_files=cand, icebeam_counters=ib["counters"]))
        rss = "/".join("%.0f" % m for m in wrss) if a.workers else "%.0f" % (ib.get("peak_rss_mb") or 0)
        print("%5d %17s %8.2fs %10.2fs %10.2fs %9.2f %11s %7s %7s %11s%s" % (
            rnd, "%d/%d/%d" % (counts["U"], counts["D"], counts["I"]), ib["pipeline_s"], ib["wall_s"], sp,
            ib["pipeline_s"] / sp, rss, "%.0f%%" % (100 * index_s / ib["pipeline_s"]) if index_s is not None else "-",
            ib.get("parse_bundles"), "%d/%d" % (ib["counters"].get("icebeam.key_files_read", 0), cand),
            "  (maintained)" if ib["counters"].get("icebeam.maintenance_runs") else ""), flush=True)
    return rounds


def summarize(rounds, batch):
    """Prints and returns the medians of the first and last three rounds of one batch
    size, the icebeam/Spark and late/early ratios, the means, peak RSS and the index
    build share."""
    k = min(3, len(rounds))
    early, late = rounds[:k], rounds[-k:]
    summ = {}
    for key in ("icebeam_pipeline_s", "icebeam_process_s", "spark_merge_s"):
        e, l = median([r[key] for r in early]), median([r[key] for r in late])
        summ[key] = dict(early=e, late=l, late_over_early=l / e, median=median([r[key] for r in rounds]))
    for key in ("icebeam_pipeline_s", "icebeam_process_s"):
        summ[key]["over_spark_early"] = summ[key]["early"] / summ["spark_merge_s"]["early"]
        summ[key]["over_spark_late"] = summ[key]["late"] / summ["spark_merge_s"]["late"]
        summ[key]["over_spark"] = summ[key]["median"] / summ["spark_merge_s"]["median"]
    er, lr = "%d-%d" % (early[0]["round"], early[-1]["round"]), "%d-%d" % (late[0]["round"], late[-1]["round"])
    print("\nbatches of %d: medians (seconds)  rounds %-6s rounds %-6s late/early  all" % (batch, er, lr))
    for key, label in (("icebeam_pipeline_s", "icebeam pipeline"), ("icebeam_process_s", "icebeam process"),
                       ("spark_merge_s", "spark MERGE")):
        v = summ[key]
        print("  %-16s %12.2f %13.2f %10.2f %6.2f" % (label, v["early"], v["late"], v["late_over_early"], v["median"]))
    for key, label in (("icebeam_pipeline_s", "icebeam pipeline"), ("icebeam_process_s", "icebeam process")):
        v = summ[key]
        print("  ratio %s / spark MERGE: rounds %s %.2f, rounds %s %.2f, all %.2f"
              % (label, er, v["over_spark_early"], lr, v["over_spark_late"], v["over_spark"]))
    for c in ("key_files_read", "key_column_bytes_read"):
        summ[c] = median([r["icebeam_counters"].get("icebeam." + c, 0) for r in rounds])
    summ["candidate_files"] = median([r["candidate_files"] for r in rounds])
    summ["key_files_read_is_candidates"] = all(
        r["icebeam_counters"].get("icebeam.key_files_read", 0) == r["candidate_files"] for r in rounds)
    print("  key columns read: median %d files (candidate files: median %d; equal in %s round), %.1f MB" % (
        summ["key_files_read"], summ["candidate_files"], "every" if summ["key_files_read_is_candidates"] else "NOT every",
        summ["key_column_bytes_read"] / 1e6))
    pb = [r["parse_bundles"] for r in rounds if r.get("parse_bundles") is not None]
    if pb:
        summ["parse_bundles"] = dict(median=median(pb), min=min(pb), max=max(pb), source=rounds[-1].get("source"))
        print("  parse stage (--source %s): median %g bundles (%d to %d)" % (
            rounds[-1].get("source"), median(pb), min(pb), max(pb)))
    rss = [r["icebeam_peak_rss_mb"] for r in rounds if r["icebeam_peak_rss_mb"]]
    if rss:
        summ["icebeam_peak_rss_mb"] = dict(median=median(rss), max=max(rss))
        print("  icebeam peak RSS%s: median %.0f MB, max %.0f MB" % (
            " (the launching process)" if rounds[0]["icebeam_worker_peak_rss_mb"] else "", median(rss), max(rss)))
    wr = [sorted(r["icebeam_worker_peak_rss_mb"], reverse=True) for r in rounds if r["icebeam_worker_peak_rss_mb"]]
    if wr:
        # The largest worker's peak over the rounds, then the second's, ...
        summ["worker_peak_rss_mb"] = [max(w[i] for w in wr if len(w) > i) for i in range(max(len(w) for w in wr))]
        summ["worker_processes"] = dict(min=min(len(w) for w in wr), max=max(len(w) for w in wr))
        print("  worker processes per run: %d to %d; peak RSS per worker (largest first, max over rounds): %s MB" % (
            summ["worker_processes"]["min"], summ["worker_processes"]["max"],
            " / ".join("%.0f" % m for m in summ["worker_peak_rss_mb"])))
    shares = [r["icebeam_index_build_s"] / r["icebeam_pipeline_s"] for r in rounds if r["icebeam_index_build_s"] is not None]
    if shares:
        summ["index_build_share"] = median(shares)
        print("  key index build (cold start): median %.0f%% of the pipeline time" % (100 * median(shares)))
    n = len(rounds)
    for key in ("icebeam_pipeline_s", "spark_merge_s"):
        summ[key]["mean_all"] = sum(r[key] for r in rounds) / n
        summ[key]["mean_last_10"] = sum(r[key] for r in rounds[-10:]) / len(rounds[-10:])
    print("  mean of all %d rounds: icebeam pipeline %.3fs, spark MERGE %.3fs, ratio %.2f; last 10 rounds: %.3fs, %.3fs, ratio %.2f"
          % (n, summ["icebeam_pipeline_s"]["mean_all"], summ["spark_merge_s"]["mean_all"],
             summ["icebeam_pipeline_s"]["mean_all"] / summ["spark_merge_s"]["mean_all"],
             summ["icebeam_pipeline_s"]["mean_last_10"], summ["spark_merge_s"]["mean_last_10"],
             summ["icebeam_pipeline_s"]["mean_last_10"] / summ["spark_merge_s"]["mean_last_10"]))
    return summ


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="folder for the catalog, batches, logs (not .deps/run)")
    ap.add_argument("--jars", required=True)
    ap.add_argument("--morbatch", required=True, help="the built cmd/morbatch binary")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--batch", default="10000", help="changes per batch; a comma list runs --rounds rounds of each size")
    ap.add_argument("--files", type=int, default=4, help="data files of the initial tables")
    ap.add_argument("--warmups", type=int, default=3, help="Spark warm-up MERGEs (at least 2)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--num_shards", type=int, default=0, help="icebeam num_shards (0: its default)")
    ap.add_argument("--check", choices=("auto", "model", "tables"), default="auto",
                    help="compare both tables with a model of the batches, or icebeam's with Spark's (auto: tables above 5M rows)")
    ap.add_argument("--maintain", type=int, default=0,
                    help="icebeam maintenance_every_commits (0: none); the rounds then include the maintenance runs")
    ap.add_argument("--bundles", type=int, default=1,
                    help="write each batch as this many part files, read by morbatch in that many bundles (see --source)")
    ap.add_argument("--source", choices=("file", "parts", "textio"), default=None,
                    help="morbatch --source: file (one bundle), parts (one bundle per part; the default with --bundles "
                         "above 1), textio (the runner's bundles; the default with --workers above 1)")
    ap.add_argument("--workers", type=int, default=0,
                    help="run icebeam on Beam Python's portable job service with this many worker processes (0: prism)")
    ap.add_argument("--beam_python", default=None,
                    help="with --workers: the python of a venv with apache-beam (default: beamvenv beside --jars)")
    a = ap.parse_args()
    a.batches = [int(b) for b in a.batch.split(",")]
    if a.warmups < 2 or a.rounds < 1 or a.bundles < 1 or a.workers < 0:
        raise SystemExit("bench: --warmups must be at least 2, --rounds and --bundles at least 1, --workers at least 0")
    if a.workers > 1 and a.source in (None, "parts") and a.bundles > 1:
        if a.source == "parts":
            raise SystemExit("bench: --source parts checkpoints, which the job service drops with several workers")
        a.source = "textio"
    a.beam_python = a.beam_python or os.path.join(os.path.dirname(os.path.abspath(a.jars)), "beamvenv", "bin", "python")
    os.makedirs(os.path.join(a.work, "catalog", "warehouse"), exist_ok=True)
    os.makedirs(os.path.join(a.work, "batches"), exist_ok=True)
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    db, _ = engines.paths(a.work)
    with sqlite3.connect(db) as c:  # WAL, as icebergtest opens it, before any client
        c.execute("PRAGMA journal_mode=WAL")
    run_id = "%x" % int(time.time())
    t_start = time.time()

    js = start_job_service(a) if a.workers else None
    try:
        run(a, run_id, t_start)
    finally:
        if js:
            js.terminate()
            try:
                js.wait(10)
            except subprocess.TimeoutExpired:
                js.kill()


def run(a, run_id, t_start):
    spark = engines.spark_session(a.work, a.jars)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    t0 = time.time()
    for name in ("icebeam", "spark", "warmup"):
        create_table(spark, f"{NS}.{name}", a.rows, a.files)
    log("created %s.icebeam, %s.spark and %s.warmup: %d rows each in %d data files (%.1fs)"
        % (NS, NS, NS, a.rows, a.files, time.time() - t0))

    # Warm-up: Spark MERGEs on the throwaway table, then one icebeam write on it.
    wmodel = Model(a.rows)
    for w in range(a.warmups + 1):
        changes = wmodel.batch(random.Random("%d:warmup:%d" % (a.seed, w)), a.batches[0], 1000 + w)
        wmodel.apply(changes)
        ib_path, sp_path = write_batch(os.path.join(a.work, "batches", "warmup-%d" % w + (
            ".jsonl" if a.bundles <= 1 else "")), changes, a.bundles)
        if w < a.warmups:
            log("warm-up %d: Spark MERGE %.2fs" % (w + 1, spark_merge(spark, f"{NS}.warmup", sp_path)))
        else:
            r = icebeam_merge(a, f"{NS}.warmup", ib_path, "bench-%s-warmup" % run_id, os.path.join(a.work, "logs", "warmup.log"))
            log("warm-up: icebeam pipeline %.2fs (process %.2fs), parse stage %d bundles (--source %s)" % (
                r["pipeline_s"], r["wall_s"], r.get("parse_bundles", 0), r.get("source")))

    model = Model(a.rows)
    rounds, summ = [], {}
    for batch in a.batches:
        rs = run_rounds(spark, a, model, batch, len(rounds), run_id)
        rounds += rs
        summ[str(batch)] = summarize(rs, batch)

    spark.sql(f"REFRESH TABLE {CATALOG}.{NS}.icebeam")  # icebeam committed behind Spark's table cache
    files = {name: files_of(spark, f"{NS}.{name}") for name in ("icebeam", "spark")}
    maint = sum(r["icebeam_counters"].get("icebeam.maintenance_runs", 0) for r in rounds)
    if a.maintain:
        print("  icebeam maintenance runs: %d (rounds %s)" % (maint, ", ".join(
            str(r["round"]) for r in rounds if r["icebeam_counters"].get("icebeam.maintenance_runs", 0))))
    for name, f in files.items():
        print("  %-8s live data files %d, live delete files %d (in %d files), %d snapshots"
              % (name, f["data_files"], f["delete_files"], f["delete_file_paths"], f["snapshots"]))

    check = a.check if a.check != "auto" else ("tables" if a.rows > 5_000_000 else "model")
    ok, rep = verify(spark, a, model) if check == "model" else verify_tables(spark)
    print("\nequality check against %s (%.1fs): %s" % ("the model" if check == "model" else "Spark's table",
                                                       rep["seconds"], "OK" if ok else "MISMATCH"))
    for name in ("model", "icebeam", "spark"):
        if name in rep:
            print("  %-8s %s" % (name, json.dumps(rep[name], sort_keys=True)))
    out = dict(args=vars(a), rounds=rounds, summary=summ, files=files, check=rep, ok=ok,
               seconds=round(time.time() - t_start, 1))
    with open(os.path.join(a.work, "bench_merge.json"), "w") as f:
        json.dump(out, f, indent=2)
    log("results in %s (total %.0fs)" % (os.path.join(a.work, "bench_merge.json"), time.time() - t_start))
    spark.stop()
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
