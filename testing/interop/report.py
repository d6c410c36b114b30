"""Prints icebeam's interop report (engine x scenario: rows expected, rows
seen, checks) from WORK/results/*.json and exits 1 on any failure that is
not a listed known issue, on a known issue that no longer happens (remove
it), or when an engine produced no results at all.

Usage: report.py WORK
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checks  # noqa: E402
# (engine, writer) pairs that must have results: every engine reads the Go
# writers' tables, icebeam reads Spark's, plus the catalog round trips.
REQUIRED = [("spark", "icebergtest"), ("pyiceberg", "icebergtest"), ("duckdb", "icebergtest"),
            ("pyiceberg", "spark"), ("duckdb", "spark"), ("icebeam", "spark"), ("icebeam", "icebergtest"),
            ("spark", "spark"), ("spark", "icebeam"), ("pyiceberg", "icebeam"), ("duckdb", "icebeam"), ("icebeam(rest)", "icebergtest"), ("iceberg-go", "2 goroutines")]


def spark_legs():
    """The further Spark legs' names (run.sh's ICEBEAM_INTEROP_SPARK_LEGS)."""
    return [e.split("=", 1)[0] for e in os.environ.get("ICEBEAM_INTEROP_SPARK_LEGS", "").split(";") if e.strip()]


def main():
    work = sys.argv[1]
    results = []
    for f in sorted(glob.glob(os.path.join(work, "results", "*.json"))):
        with open(f) as fh:
            results.extend(json.load(fh))
    known = checks.load_known()

    def known_for(r):
        return checks.known_for(r, known)

    groups = {}
    for r in results:
        groups.setdefault((r["engine"], r["writer"], r["scenario"]), []).append(r)
    used = set()
    failed = passed = known_n = 0
    lines = []
    for (eng, wr, sc), rs in sorted(groups.items()):
        exp_rows = seen_rows = "-"
        for r in rs:
            if r["check"] in ("all rows", "all"):
                exp_rows, seen_rows = r["expected"], r["seen"]
        bad = [r for r in rs if not r["ok"]]
        kn = [known_for(r) for r in bad]
        if not bad:
            status = "ok"
            passed += 1
        elif all(kn):
            status = "KNOWN"
            known_n += 1
            for k in kn:
                used.add(id(k))
        else:
            status = "FAIL"
            failed += 1
        lines.append((eng, wr, sc, exp_rows, seen_rows, "%d/%d" % (len(rs) - len(bad), len(rs)), status))
    w = [max(len(str(l[i])) for l in lines + [("engine", "writer", "scenario", "rows expected", "rows seen", "checks ok", "status")]) for i in range(7)]
    hdr = ("engine", "writer", "scenario", "rows expected", "rows seen", "checks ok", "status")
    print("\n==== icebeam interop report ====")
    print("  ".join(str(h).ljust(w[i]) for i, h in enumerate(hdr)))
    for l in lines:
        print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(l)))
    for (eng, wr, sc), rs in sorted(groups.items()):
        for r in rs:
            if not r["ok"]:
                k = known_for(r)
                tag = "KNOWN" if k else "FAIL"
                print("%s: %s reading %s/%s: %s: expected %s, seen %s %s" % (
                    tag, eng, wr, sc, r["check"], r["expected"][:80], r["seen"][:80], (r.get("error") or "")[:200]))
    for k in known:
        if id(k) in used:
            print("KNOWN ISSUE (still happening): %s/%s/%s: %s" % (k["engine"], k["writer"], k["scenario"], k["reason"]))
        elif not any(checks.fnmatch_result(r, k) for r in results):
            print("KNOWN ISSUE (not checked this run: no results for it): %s/%s/%s" % (k["engine"], k["writer"], k["scenario"]))
        elif not k.get("strict", True):
            print("KNOWN ISSUE (did not show this run; entry not strict): %s/%s/%s" % (k["engine"], k["writer"], k["scenario"]))
        else:
            print("STALE KNOWN ISSUE (no longer happens: remove it from known_issues.json): %s/%s/%s" % (
                k["engine"], k["writer"], k["scenario"]))
            failed += 1
    # An entry's "fixed_in" names the engines (further Spark legs) that read what
    # it describes: their results for it must all pass (a failure there is a plain
    # failure above, since the entry's engine pattern does not cover them).
    for k in known:
        for eng in k.get("fixed_in", []):
            rs = [r for r in results if r["engine"] == eng and checks.fnmatch_result(r, dict(k, engine=eng))
                  and ("checks" not in k or any(checks.check_matches(c, r["check"]) for c in k["checks"]))]
            if not rs:
                print("FIXED-IN NOT CHECKED (no results of %s): %s/%s/%s" % (eng, k["engine"], k["writer"], k["scenario"]))
                failed += 1
            elif all(r["ok"] for r in rs):
                print("FIXED in %s: %s/%s/%s (%d checks pass)" % (eng, k["engine"], k["writer"], k["scenario"], len(rs)))
            else:
                print("NOT FIXED in %s, as known_issues.json says: %s/%s/%s" % (eng, k["engine"], k["writer"], k["scenario"]))
    have = {(r["engine"], r["writer"]) for r in results}
    for leg in spark_legs():
        REQUIRED.extend([(leg, "icebergtest"), (leg, "icebeam"), (leg, leg), ("icebeam", leg)])
    for pair in REQUIRED:
        if pair not in have:
            print("MISSING: no results for engine %s reading writer %s's tables" % pair)
            failed += 1
    print("interop: %d passed, %d failed" % (passed + known_n, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
