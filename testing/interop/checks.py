"""Shared helpers of the Python side of icebeam's interop suite: canonical
row text and checksums (the same as testing/interop/expected.go), expected
and result files."""
import calendar
import datetime
import decimal
import glob
import hashlib
import json
import os
import re

NULL = "\\N"
MASK = (1 << 64) - 1


def split_type(typ):
    """Splits a nested type string at its top-level commas: "a:int,b:map<k,v>" -> [...]."""
    out, depth, cur = [], 0, ""
    for ch in typ:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def epoch_micros(v):
    if v.tzinfo is None:  # engines hand out UTC wall time (TZ=UTC)
        v = v.replace(tzinfo=datetime.timezone.utc)
    return calendar.timegm(v.utctimetuple()) * 1_000_000 + v.microsecond


def canon(v, typ):
    """Canonical text of one value of Iceberg type typ (see Canonical in expected.go)."""
    typ = typ.replace(" ", "")
    if v is None:
        return NULL
    if typ == "boolean":
        return "true" if v else "false"
    if typ in ("long", "int"):
        return str(int(v))
    if typ == "string":
        return v.replace("\\", "\\\\").replace("|", "\\|")
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", typ)
    if m:
        scale = int(m.group(2))
        with decimal.localcontext() as ctx:  # 38 digits do not fit the default 28
            ctx.prec = 80
            return format(decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-scale)), "f")
    if typ in ("double", "float"):
        return "%.4f" % v
    if typ == "date":
        return v.isoformat()
    if typ == "time":
        if isinstance(v, datetime.time):
            return str(((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)
        if isinstance(v, datetime.timedelta):
            return str((v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds)
        return str(int(v))
    if typ in ("timestamptz", "timestamp"):
        if isinstance(v, datetime.datetime):
            return str(epoch_micros(v))
        return str(int(v))
    if typ in ("timestamp_ns", "timestamptz_ns"):
        if hasattr(v, "value") and hasattr(v, "nanosecond"):  # pandas.Timestamp
            return str(int(v.value))
        if isinstance(v, datetime.datetime):  # an engine that hands out microseconds
            return str(epoch_micros(v) * 1000)
        return str(int(v))
    if typ == "uuid":
        if isinstance(v, (bytes, bytearray)):
            import uuid
            v = uuid.UUID(bytes=bytes(v))
        return str(v).lower()
    if typ == "binary" or typ.startswith("fixed["):
        if isinstance(v, str):  # an engine that hands out hex or text
            return v.lower()
        return bytes(v).hex()
    if typ == "variant":  # a decoded value; its JSON text with keys sorted (Variant.JSON in Go)
        if hasattr(v, "toJson") and hasattr(v, "metadata"):  # PySpark 4's VariantVal (a variant null too)
            v = json.loads(v.toJson())
        return canon(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False), "string")
    if typ.startswith("list<"):
        elem = typ[len("list<"):-1]
        return "[" + ",".join(canon(x, elem) for x in v) + "]"
    if typ.startswith("map<"):
        kt, vt = split_type(typ[len("map<"):-1])
        if isinstance(v, dict):
            if set(v) == {"key", "value"} and isinstance(v["key"], list):  # DuckDB's MAP as a struct of lists
                items = zip(v["key"], v["value"])
            else:
                items = v.items()
        else:  # a list of (key, value) pairs
            items = [(e["key"], e["value"]) if isinstance(e, dict) else tuple(e) for e in v]
        return "{" + ",".join(sorted(canon(k, kt) + ":" + canon(x, vt) for k, x in items)) + "}"
    if typ.startswith("struct<"):
        fields = [f.split(":", 1) for f in split_type(typ[len("struct<"):-1])]
        if isinstance(v, dict):
            vals = [v.get(name) for name, _ in fields]
        elif hasattr(v, "asDict"):  # a Spark Row
            vals = list(v)
        else:
            vals = list(v)
        return "(" + ",".join(canon(x, t) for x, (_, t) in zip(vals, fields)) + ")"
    raise ValueError("no canonical form for type %r" % typ)


def row_text(values, types):
    return "|".join(canon(v, t) for v, t in zip(values, types))


def row_hash(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def checksum(texts):
    s = 0
    n = 0
    for t in texts:
        s = (s + row_hash(t)) & MASK
        n += 1
    return n, str(s)


def load_expected(work):
    out = []
    d = os.path.join(work, "expected")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                out.append(json.load(f))
    return out


def write_engine(work, name, label):
    """Records that engine name is label ("Spark 4.1.1 + Iceberg 1.12.0") in
    WORK/engines/<name>.json, for the report and the compatibility table."""
    d = os.path.join(work, "engines")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump(dict(name=name, label=label), f)


def load_engines(work):
    """The engines that recorded themselves with write_engine: name -> label."""
    out = {}
    for f in sorted(glob.glob(os.path.join(work, "engines", "*.json"))):
        with open(f) as fh:
            e = json.load(fh)
        out[e["name"]] = e["label"]
    return out


class Results:
    """Collects Result records (see expected.go) and writes them as JSON."""

    def __init__(self, path):
        self.path = path
        self.items = []
        self.known = load_known()

    def add(self, engine, writer, scenario, check, expected, seen, error=""):
        ok = (not error) and str(expected) == str(seen)
        self.items.append(dict(engine=engine, writer=writer, scenario=scenario, check=check,
                               expected=str(expected), seen=str(seen), ok=ok, error=error))
        status = "ok  " if ok else ("KNOWN" if known_for(self.items[-1], self.known) else "FAIL")
        msg = f"interop: {status} {engine:9} {writer:12} {scenario:40} {check}: expected {expected}, seen {seen}"
        if error:
            msg += f" ({error})"
        print(msg, flush=True)
        return ok

    def write(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "w") as f:
            json.dump(self.items, f, indent=2)

    def failed(self):
        return [r for r in self.items if not r["ok"]]


def check_scenario(res, engine, writer, sc, read, lineage=False):
    """Runs the full read, the queries and the lookups of scenario sc with
    read(filter, keep) -> list of value tuples (in keep order); records them.
    With lineage, also the scenario's row lineage read (see expected.go)."""
    cols = [c["name"] for c in sc["columns"]]
    types = {c["name"]: c["type"] for c in sc["columns"]}
    types.update({"_row_id": "long", "_last_updated_sequence_number": "long"})

    def run(check, flt, keep, exp_count, exp_sum):
        try:
            rows = read(flt, keep)
            n, s = checksum(row_text(r, [types[k] for k in keep]) for r in rows)
            res.add(engine, writer, sc["name"], check + " rows", exp_count, n)
            res.add(engine, writer, sc["name"], check + " checksum", exp_sum, s)
        except Exception as e:  # an engine that cannot read fails the check
            res.add(engine, writer, sc["name"], check, exp_count, "error", error=f"{type(e).__name__}: {e}"[:400])

    run("all", None, cols, sc["count"], sc["checksum"])
    for q in sc["queries"]:
        run("query[" + q["name"] + "]", q["filter"], q["keep"], q["count"], q["checksum"])
    q = sc.get("lineage")
    if lineage and q:
        run("lineage", q["filter"], q["keep"], q["count"], q["checksum"])
    ids = [lk["id"] for lk in sc["lookups"]]
    try:
        rows = read("id IN (%s)" % ", ".join(str(i) for i in ids), cols)
        seen = {}
        for r in rows:
            seen.setdefault(r[0], []).append(row_text(r, [types[k] for k in cols]))
        for lk in sc["lookups"]:
            got = seen.get(lk["id"], [])
            exp = [lk["row"]] if lk["row"] is not None else []
            res.add(engine, writer, sc["name"], "lookup id=%d" % lk["id"],
                    exp[0] if exp else "absent", got[0] if len(got) == 1 else ("absent" if not got else got))
    except Exception as e:
        res.add(engine, writer, sc["name"], "lookups", len(ids), "error", error=f"{type(e).__name__}: {e}"[:400])


def load_known():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_issues.json")) as f:
        return json.load(f)


def fnmatch_result(r, k):
    """Whether result r is about the engine, writer and scenario of known issue k."""
    import fnmatch
    return fnmatch.fnmatch(r["engine"], k["engine"]) and fnmatch.fnmatch(r["writer"], k["writer"]) \
        and fnmatch.fnmatch(r["scenario"], k["scenario"])


def check_matches(pattern, check):
    """Whether check name check is pattern, or starts with it less a final "*"."""
    if pattern.endswith("*"):
        return check.startswith(pattern[:-1])
    return check == pattern


def known_for(r, known):
    """The known_issues.json entry that covers failed result r, or None. An entry
    with "checks" covers only the checks it names (exactly, or by prefix when the
    name ends in "*": check names hold brackets, which fnmatch would take as classes)."""
    import fnmatch
    for k in known:
        if fnmatch.fnmatch(r["engine"], k["engine"]) and fnmatch.fnmatch(r["writer"], k["writer"]) \
                and fnmatch.fnmatch(r["scenario"], k["scenario"]) and k["error"] in (r.get("error") or "") \
                and ("checks" not in k or any(check_matches(c, r["check"]) for c in k["checks"])):
            return k
    return None
