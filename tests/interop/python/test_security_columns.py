"""Data filters and column tags follow columns, not names (issue 14, leak 2).

An admin grants a principal SELECT with a data filter (excluded columns, a
row filter, included columns) or through a tag expression that leaves out a
column tagged sensitivity=high. The table's owner then changes the schema
with PyIceberg's update_schema(): renames the hidden column, or drops the
row filter's column and adds a new one of the same name. The filtered
principal reads through psycopg (the SQL endpoint) and POST /api/v1/query:
the hidden values stay hidden, and the filter whose column is gone fails
closed with SQLSTATE 42501 naming the grant and the column.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request

import psycopg
import pyarrow as pa
import pytest
from conftest import WAREHOUSE, RestError, floe_binary
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "region", StringType(), required=False),
    NestedField(4, "email", StringType(), required=False),
    NestedField(5, "ssn", StringType(), required=False),
)
ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("region", pa.string()),
    pa.field("email", pa.string()),
    pa.field("ssn", pa.string()),
])
ROWS = pa.Table.from_pylist([
    {"id": i, "name": f"person-{i}", "region": "eu" if i % 2 else "us",
     "email": f"secret-mail-{i}@x", "ssn": f"secret-ssn-{i}"} for i in range(1, 9)
], schema=ARROW)


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


def _principal(floe, name):
    out = _admin(floe, "POST", "/principals", {"name": name})
    return floe.fetch_token(out["client_id"], out["client_secret"])


def _table_on(ns, name):
    return {"kind": "table", "warehouse": WAREHOUSE, "namespace": [ns], "name": name}


def _psql(floe, user, token, sql):
    """Rows and column names through psycopg, or raises its error."""
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=user, password=token,
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall(), [d.name for d in cur.description]


def _http(floe, token, sql):
    """The NDJSON rows of POST /api/v1/query, or RestError."""
    req = urllib.request.Request(floe.uri + "/api/v1/query", method="POST",
                                 data=json.dumps({"sql": sql, "format": "ndjson"}).encode(),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
    except urllib.error.HTTPError as e:
        raise RestError(e.code, e.read().decode()) from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def people(floe, catalog, unique):
    ns = f"cols_{unique}"
    catalog.create_namespace(ns)
    tbl = catalog.create_table((ns, "people"), schema=SCHEMA)
    tbl.append(ROWS)
    return ns, tbl


def _reads(floe, user, token, ns):
    """What user reads of ns.people through both endpoints, as text."""
    rows, cols = _psql(floe, user, token, f"SELECT * FROM {ns}.people ORDER BY id")
    http = _http(floe, token, f"SELECT * FROM {ns}.people ORDER BY id")
    return repr(rows) + repr(http), cols, rows, http


def test_renamed_excluded_column_stays_hidden(floe, people, unique):
    ns, tbl = people
    user = f"noemail-{unique}"
    token = _principal(floe, user)
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                     "on": _table_on(ns, "people"), "filter": {"exclude_columns": ["email"]}})
    text, cols, _, _ = _reads(floe, user, token, ns)
    assert "secret-mail" not in text and "email" not in cols
    with tbl.update_schema() as u:
        u.rename_column("email", "contact")
    text, cols, rows, http = _reads(floe, user, token, ns)
    assert "secret-mail" not in text, text
    assert cols == ["id", "name", "region", "ssn"], cols
    assert len(rows) == 8 and len(http) == 8


def test_renamed_tagged_column_stays_hidden(floe, people, unique):
    ns, tbl = people
    user = f"lowonly-{unique}"
    token = _principal(floe, user)
    on = _table_on(ns, "people")
    _admin(floe, "PUT", "/tags", {"target": {"on": on}, "tags": {"sens": f"low{unique}"}})
    _admin(floe, "PUT", "/tags", {"target": {"on": on, "column": "ssn"}, "tags": {"sens": "high"}})
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                     "on": {"kind": "warehouse", "warehouse": WAREHOUSE},
                                     "tag_expression": f"sens = low{unique}"})
    with tbl.update_schema() as u:
        u.rename_column("ssn", "tax_id")
    text, cols, rows, _ = _reads(floe, user, token, ns)
    assert "secret-ssn" not in text, text
    assert "tax_id" not in cols and len(rows) == 8, cols


def test_row_filter_column_dropped_and_readded_fails_closed(floe, catalog, people, unique):
    ns, tbl = people
    user = f"euonly-{unique}"
    token = _principal(floe, user)
    g = _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                         "on": _table_on(ns, "people"), "filter": {"row_filter": "region = 'eu'"}})
    rows, _ = _psql(floe, user, token, f"SELECT id FROM {ns}.people ORDER BY id")
    assert [r[0] for r in rows] == [1, 3, 5, 7]
    # Drop it and add a new "region" where every row is eu.
    with tbl.update_schema() as u:
        u.delete_column("region")
    with tbl.update_schema() as u:
        u.add_column("region", StringType())
    tbl = catalog.load_table((ns, "people"))
    tbl.overwrite(pa.Table.from_pylist([
        {"id": i, "name": f"person-{i}", "email": f"secret-mail-{i}@x", "ssn": f"secret-ssn-{i}", "region": "eu"}
        for i in range(1, 9)], schema=tbl.schema().as_arrow()))
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
        _psql(floe, user, token, f"SELECT id FROM {ns}.people")
    msg = str(e.value)
    assert "no longer exists" in msg and '"region"' in msg and g["id"] in msg, msg
    with pytest.raises(RestError) as he:
        _http(floe, token, f"SELECT id FROM {ns}.people")
    assert he.value.status == 403 and "no longer exists" in he.value.body, he.value.body
    # The grantor is told: an audit event names the grant and the column.
    deadline = time.time() + 10
    while True:
        out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(floe.data_dir),
                              "--action", "authz.filter_broken", "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        recs = [r for r in recs if r["detail"].get("grant") == g["id"]]
        # Two kinds: the commit that broke the filter ("by": "commit") and
        # each read refused through it (naming the column).
        reads = [r for r in recs if "column" in r["detail"]]
        if reads or time.time() > deadline:
            break
        time.sleep(0.2)
    assert any(r["detail"].get("by") == "commit" for r in recs), recs
    assert reads, "no authz.filter_broken audit event of a refused read"
    assert reads[0]["detail"]["column"] == "region" and reads[0]["outcome"] == "failure", reads[0]
    # And the grant listing says what is wrong with the grant.
    listed = _admin(floe, "GET", f"/grants?grantee_kind=principal&grantee={user}")["grants"]
    assert len(listed) == 1 and listed[0]["id"] == g["id"], listed
    assert any('"region"' in w for w in listed[0].get("warnings", [])), listed[0]


def test_row_filter_follows_renamed_column(floe, people, unique):
    ns, tbl = people
    user = f"eurename-{unique}"
    token = _principal(floe, user)
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                     "on": _table_on(ns, "people"), "filter": {"row_filter": "region = 'eu'"}})
    with tbl.update_schema() as u:
        u.rename_column("region", "area")
    rows, _ = _psql(floe, user, token, f"SELECT id, area FROM {ns}.people ORDER BY id")
    assert rows == [(1, "eu"), (3, "eu"), (5, "eu"), (7, "eu")]
    assert [r["id"] for r in _http(floe, token, f"SELECT id FROM {ns}.people ORDER BY id")] == [1, 3, 5, 7]


def test_included_columns_follow_renames_not_additions(floe, people, unique):
    ns, tbl = people
    user = f"names-{unique}"
    token = _principal(floe, user)
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                     "on": _table_on(ns, "people"), "filter": {"include_columns": ["id", "name"]}})
    with tbl.update_schema() as u:
        u.rename_column("name", "full_name")
    with tbl.update_schema() as u:
        u.rename_column("ssn", "name")  # the hidden column under an included name
    with tbl.update_schema() as u:
        u.add_column("phone", StringType())
    text, cols, rows, _ = _reads(floe, user, token, ns)
    assert cols == ["id", "full_name"], cols
    assert "secret" not in text and len(rows) == 8, text


def test_namespace_grant_survives_rename_and_schema_removal(floe, catalog, people, unique):
    ns, tbl = people
    user = f"nsnomail-{unique}"
    token = _principal(floe, user)
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": user}, "privilege": "SELECT",
                                     "on": {"kind": "namespace", "warehouse": WAREHOUSE, "namespace": [ns]},
                                     "all_tables": True, "filter": {"exclude_columns": ["email"]}})
    # No read before the rename; then every trace of the old name goes.
    with tbl.update_schema() as u:
        u.rename_column("email", "contact")
    tbl = catalog.load_table((ns, "people"))
    tbl.overwrite(tbl.scan().to_arrow())
    tbl = catalog.load_table((ns, "people"))
    cur = tbl.metadata.current_schema_id
    current_snapshot = tbl.metadata.current_snapshot_id
    old_snaps = [s.snapshot_id for s in tbl.metadata.snapshots if s.snapshot_id != current_snapshot]
    old_schemas = [s.schema_id for s in tbl.metadata.schemas if s.schema_id != cur]
    path = f"/v1/{WAREHOUSE}/namespaces/{ns}/tables/people"
    floe.request("POST", path, token=floe.fetch_token(), body={"requirements": [], "updates": [
        {"action": "remove-snapshots", "snapshot-ids": old_snaps},
        {"action": "remove-schemas", "schema-ids": old_schemas}]})
    assert len(catalog.load_table((ns, "people")).metadata.schemas) == 1
    text, cols, rows, _ = _reads(floe, user, token, ns)
    assert "secret-mail" not in text and "contact" not in cols and len(rows) == 8, text
