"""Prints the table of bench_scale.sh from its work dir: per table size and batch
size, icebeam's and Spark's median times, their ratio, icebeam's peak RSS, the key
index build share of icebeam's pipeline time, and icebeam's time against the
smallest size's (the growth with the table)."""
import glob
import json
import os
import sys


def main(work):
    runs = []
    for path in glob.glob(os.path.join(work, "rows-*", "bench_merge.json")):
        with open(path) as f:
            runs.append(json.load(f))
    if not runs:
        raise SystemExit("bench: no bench_merge.json under %s" % work)
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
    return all(r["ok"] for r in runs)


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1]) else 1)
