"""Issue 19, Data In, against a third-party catalog: Apache Iceberg's REST
fixture server (restfixture.py; in-memory JDBC catalog, warehouse in a
local directory) federated by a Floe as the foreign catalog "fixture".

- PyIceberg writes a table into the fixture directly.
- PyIceberg with only a Floe credential lists the fixture's namespace and
  reads the table in place, row for row; the metadata is the fixture's own
  file.
- The fixture vends no storage credentials, so Floe vends none and says so
  in the table config; Floe's SQL endpoint refuses to read the table
  rather than use any storage identity of its own.
- Floe's grants govern: a principal with no grant sees nothing (403), one
  with DESCRIBE loads the metadata; writes are refused.
"""
from __future__ import annotations

import json

import psycopg
import pyarrow as pa
import pytest
from conftest import FloeServer, RestError, _finish, _start_server, floe_binary
from pyiceberg.catalog import load_catalog

NS = "fed_fx"


class _FixtureFloe(FloeServer):
    def __init__(self, uri: str) -> None:
        super().__init__(floe_binary(), "fixture-federating")
        self.fixture_uri = uri

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_FEDERATED_CATALOGS": json.dumps([{"name": "fixture", "uri": self.fixture_uri, "auth": "none"}])}


@pytest.fixture(scope="module")
def written(rest_fixture):
    cat = load_catalog("fx", type="rest", uri=rest_fixture.uri)
    cat.create_namespace_if_not_exists(NS)
    schema = pa.schema([("id", pa.int64()), ("kind", pa.string())])
    tbl = cat.create_table_if_not_exists(f"{NS}.events", schema=schema)
    tbl.append(pa.table({"id": [1, 2, 3], "kind": ["open", "click", "close"]}, schema=schema))
    tbl = cat.load_table(f"{NS}.events")
    return tbl.metadata_location, tbl.scan().to_arrow().sort_by("id")


@pytest.fixture(scope="module")
def local(rest_fixture, request):
    srv = _FixtureFloe(rest_fixture.uri)
    _start_server(srv)
    yield srv
    _finish(srv, request)


def test_pyiceberg_reads_the_fixture_through_floe(local, written):
    metadata_location, want = written
    cat = local.catalog(warehouse="fixture")
    assert (NS,) in cat.list_namespaces()
    assert (NS, "events") in cat.list_tables(NS)
    tbl = cat.load_table(f"{NS}.events")
    assert tbl.metadata_location == metadata_location  # the fixture's own file: nothing copied
    assert tbl.scan().to_arrow().sort_by("id").equals(want)
    raw = local.request("GET", f"/v1/fixture/namespaces/{NS}/tables/events", token=local.fetch_token())
    assert "vended no storage credentials" in raw["config"]["floe.credentials"]
    assert not raw.get("storage-credentials")
    with pytest.raises(RestError) as e:
        local.request("POST", f"/v1/fixture/namespaces/{NS}/tables", token=local.fetch_token(),
                      body={"name": "made_here", "schema": {"type": "struct", "fields": []}})
    assert e.value.status == 403 and "read-only" in e.value.body


def test_floe_grants_govern_the_fixture(local, written):
    admin = local.fetch_token()
    tokens = {}
    for name in ("fx_none", "fx_describe"):
        created = local.request("POST", "/api/v1/principals", token=admin, body={"name": name})
        tokens[name] = local.fetch_token(created["client_id"], created["client_secret"])
    local.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": "fx_describe"}, "privilege": "DESCRIBE",
        "on": {"kind": "table", "warehouse": "fixture", "namespace": [NS], "name": "events"}})
    for path in ("/v1/fixture/namespaces", f"/v1/fixture/namespaces/{NS}/tables/events"):
        with pytest.raises(RestError) as e:
            local.request("GET", path, token=tokens["fx_none"])
        assert e.value.status == 403
    res = local.request("GET", f"/v1/fixture/namespaces/{NS}/tables/events", token=tokens["fx_describe"])
    assert res["metadata"]["table-uuid"] and not res.get("storage-credentials")


def test_sql_endpoint_refuses_a_table_without_vended_credentials(local, written):
    with psycopg.connect(host="127.0.0.1", port=local.sql_port, dbname="floe", user="admin",
                         password=local.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(f"SELECT count(*) FROM fixture.{NS}.events")
        # The fixture's warehouse is a local directory, with no credential:
        # Floe reads foreign files only on S3 with what the remote vends.
        assert "fixture" in str(e.value) and ("S3 only" in str(e.value) or "vended no storage credentials" in str(e.value))
        assert conn.execute("SELECT 1").fetchone() == (1,)
