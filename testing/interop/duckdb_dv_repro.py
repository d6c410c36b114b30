"""Shows DuckDB 1.5.5's deletion-vector bug on a table of the interop catalog
(README.md, "Upstream report"): the blobs of the table's Puffin files, and its
row count read by PyIceberg, by DuckDB, and by DuckDB with its external file
cache off (a new connection each).

Usage: duckdb_dv_repro.py WORK NAMESPACE.TABLE
  e.g. duckdb_dv_repro.py testing/interop/.deps/run go_icebergtest.v3_dv_big_first
"""
import glob
import json
import os
import sqlite3
import struct
import sys

import engines


def puffin_blobs(path):
    """(file size, [(offset, length, referenced data file)]) from the footer."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<i", b[-12:-8])[0]
    footer = json.loads(b[-12 - n:-12])
    return len(b), [(x["offset"], x["length"], os.path.basename(x["properties"]["referenced-data-file"]))
                     for x in footer["blobs"]]


def main():
    work, ident = sys.argv[1], sys.argv[2]
    db, _ = engines.paths(work)
    ns, name = ident.rsplit(".", 1)
    with sqlite3.connect(db) as s:
        meta = s.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?",
                         (ns, name)).fetchone()[0]
    with open(meta.removeprefix("file://")) as f:
        location = json.load(f)["location"].removeprefix("file://")
    for p in sorted(glob.glob(os.path.join(location, "data", "*.puffin"))):
        size, blobs = puffin_blobs(p)
        print("%s (%d bytes): blobs (offset, length, data file) %s" % (os.path.basename(p), size, blobs))
    print("pyiceberg:", len(engines.pyiceberg_reader(work)(ident)(None, ["id"])))
    print("duckdb:", len(engines.duckdb_reader(work)[0](ident)(None, ["id"])))
    print("duckdb, enable_external_file_cache = false:", duckdb_uncached(work, meta))


def duckdb_uncached(work, meta):
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for m in (duckdb_extension_avro, duckdb_extension_iceberg):
        con.execute("LOAD '%s'" % glob.glob(os.path.join(os.path.dirname(m.__file__), "extensions", "*",
                                                         "*.duckdb_extension"))[0])
    con.execute("SET enable_external_file_cache = false")
    return con.execute("SELECT count(*) FROM iceberg_scan('%s')" % meta.replace("'", "''")).fetchone()[0]


if __name__ == "__main__":
    main()
