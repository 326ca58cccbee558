"""Authorization as PyIceberg sees it (issue 5).

A principal created through the management API holds nothing until granted.
With DESCRIBE (on the warehouse, for all tables) it lists namespaces and
tables and loads metadata, but Floe vends it no storage credentials, so
reading data fails; the table's config says why. Granted SELECT, the same
principal reads the rows; it still cannot write. Revoking SELECT takes effect
on the next loadTable. The audit log records the denial.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pyarrow as pa
import pytest
from conftest import WAREHOUSE, RestError, floe_binary
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType(), required=False),
)
ROWS = pa.Table.from_pydict(
    {"id": [1, 2, 3], "region": ["EU", "US", "EU"]},
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string())]),
)


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


def _principal(floe, name):
    """Creates a non-admin principal; its client id and secret."""
    out = _admin(floe, "POST", "/principals", {"name": name})
    return out["client_id"], out["client_secret"]


def _grant(floe, name, privilege, on, **extra):
    body = {"grantee": {"kind": "principal", "name": name}, "privilege": privilege, "on": on}
    body.update(extra)
    return _admin(floe, "POST", "/grants", body)


def _no_file_access(tbl, why):
    """tbl came with no credential that reads: only a notice credential (issue
    17), whose use fails with the reason the config gives."""
    reason = tbl.io.properties["floe.storage-access"]
    assert reason.startswith("none: ") and why in reason, reason
    with pytest.raises(OSError, match=re.escape(why)):
        tbl.scan().to_arrow()


def test_describe_only_then_select(floe, unique):
    admin = floe.catalog("admin")
    ns = f"gov_{unique}"
    admin.create_namespace(ns)
    admin.create_table((ns, "accounts"), schema=SCHEMA).append(ROWS)

    name = f"fed-{unique}"
    cid, secret = _principal(floe, name)
    fed = floe.catalog("fed", credential=f"{cid}:{secret}")

    # Nothing granted: the error names the missing privilege.
    with pytest.raises(ForbiddenError, match=f'principal "{name}" lacks DESCRIBE on warehouse "{WAREHOUSE}"'):
        fed.list_namespaces()
    with pytest.raises(ForbiddenError, match=f'lacks DESCRIBE on table "{ns}.accounts"'):
        fed.load_table((ns, "accounts"))

    # DESCRIBE everywhere: discover and load metadata, no data.
    _grant(floe, name, "DESCRIBE", {"kind": "warehouse", "warehouse": WAREHOUSE}, all_tables=True)
    assert (ns,) in fed.list_namespaces()
    assert fed.list_tables(ns) == [(ns, "accounts")]
    tbl = fed.load_table((ns, "accounts"))
    assert tbl.schema() == admin.load_table((ns, "accounts")).schema()
    assert tbl.metadata.current_snapshot() is not None
    _no_file_access(tbl, f'principal "{name}" lacks SELECT on table "{ns}.accounts"')
    reason = tbl.io.properties["floe.storage-access"]
    assert f'principal "{name}" lacks SELECT on table "{ns}.accounts" (it has DESCRIBE)' in reason, reason
    with pytest.raises(OSError, match="(?i)access.?denied|forbidden|403"):
        tbl.scan().to_arrow()
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        tbl.append(ROWS)  # the data file upload is refused before any commit

    # SELECT on the table: it reads, still cannot write.
    g = _grant(floe, name, "SELECT", {"kind": "table", "warehouse": WAREHOUSE, "namespace": [ns], "name": "accounts"})
    tbl = fed.load_table((ns, "accounts"))
    assert tbl.io.properties.get("s3.access-key-id")
    got = tbl.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [1, 2, 3]
    assert got.column("region").to_pylist() == ["EU", "US", "EU"]
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        tbl.append(ROWS)  # read-only credentials
    assert len(admin.load_table((ns, "accounts")).scan().to_arrow()) == 3

    # Revoked: the next load gets no credentials again.
    _admin(floe, "DELETE", f"/grants/{g['id']}")
    tbl = fed.load_table((ns, "accounts"))
    _no_file_access(tbl, f'principal "{name}" lacks SELECT on table "{ns}.accounts"')


def test_data_filter_points_to_sql(floe, unique):
    admin = floe.catalog("admin")
    ns = f"flt_{unique}"
    admin.create_namespace(ns)
    admin.create_table((ns, "accounts"), schema=SCHEMA).append(ROWS)
    name = f"eu-{unique}"
    cid, secret = _principal(floe, name)
    fed = floe.catalog("eu", credential=f"{cid}:{secret}")
    _grant(floe, name, "SELECT", {"kind": "table", "warehouse": WAREHOUSE, "namespace": [ns], "name": "accounts"},
           filter={"row_filter": "region = 'EU'"})
    tbl = fed.load_table((ns, "accounts"))
    _no_file_access(tbl, "only through a data filter")
    reason = tbl.io.properties["floe.storage-access"]
    assert "only through a data filter" in reason and "SQL endpoint" in reason, reason
    with pytest.raises(RestError) as e:
        floe.request("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}/tables/accounts/credentials",
                     token=floe.fetch_token(cid, secret))
    assert e.value.status == 403 and "SQL endpoint" in e.value.body


def test_denials_are_audited(floe, unique):
    name = f"nosy-{unique}"
    cid, secret = _principal(floe, name)
    tok = floe.fetch_token(cid, secret)
    rid = f"audit-{unique}"
    with pytest.raises(RestError) as e:
        floe.request("GET", f"/v1/{WAREHOUSE}/namespaces", token=tok, headers={"X-Request-Id": rid})
    assert e.value.status == 403
    deadline = time.time() + 10
    while True:
        out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(floe.data_dir),
                              "--request-id", rid, "--json"], capture_output=True, text=True, timeout=60, check=True)
        recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        if recs or time.time() > deadline:
            break
        time.sleep(0.2)
    assert recs, "no audit record for the denied request"
    rec = recs[0]
    assert rec["action"] == "catalog.listNamespaces" and rec["outcome"] == "denied" and rec["principal"] == name
    assert "lacks DESCRIBE" in json.dumps(rec["detail"])
