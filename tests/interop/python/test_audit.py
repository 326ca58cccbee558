"""system.audit: Floe's audit log as an Iceberg table, read with PyIceberg.

A dedicated server exports its audit log every second
(FLOE_AUDIT_EXPORT_INTERVAL=1s). After some activity, each request tagged
with its own request id (a token, a refused token, a table load that vends
credentials, an S3 PUT with the vended credential, and a PyIceberg append),
the admin reads system.audit with PyIceberg as any table: the activity's
records are there under their request ids, and seq runs from 1 without a gap
or a repeat.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import urllib.parse
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

import floe_server
from conftest import WAREHOUSE, FloeServer, RestError, _finish, floe_binary, s3_client, table_path

EXPORT_TIMEOUT = 60.0  # seconds for the export to catch up on a slow box


class AuditFloe(FloeServer):
    """A server that exports its audit log every second."""

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_AUDIT_EXPORT_INTERVAL": "1s"}


@pytest.fixture(scope="module")
def audit_floe(request: pytest.FixtureRequest):
    binary = floe_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    srv = AuditFloe(binary, "audit")
    floe_server.servers.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    yield srv
    _finish(srv, request)


def rid(tag: str) -> str:
    return f"audit-{tag}-{secrets.token_hex(6)}"


def token_request(srv: FloeServer, request_id: str, secret: str) -> int:
    """A client-credentials token request with our request id; its HTTP status."""
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": srv.client_id,
                                   "client_secret": secret, "scope": "catalog"}).encode()
    req = urllib.request.Request(srv.token_url, data=form, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Request-Id": request_id})
    try:
        floe_server.send(req)
        return 200
    except RestError as e:
        return e.status


def test_system_audit_readable_with_pyiceberg(audit_floe: FloeServer) -> None:
    srv = audit_floe
    cat: RestCatalog = srv.catalog()
    ns = (f"aud_{secrets.token_hex(4)}",)
    cat.create_namespace(ns)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    tbl = cat.create_table(ns + ("t",), schema=schema)
    tbl.append(pa.Table.from_pylist([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], schema=schema))

    ok_rid, bad_rid, load_rid = rid("token"), rid("refused"), rid("load")
    assert token_request(srv, ok_rid, srv.client_secret) == 200
    assert token_request(srv, bad_rid, "not-the-secret") == 401
    loaded = srv.request("GET", table_path(ns, "t"), token=srv.fetch_token(), headers={"X-Request-Id": load_rid})
    cfg = loaded["config"]
    assert cfg.get("s3.secret-access-key"), "no credential was vended"
    put = s3_client(cfg).put_object(Bucket=WAREHOUSE, Key=loaded["metadata"]["location"].split(f"s3://{WAREHOUSE}/", 1)[1]
                                    + "/data/audit-probe.txt", Body=b"probe")
    s3_rid = put["ResponseMetadata"]["RequestId"]
    assert s3_rid

    expected = {
        ok_rid: ("oauth.token", "success"),
        bad_rid: ("oauth.token", "failure"),
        load_rid: ("storage.credentials.vend", "success"),
        s3_rid: ("s3.PutObject", "success"),
    }
    admin = srv.catalog()  # a fresh catalog as the bootstrap admin
    deadline = time.monotonic() + EXPORT_TIMEOUT
    rows: list[dict] = []
    while True:
        try:
            audit = admin.load_table("system.audit")
            rows = audit.scan().to_arrow().to_pylist()
            found = {r["request_id"] for r in rows}
            if all(r in found for r in expected):
                break
        except Exception as e:  # not created yet: NoSuchTableError
            if "NoSuchTable" not in type(e).__name__ and "does not exist" not in str(e):
                raise
        if time.monotonic() > deadline:
            pytest.fail(f"system.audit did not show the activity within {EXPORT_TIMEOUT:.0f}s; "
                        f"{len(rows)} rows, missing {[r for r in expected if r not in {x['request_id'] for x in rows}]}")
        time.sleep(0.5)

    by_rid = {}
    for r in rows:
        by_rid.setdefault(r["request_id"], []).append(r)
    for request_id, (action, outcome) in expected.items():
        assert any(r["action"] == action and r["outcome"] == outcome for r in by_rid[request_id]), \
            (request_id, action, outcome, by_rid[request_id])
    vend = next(r for r in by_rid[load_rid] if r["action"] == "storage.credentials.vend")
    assert vend["principal"] == "admin"
    assert vend["resource"].endswith(f"{ns[0]}.t"), vend["resource"]
    detail = json.loads(vend["detail"])
    assert detail["access_key_id"] == cfg["s3.access-key-id"]
    assert cfg["s3.secret-access-key"] not in vend["detail"]
    put_row = next(r for r in by_rid[s3_rid] if r["action"] == "s3.PutObject")
    assert put_row["resource"].endswith("/data/audit-probe.txt")

    # seq is contiguous from 1: every record once, none missing.
    seqs = sorted(r["seq"] for r in rows)
    assert seqs == list(range(1, len(seqs) + 1)), f"seq is not 1..{len(seqs)}: {seqs[:5]}...{seqs[-5:]}"
    # Each record links to the one before it.
    ordered = sorted(rows, key=lambda r: r["seq"])
    assert ordered[0]["prev_hash"] == ""
    assert all(b["prev_hash"] == a["hash"] for a, b in zip(ordered, ordered[1:]))

    # The table is a real Iceberg table: schema and day partitioning.
    fields = {f.name: f for f in audit.schema().fields}
    assert fields["seq"].required and str(fields["seq"].field_type) == "long"
    assert str(fields["time"].field_type) == "timestamptz"
    assert [f.transform.__class__.__name__ for f in audit.spec().fields] == ["DayTransform"]
    # The watermark of the snapshot read is its last row.
    assert audit.current_snapshot().summary["floe.audit.last-seq"] == str(seqs[-1])
