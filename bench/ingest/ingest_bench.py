"""Floe ingest vs PyIceberg append of the same Arrow data, one run each.

Usage (from the repository root, with the interop virtualenv):
    FLOE_BIN=bin/floe .venv/bin/python bench/ingest/ingest_bench.py [ROWS]

Generates ROWS (default 5,000,000) rows x 10 columns with pyarrow, then on
one fresh `floe serve`:
  1. floe: `floe ingest` of the data as an Arrow IPC stream file (the file
     streams over HTTP to the server, which writes Parquet into the embedded
     store and commits one snapshot);
  2. pyiceberg: `table.append(arrow_table)` into a table of the same schema
     through Floe's REST catalog and embedded S3 (vended credentials).
Both times are wall-clock from the start of the call to the committed
snapshot; rows/s and the ratio floe/pyiceberg are printed. Both tables are
read back and their row counts checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "interop"))

import floe_server  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402


def data(n: int) -> pa.Table:
    ids = pa.array(range(n), pa.int64())
    return pa.table({
        "id": ids,
        "a": pc.multiply(ids, 3),
        "b": pc.cast(pc.divide(pc.cast(ids, pa.float64()), 7.0), pa.float64()),
        "c": pc.cast(pc.bit_wise_and(ids, 1023), pa.int32()),
        "d": pc.cast(pc.multiply(pc.cast(ids, pa.float64()), 0.5), pa.float32()),
        "e": pc.binary_join_element_wise(pa.scalar("user-"), pc.cast(pc.bit_wise_and(ids, 65535), pa.string()), ""),
        "f": pc.binary_join_element_wise(pa.scalar("k"), pc.cast(pc.bit_wise_and(ids, 15), pa.string()), ""),
        "g": pc.equal(pc.bit_wise_and(ids, 1), 0),
        "h": pc.cast(pc.add(pc.multiply(ids, 1_000_000), 1_767_225_600_000_000), pa.timestamp("us", tz="UTC")),
        "i": pc.cast(pc.bit_wise_and(ids, 4095), pa.int64()),
    })


class Server(floe_server.FloeServer):
    pass


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
    binary = floe_server.floe_binary()
    srv = Server(binary, "bench", client_prefix="bench-", dir_prefix="floe-bench-ingest-")
    srv.start()
    try:
        tbl = data(n)
        print(f"data: {n} rows x {tbl.num_columns} columns, {tbl.nbytes / 2**20:.0f} MiB in Arrow", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix="floe-bench-ingest-"))
        path = tmp / "data.arrows"
        with pa.ipc.new_stream(path, tbl.schema) as w:
            w.write_table(tbl, max_chunksize=65536)
        cat = RestCatalog("floe", uri=srv.uri, warehouse=floe_server.WAREHOUSE, credential=srv.credential,
                          **{"oauth2-server-uri": srv.token_url})
        cat.create_namespace("bench")

        env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
        env.update({"FLOE_URL": srv.uri, "FLOE_CREDENTIAL": srv.credential})
        t0 = time.perf_counter()
        p = subprocess.run([str(binary), "ingest", "--quiet", "bench.floe_ingest", str(path)], env=env, capture_output=True, text=True)
        floe_s = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(p.stderr)
        print(p.stdout.strip())

        t = cat.create_table("bench.pyiceberg_append", schema=tbl.schema)
        t0 = time.perf_counter()
        t.append(tbl)
        py_s = time.perf_counter() - t0

        for name in ("bench.floe_ingest", "bench.pyiceberg_append"):
            got = cat.load_table(name).scan(selected_fields=("id",)).to_arrow().num_rows
            assert got == n, (name, got)
        print(f"floe ingest:       {floe_s:8.2f} s  {n / floe_s:12,.0f} rows/s  (file {path.stat().st_size / 2**20:.0f} MiB over HTTP)")
        print(f"pyiceberg append:  {py_s:8.2f} s  {n / py_s:12,.0f} rows/s")
        print(f"ratio floe/pyiceberg: {py_s / floe_s:.2f}x")
    finally:
        srv.stop()
        srv.cleanup()


if __name__ == "__main__":
    main()
