"""The SQL endpoint's audit events, as psycopg produces them (issue 15, item 3).

A principal created through the management API logs in to the SQL endpoint
with its access token as the password. Every statement it runs is recorded
as a `sql.query` event that names the token it came with (token_id, as the
catalog's events do) and the principal's id. A statement refused for a
missing privilege (SQLSTATE 42501: SELECT without the SELECT grant, INSERT
without MODIFY, a file-reading function) is outcome `denied`, not `error`
or `failure`, and the event says what was missing. The log is read back
with `floe audit query`.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time

import psycopg
import pyarrow as pa
import pytest
from conftest import floe_binary

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


def _jwt_claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _sql_events(floe, principal: str, want: int) -> list[dict]:
    """The principal's sql.query records, oldest first, once at least want are stored."""
    deadline = time.time() + 15
    while True:
        out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(floe.data_dir),
                              "--principal", principal, "--action", "sql.query", "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        if len(recs) >= want or time.time() > deadline:
            return recs
        time.sleep(0.2)


def test_sql_events_carry_the_token_and_refusals_are_denied(floe, catalog, unique):
    ns = f"sqlaud_{unique}"
    catalog.create_namespace(ns)
    catalog.create_table((ns, "t"), schema=ROWS).append(
        pa.Table.from_pylist([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], schema=ROWS))
    name = f"sqlaud-{unique}"
    p = _admin(floe, "POST", "/principals", {"name": name})
    # DESCRIBE only: the table is visible, its rows are not.
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": name}, "privilege": "DESCRIBE",
                                     "on": {"kind": "table", "warehouse": "floe", "namespace": [ns], "name": "t"}})
    tok = floe.fetch_token(p["client_id"], p["client_secret"])
    claims = _jwt_claims(tok)
    token_id, principal_id = claims["jti"], claims["sub"]
    assert token_id and principal_id

    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=name, password=tok,
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        assert conn.execute("SELECT 41 + 1").fetchone() == (42,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT * FROM {ns}.t")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"INSERT INTO {ns}.t VALUES (3, 'c')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM read_csv('/etc/passwd')")

    recs = _sql_events(floe, name, 4)
    by_sql = {r["detail"]["sql"]: r for r in recs}
    assert len(by_sql) == 4, recs
    for r in recs:
        # Every sql.query event names the token and the principal, as the catalog's do.
        assert r["detail"].get("token_id") == token_id, r
        assert r["detail"].get("principal_id") == principal_id, r
    ok = by_sql["SELECT 41 + 1"]
    assert ok["outcome"] == "success", ok
    sel = by_sql[f"SELECT * FROM {ns}.t"]
    assert sel["outcome"] == "denied", sel
    assert sel["detail"].get("privilege") == "SELECT", sel
    assert "42501" in sel["detail"]["error"] and "lacks SELECT" in sel["detail"]["error"], sel
    ins = by_sql[f"INSERT INTO {ns}.t VALUES (3, 'c')"]
    assert ins["outcome"] == "denied", ins
    assert ins["detail"].get("privilege") == "MODIFY", ins
    f = by_sql["SELECT * FROM read_csv('/etc/passwd')"]
    assert f["outcome"] == "denied", f
    assert "42501" in f["detail"]["error"], f
