"""Prints the table of bench_scale.sh from its work dir: per table size, layout,
runner (prism, or jsN: Beam Python's job service with N worker processes) and batch
size, icebeam's and Spark's median times, their ratio, icebeam's peak RSS (on the job
service each worker process's, largest first), the key index build share of icebeam's
pipeline time, the key files read against the candidate files (whose id bounds hold a
key of the batch; "!" when they differed in a round), the key bytes read, the bundles
of the parse stage, and icebeam's time against the smallest size's of the same layout
and runner (the growth with the table); then the streaming run's figures
(stream.log), if there is one."""
import glob
import json
import os
import re
import sys


def main(work):
    runs = []
    for path in glob.glob(os.path.join(work, "rows-*", "bench_merge.json")):
        with open(path) as f:
            r = json.load(f)
        # rows-N-LAYOUT[-wN] (rows-N: a run from before the layouts, one file per 2M rows)
        parts = os.path.basename(os.path.dirname(path)).split("-")
        r["layout"] = parts[2] if len(parts) > 2 else "2m"
        workers = r["args"].get("workers") or 0
        r["runner"] = "js%d" % workers if workers else "prism"
        runs.append(r)
    if not runs and not os.path.exists(os.path.join(work, "stream.log")):
        raise SystemExit("bench: no bench_merge.json or stream.log under %s" % work)
    ok = stream_summary(os.path.join(work, "stream.log"))
    if not runs:
        return ok
    runs.sort(key=lambda r: (r["layout"], r["runner"], r["args"]["rows"]))
    hdr = "%11s %8s %6s %6s %7s %10s %10s %10s %9s %9s %7s %11s %9s %7s %9s %6s" % (
        "rows", "layout", "files", "runner", "batch", "icebeam", "(process)", "spark", "ib/spark", "RSS MB", "index",
        "kfiles/cand", "key MB", "bundles", "vs first", "check")
    print(hdr + "\n" + "-" * len(hdr))
    first = {}
    for r in runs:
        for batch, s in sorted(r["summary"].items(), key=lambda kv: int(kv[0])):
            ib = s["icebeam_pipeline_s"]["median"]
            first.setdefault((r["layout"], r["runner"], batch), ib)
            if s.get("worker_peak_rss_mb"):
                rss = "/".join("%.0f" % m for m in s["worker_peak_rss_mb"])
            else:
                rss = s.get("icebeam_peak_rss_mb", {}).get("max")
                rss = "%.0f" % rss if rss else "-"
            share = s.get("index_build_share")
            kb = s.get("key_column_bytes_read")
            kf = "-" if s.get("candidate_files") is None else "%g/%g%s" % (
                s["key_files_read"], s["candidate_files"], "" if s["key_files_read_is_candidates"] else "!")
            pb = s.get("parse_bundles", {}).get("median")
            print("%11d %8s %6d %6s %7s %9.2fs %9.2fs %9.2fs %9.2f %9s %7s %11s %9s %7s %9.2f %6s" % (
                r["args"]["rows"], r["layout"], r["args"]["files"], r["runner"], batch, ib,
                s["icebeam_process_s"]["median"], s["spark_merge_s"]["median"], s["icebeam_pipeline_s"]["over_spark"],
                rss, "%.0f%%" % (100 * share) if share is not None else "-", kf,
                "%.1f" % (kb / 1e6) if kb is not None else "-", "%g" % pb if pb is not None else "-",
                ib / first[(r["layout"], r["runner"], batch)], "OK" if r["ok"] else "FAIL"))
    return ok and all(r["ok"] for r in runs)


def stream_summary(path):
    """Prints the metrics of BenchmarkStreamingMergeOnRead's result line in path;
    False if the run did not pass."""
    if not os.path.exists(path):
        return True
    with open(path) as f:
        text = f.read()
    line = next((l for l in text.splitlines() if l.startswith("BenchmarkStreamingMergeOnRead")), None)
    if line is None or "\nPASS" not in text:
        print("streaming: FAIL (see %s)" % path)
        return False
    m = {unit: float(v) for v, unit in re.findall(r"([0-9.e+-]+) (\S+)", line.split(None, 2)[2])}
    print("streaming, %d live rows: %d windows, %.0f changes/s, commit latency p50 %.0f ms, p95 %.0f ms, "
          "last5/first5 %.2f, peak RSS %.0f MB, key columns %.2f MB read per window, key index build %.0f ms" % (
              m["live-rows"], m["windows"], m["changes/s"], m["p50-commit-latency-ms"], m["p95-commit-latency-ms"],
              m.get("last5/first5", float("nan")), m["peak-rss-mb"], m["key-MB-read/window"], m["key-index-build-ms"]))
    return True


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1]) else 1)
