"""Prints the table of bench_scale.sh from its work dir: per table size and batch
size, icebeam's and Spark's median times, their ratio, icebeam's peak RSS, the key
index build share of icebeam's pipeline time, and icebeam's time against the
smallest size's (the growth with the table); then the streaming run's figures
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
            runs.append(json.load(f))
    if not runs and not os.path.exists(os.path.join(work, "stream.log")):
        raise SystemExit("bench: no bench_merge.json or stream.log under %s" % work)
    ok = stream_summary(os.path.join(work, "stream.log"))
    if not runs:
        return ok
    runs.sort(key=lambda r: r["args"]["rows"])
    hdr = "%11s %7s %10s %10s %10s %9s %8s %7s %9s %6s" % (
        "rows", "batch", "icebeam", "(process)", "spark", "ib/spark", "RSS MB", "index", "vs first", "check")
    print(hdr + "\n" + "-" * len(hdr))
    first = {}
    for r in runs:
        for batch, s in sorted(r["summary"].items(), key=lambda kv: int(kv[0])):
            ib = s["icebeam_pipeline_s"]["median"]
            first.setdefault(batch, ib)
            rss = s.get("icebeam_peak_rss_mb", {}).get("max")
            share = s.get("index_build_share")
            print("%11d %7s %9.2fs %9.2fs %9.2fs %9.2f %8s %7s %9.2f %6s" % (
                r["args"]["rows"], batch, ib, s["icebeam_process_s"]["median"], s["spark_merge_s"]["median"],
                s["icebeam_pipeline_s"]["over_spark"], "%.0f" % rss if rss else "-",
                "%.0f%%" % (100 * share) if share is not None else "-", ib / first[batch], "OK" if r["ok"] else "FAIL"))
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
