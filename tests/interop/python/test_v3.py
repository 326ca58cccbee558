"""Iceberg format version 3 written by Floe, read by PyIceberg.

PyIceberg creates a v3 table; `floe ingest` appends to it and the SQL
endpoint (psycopg) runs INSERT, UPDATE, DELETE and MERGE on it (these used
to answer "missing first_row_id which is required for v3"). After each,
PyIceberg reads the rows of an independent Python model and the table's
next-row-id covers every data file's row ids, which never overlap.

The table is merge-on-read for UPDATE and DELETE, so Floe writes deletion
vectors for those (PyIceberg 0.12 applies them), and copy-on-write for
MERGE, so that statement rewrites files. PyIceberg 0.12 does not expose a
data file's first_row_id, so the lineage checked here is the snapshots' and
the table's (tests/interop/spark/test_v3.py checks the files' with Spark).
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Optional

import psycopg
import pyarrow as pa
from floe_server import FloeServer, floe_binary
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

Row = tuple[int, Optional[str], Optional[int]]


def floe_cli(floe: FloeServer, *args: str, stdin: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    env.update({"FLOE_URL": floe.uri, "FLOE_CREDENTIAL": floe.credential})
    p = subprocess.run([str(floe_binary()), *args], input=stdin, capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, f"floe {' '.join(args)}: {p.stderr.decode()}"
    return p.stdout.decode()


def pyiceberg_rows(catalog: Any, ident: tuple[str, str]) -> list[Row]:
    t: pa.Table = catalog.load_table(ident).scan().to_arrow()
    return sorted(zip(t["id"].to_pylist(), t["name"].to_pylist(), t["qty"].to_pylist()))


def check_lineage(catalog: Any, ident: tuple[str, str], written: int) -> None:
    """The snapshots' row id ranges (first-row-id, added-rows) follow one
    another without overlap, and the table's next-row-id covers the rows
    written so far. (PyIceberg 0.12 does not expose a data file's
    first_row_id; Spark's check in tests/interop/spark/test_v3.py does.)"""
    tbl = catalog.load_table(ident)
    assert tbl.metadata.format_version == 3
    spans = sorted((s.first_row_id, s.first_row_id + s.added_rows) for s in tbl.metadata.snapshots
                   if s.first_row_id is not None and s.added_rows is not None)
    assert len(spans) == len(tbl.metadata.snapshots), "snapshots without first-row-id/added-rows"
    for (a, b), (c, _) in zip(spans, spans[1:]):
        assert b <= c, f"snapshot row id ranges overlap: [{a}, {b}) and [{c}, ...)"
    assert spans[-1][1] <= tbl.metadata.next_row_id
    assert tbl.metadata.next_row_id >= written


def test_floe_writes_v3_pyiceberg_reads(floe: FloeServer, catalog: Any, unique: str) -> None:
    ns = f"v3_{unique}"
    catalog.create_namespace(ns)
    ident = (ns, "t")
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "qty", LongType(), required=False))
    catalog.create_table(ident, schema=schema, properties={
        "format-version": "3", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
    model: dict[int, Row] = {i: (i, f"n{i}", i * 3) for i in range(1, 31)}
    csv = "id,name,qty\n" + "".join(f"{i},n{i},{i * 3}\n" for i in range(1, 31))
    floe_cli(floe, "ingest", "--quiet", "--mode", "append", f"{ns}.t", "-", stdin=csv.encode())

    written = 30  # rows written so far (every INSERT, UPDATE and MERGE writes more)

    def check(what: str) -> None:
        assert pyiceberg_rows(catalog, ident) == sorted(model.values()), f"PyIceberg after {what}"
        check_lineage(catalog, ident, written)

    check("floe ingest")
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                         password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        t = f"{ns}.t"
        conn.execute(f"INSERT INTO {t} VALUES (100, 'x', NULL)")
        model[100] = (100, "x", None)
        written += 1
        check("INSERT")
        conn.execute(f"UPDATE {t} SET qty = 0 WHERE id <= 5")
        for i in range(1, 6):
            model[i] = (i, model[i][1], 0)
        check("UPDATE")
        conn.execute(f"DELETE FROM {t} WHERE id > 25 AND id < 100")
        for i in range(26, 31):
            del model[i]
        check("DELETE")
        summary = catalog.load_table(ident).current_snapshot().summary
        assert int(summary["added-delete-files"]) >= 1, summary  # a deletion vector
        conn.execute(f"MERGE INTO {t} AS x USING (SELECT * FROM (VALUES (1, 'm'), (200, 'new')) AS v(id, name)) AS s ON x.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)")
        model[1] = (1, "m", 0)
        model[200] = (200, "new", None)
        check("MERGE")
    # A second `floe ingest` on top keeps numbering from next-row-id.
    floe_cli(floe, "ingest", "--quiet", "--mode", "append", f"{ns}.t", "-", stdin=b"id,name,qty\n300,late,1\n")
    model[300] = (300, "late", 1)
    written += 1
    check("second ingest")
