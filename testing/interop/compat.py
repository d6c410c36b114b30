"""Writes the README's compatibility table from an interop run: which engine
(and version) reads which feature of the tables icebeam writes.

Usage: compat.py WORK            print the table made from WORK/results
       compat.py WORK --write    also write it to compat.md (this folder) and
                                 into README.md between the compat markers
       compat.py WORK --check    exit 1 unless compat.md is that table

run.sh runs it with --check after the report, so a run whose results no longer
match the committed table fails; testing/interop's TestCompatTableInREADME fails
when README.md's copy differs from compat.md.

A cell is "reads" when every check of the engine on the feature's scenarios
passed, "fails: ..." with the known_issues.json entry's summary and upstream
links when a known issue covers the failures, and "not tested" when the run has
no result for it or an entry marked "harness" (a limit of this suite) covers them. BigQuery's column is from Google's documentation, not tested.
"""
import fnmatch
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checks  # noqa: E402

BEGIN, END = "<!-- compat:begin -->", "<!-- compat:end -->"

# Rows: a feature and the (writer, scenario pattern, check prefix) results that show it.
FEATURES = [
    ("Deletion vectors written by icebeam (merge-on-read, v3)",
     [("icebeam_mor", "v3 merge-on-read CDC (*", "")]),
    ("Deletion vectors merged with Spark's (icebeam, Spark, icebeam)",
     [("icebeam_dvmerge", "*", "")]),
    ("Equality deletes (v2, written by testing/icebergtest)",
     [("icebergtest", "v2 equality deletes*", "")]),
    ("Row lineage (`_row_id`, `_last_updated_sequence_number`)",
     [("icebeam_mor", "*", "lineage")]),
    ("variant", [("icebeam", "v3 variant*", "")]),
    ("timestamp_ns, timestamptz_ns", [("icebeam", "v3 nanosecond timestamps*", "")]),
    ("unknown", [("icebeam", "v3 unknown", "")]),
    ("time", [("icebeam", "v3 time", "")]),
    ("geography", []),
    ("int -> long evolved column (`evolve_schema`)", [("icebeam", "v3 append, schema evolved by evolve_schema*", "")]),
]

# Rows icebeam cannot write, so no engine is tested on them: the reason, for every
# engine's cell. compat_test.go's TestGeographyNotWritable fails when Write accepts a
# geography column, so that this reason cannot outlive it.
NOT_WRITTEN = {
    "geography": "icebeam cannot write it (no Go type maps to it; TestGeographyNotWritable)",
}

# Columns: engine names of the results (see engines.py and the Go readers), in order.
ENGINES = ["spark", "spark-3.5-iceberg-1.12", "spark-4.1-iceberg-1.12", "pyiceberg", "duckdb", "iceberg-go"]
FIXED_LABELS = {"iceberg-go": "iceberg-go v0.7.0"}

# BigQuery (Iceberg V3 tables through the Lakehouse runtime catalog, read only):
# https://docs.cloud.google.com/lakehouse/docs/use-iceberg-v3-binary-deletion-vectors
BQ_DOC = "https://docs.cloud.google.com/lakehouse/docs/use-iceberg-v3-binary-deletion-vectors"
BIGQUERY = {
    "Deletion vectors written by icebeam (merge-on-read, v3)": "documented: reads V3 deletion vectors (Preview)",
    "Row lineage (`_row_id`, `_last_updated_sequence_number`)": "documented: not supported",
    "variant": "documented: not supported",
    "timestamp_ns, timestamptz_ns": "documented: not supported",
    "unknown": "documented: not supported",
    "geography": "documented: not supported",
}


def links(text):
    """Markdown links for the owner/repo#N references in text."""
    refs = []
    for m in re.finditer(r"\b([\w.-]+/[\w.-]+)#(\d+)", text):
        r = "[%s#%s](https://github.com/%s/issues/%s)" % (m.group(1), m.group(2), m.group(1), m.group(2))
        if r not in refs:
            refs.append(r)
    return ", ".join(refs)


def cell(results, known, engine, sources):
    rs = [r for r in results if r["engine"] == engine and any(
        r["writer"] == w and fnmatch.fnmatch(r["scenario"], sc) and r["check"].startswith(chk)
        for w, sc, chk in sources)]
    if not rs:
        return "not tested"
    bad = [r for r in rs if not r["ok"]]
    if not bad:
        return "reads"
    entries = []
    for r in bad:
        k = checks.known_for(r, known)
        if k is None:
            return "fails: not a known issue (see the interop report)"
        if k not in entries:
            entries.append(k)
    harness = [k for k in entries if k.get("harness")]
    if harness:  # a limit of this suite, not of the engine
        return "not tested: " + "; ".join(k["summary"] for k in harness)
    parts = []
    for k in entries:
        summary = k.get("summary") or k["reason"].split(":")[0]
        ref = links(" ".join(k["links"]) if "links" in k else k["reason"])
        parts.append(summary + (" (" + ref + ")" if ref else ""))
    return "fails: " + "; ".join(parts)


def table(work):
    results = []
    for f in sorted(glob.glob(os.path.join(work, "results", "*.json"))):
        with open(f) as fh:
            results.extend(json.load(fh))
    known = checks.load_known()
    labels = dict(FIXED_LABELS)
    labels.update(checks.load_engines(work))
    cols = [labels.get(e, e) for e in ENGINES] + ["BigQuery (documented, not tested)"]
    out = ["| feature | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, sources in FEATURES:
        if name in NOT_WRITTEN:
            cells = ["not tested: " + NOT_WRITTEN[name]] * len(ENGINES)
        else:
            cells = [cell(results, known, e, sources) for e in ENGINES]
        cells.append(BIGQUERY.get(name, "not documented"))
        out.append("| " + name + " | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    out.append("BigQuery's column is from [Google's documentation](%s) of Iceberg V3 tables in the "
               "Lakehouse runtime catalog (read only from BigQuery), not tested here." % BQ_DOC)
    return "\n".join(out) + "\n"


def main():
    work = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    t = table(work)
    md = os.path.join(HERE, "compat.md")
    if mode == "--check":
        with open(md) as f:
            if f.read() != t:
                print(t)
                print("interop: testing/interop/compat.md is stale: run python3 testing/interop/compat.py %s --write" % work)
                sys.exit(1)
        print("interop: compat.md matches this run")
        return
    print(t)
    if mode == "--write":
        with open(md, "w") as f:
            f.write(t)
        readme = os.path.join(HERE, "..", "..", "README.md")
        with open(readme) as f:
            text = f.read()
        i, j = text.find(BEGIN), text.find(END)
        if i < 0 or j < i:
            sys.exit("compat.py: README.md has no %s ... %s section" % (BEGIN, END))
        with open(readme, "w") as f:
            f.write(text[:i + len(BEGIN)] + "\n" + t + text[j:])


if __name__ == "__main__":
    main()
