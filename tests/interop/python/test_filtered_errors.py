"""Grants validated when given, and filtered principals told why (issue 17, part D).

- The demo's crm.accounts has the columns the docs' governance examples use
  (region, email, phone).
- A grant whose data filter names a column the table does not have is
  refused when it is made, by the management API (400 ErrorModel naming the
  column) and by `floe grant`; a row filter that is not one SQL expression
  likewise.
- A column a filter uses that is dropped later makes the grant "BROKEN" in
  `floe grants` and in the API listing's warnings, and the grantee's SQL read
  fails closed with a message naming the grant and column.
- A principal with a data filter reading through PyIceberg gets an error that
  says why (the filter) and where to read instead (the SQL endpoint), not a
  bare ACCESS_DENIED.
"""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest
from conftest import WAREHOUSE, RestError, floe_binary


def _admin(srv, method, path, body=None):
    return srv.request(method, "/api/v1" + path, body=body, token=srv.fetch_token())


def _principal(srv, name):
    out = _admin(srv, "POST", "/principals", {"name": name})
    return out["client_id"], out["client_secret"]


def _on(table):
    ns, name = table.split(".")
    return {"kind": "table", "warehouse": WAREHOUSE, "namespace": [ns], "name": name}


def _grant(srv, name, table, flt):
    return _admin(srv, "POST", "/grants", {"grantee": {"kind": "principal", "name": name},
                                           "privilege": "SELECT", "on": _on(table), "filter": flt})


def _floe(srv, *args):
    return subprocess.run([str(floe_binary()), *args, "--data-dir", str(srv.data_dir), "--log-level", "error"],
                          capture_output=True, text=True, timeout=60)


def test_demo_has_the_documented_columns(floe_demo):
    tbl = floe_demo.catalog().load_table("crm.accounts")
    names = [f.name for f in tbl.schema().fields]
    for col in ("account_id", "name", "industry", "country", "annual_revenue", "region", "email", "phone"):
        assert col in names, names
    rows = tbl.scan(selected_fields=("country", "region", "email")).to_arrow().to_pylist()
    assert len(rows) == 500
    assert {r["region"] for r in rows} == {"EMEA", "AMER", "APAC"}
    assert all(r["email"].endswith(".example.com") for r in rows)
    assert all(r["region"] == "EMEA" for r in rows if r["country"] in ("DE", "FR", "GB", "NL"))


@pytest.mark.parametrize("flt,want", [
    ({"row_filter": "territory = 'EMEA'"}, 'the row filter refers to column "territory", which is not a column of table "crm.accounts"'),
    ({"row_filter": "region = 'EMEA' AND nosuch > 1"}, 'column "nosuch"'),
    ({"exclude_columns": ["email", "ssn"]}, 'the filter excludes column "ssn"'),
    ({"include_columns": ["name", "revenue"]}, 'the filter includes column "revenue"'),
    ({"row_filter": "region = 'EMEA'); DROP TABLE t; --"}, "not valid SQL"),
    ({"row_filter": "region IN (SELECT region FROM crm.accounts)"}, "subquery"),
])
def test_grant_with_unknown_column_refused(floe_demo, flt, want):
    name = "val-" + str(abs(hash(str(flt))))[:8]
    with pytest.raises(RestError) as ei:
        _grant(floe_demo, name, "crm.accounts", flt)
    assert ei.value.status == 400, ei.value
    err = json.loads(ei.value.body)["error"]
    assert want in err["message"] and err["type"] == "BadRequestException", err
    # Nothing was stored.
    grants = _admin(floe_demo, "GET", "/grants", None)["grants"]
    assert not [g for g in grants if g["grantee"]["name"] == name], grants


def test_cli_grant_with_unknown_column_refused(floe_demo):
    out = _floe(floe_demo, "grant", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "cli-val",
                "--row-filter", "territory = 'EMEA'")
    assert out.returncode != 0, out
    assert 'the row filter refers to column "territory"' in out.stderr and "its columns: account_id" in out.stderr, out.stderr
    ok = _floe(floe_demo, "grant", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "cli-val",
               "--row-filter", "region = 'EMEA'", "--exclude-columns", "email,phone")
    assert ok.returncode == 0, ok


def test_dropped_filter_column_reported_broken(floe_demo):
    admin = floe_demo.catalog()
    src = admin.load_table("crm.accounts")
    # A copy of the table to change the schema of, so other tests keep theirs.
    tbl = admin.create_table("crm.accounts_broken", schema=src.schema())
    tbl.append(src.scan().to_arrow())
    cid, secret = _principal(floe_demo, "emea-broken")
    _grant(floe_demo, "emea-broken", "crm.accounts_broken", {"row_filter": "region = 'EMEA'"})
    token = floe_demo.fetch_token(cid, secret)
    with psycopg.connect(host="127.0.0.1", port=floe_demo.sql_port, user="emea-broken", password=token,
                         dbname=WAREHOUSE, sslmode="disable", autocommit=True) as conn:
        n = conn.execute("SELECT count(*) FROM crm.accounts_broken").fetchone()[0]
        assert 0 < n < 500
        with tbl.update_schema() as upd:
            upd.delete_column("region")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match='refers to column "region", which no longer exists'):
            conn.execute("SELECT count(*) FROM crm.accounts_broken")
    listing = _floe(floe_demo, "grants", "--grantee", "emea-broken")
    assert listing.returncode == 0, listing
    assert "BROKEN" in listing.stdout and 'column "region"' in listing.stdout, listing.stdout
    api = [g for g in _admin(floe_demo, "GET", "/grants", None)["grants"] if g["grantee"]["name"] == "emea-broken"]
    assert len(api) == 1 and any('"region"' in w for w in api[0].get("warnings", [])), api


def test_filtered_principal_pyiceberg_error_says_why(floe_demo):
    cid, secret = _principal(floe_demo, "emea-py")
    _grant(floe_demo, "emea-py", "crm.accounts", {"row_filter": "region = 'EMEA'", "exclude_columns": ["email"]})
    cat = floe_demo.catalog("emea", credential=f"{cid}:{secret}")
    tbl = cat.load_table("crm.accounts")
    # The loadTable config says it, with the address to read at.
    assert f"127.0.0.1:{floe_demo.sql_port}" in tbl.io.properties.get("floe.read-path", ""), tbl.io.properties
    with pytest.raises(OSError) as ei:
        tbl.scan().to_arrow()
    msg = str(ei.value)
    assert "only through a data filter" in msg, msg
    assert f"SQL endpoint at 127.0.0.1:{floe_demo.sql_port}" in msg, msg
    # And the SQL endpoint does serve it, filtered.
    token = floe_demo.fetch_token(cid, secret)
    with psycopg.connect(host="127.0.0.1", port=floe_demo.sql_port, user="emea-py", password=token,
                         dbname=WAREHOUSE, sslmode="disable", autocommit=True) as conn:
        rows = conn.execute("SELECT DISTINCT region FROM crm.accounts").fetchall()
        assert rows == [("EMEA",)]
