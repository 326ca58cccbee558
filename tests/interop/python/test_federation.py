"""Issue 19, Data In (first slice): a Floe serves another Iceberg REST
catalog (here a second Floe) as a warehouse of its own, read in place and
governed by its own grants.

- The remote (the suite's shared server) holds a table written by PyIceberg.
- A local Floe is started with FLOE_FEDERATED_CATALOGS naming the remote as
  the foreign catalog "acme" (OAuth2 client credentials; the secret in an
  environment variable, never in the configuration).
- PyIceberg with only a credential of the local Floe lists the remote's
  namespace and reads the table row for row, with the credentials the
  remote vended, passed through because the caller may SELECT it.
- A local principal with no grant on acme sees nothing and gets 403; one
  with DESCRIBE only loads the metadata without credentials; writes are
  refused; with the remote stopped the local Floe answers 503 naming it.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from conftest import FloeServer, RestError, _finish, _start_server, floe_binary


class _FederatingFloe(FloeServer):
    def __init__(self, remote: FloeServer) -> None:
        super().__init__(floe_binary(), "federating")
        self.remote = remote

    def extra_env(self) -> dict[str, str]:
        return {
            "FLOE_FEDERATED_CATALOGS": json.dumps([{
                "name": "acme", "uri": self.remote.uri, "warehouse": "floe", "auth": "oauth2",
                "client_id": self.remote.client_id, "client_secret_env": "ACME_CATALOG_SECRET"}]),
            "ACME_CATALOG_SECRET": self.remote.client_secret,
        }


@pytest.fixture(scope="module")
def local(floe, request):
    srv = _FederatingFloe(floe)
    _start_server(srv)
    yield srv
    _finish(srv, request)


@pytest.fixture(scope="module")
def remote_table(floe):
    cat = floe.catalog()
    ns = "fed_remote"
    cat.create_namespace_if_not_exists(ns)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    tbl = cat.create_table_if_not_exists(f"{ns}.customers", schema=schema)
    tbl.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    return ns, cat.load_table(f"{ns}.customers").scan().to_arrow().sort_by("id")


def test_pyiceberg_reads_a_foreign_catalog_in_place(local, remote_table):
    ns, want = remote_table
    cat = local.catalog(warehouse="acme")
    assert (ns,) in cat.list_namespaces()
    assert (ns, "customers") in cat.list_tables(ns)
    got = cat.load_table(f"{ns}.customers").scan().to_arrow().sort_by("id")
    assert got.equals(want)
    # Nothing was copied: the metadata is the remote's own file.
    remote_loc = local.remote.catalog().load_table(f"{ns}.customers").metadata_location
    assert cat.load_table(f"{ns}.customers").metadata_location == remote_loc
    # Writes: PyIceberg refuses them itself (the config lists read
    # endpoints only), and the server refuses a client that sends one.
    with pytest.raises(Exception, match="(?i)does not support endpoint|read-only|forbidden"):
        cat.create_namespace("made_here")
    with pytest.raises(RestError) as e:
        local.request("POST", "/v1/acme/namespaces", token=local.fetch_token(), body={"namespace": ["made_here"]})
    assert e.value.status == 403 and "read-only" in e.value.body


def test_floe_grants_govern_the_foreign_catalog(local, remote_table):
    ns, _ = remote_table
    admin = local.fetch_token()
    users = {}
    for name in ("fed_none", "fed_describe"):
        created = local.request("POST", "/api/v1/principals", token=admin, body={"name": name})
        users[name] = local.fetch_token(created["client_id"], created["client_secret"])
    local.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": "fed_describe"}, "privilege": "DESCRIBE",
        "on": {"kind": "table", "warehouse": "acme", "namespace": [ns], "name": "customers"}})
    path = f"/v1/acme/namespaces/{ns}/tables/customers"
    with pytest.raises(RestError) as e:
        local.request("GET", path, token=users["fed_none"])
    assert e.value.status == 403
    res = local.request("GET", path, token=users["fed_describe"])
    assert "s3.access-key-id" not in res["config"] and not res.get("storage-credentials")
    assert "SELECT" in res["config"]["floe.credentials"]
    with pytest.raises(RestError) as e:
        local.request("GET", path + "/credentials", token=users["fed_describe"])
    assert e.value.status == 403 and "SELECT" in e.value.body


def _sql(srv: FloeServer, user: str, token: str):
    import psycopg
    return psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname="floe", user=user, password=token,
                           sslmode="disable", connect_timeout=10, autocommit=True)


def test_sql_endpoint_joins_a_foreign_table_with_a_local_one(local, remote_table):
    """The seed's scenario: CRM tables of the local Floe joined in Floe's SQL
    endpoint (psycopg) with a table the remote holds, read in place; Floe's
    grants decide who may read it, and it stays read-only."""
    import psycopg
    ns, want = remote_table
    admin = local.fetch_token()
    with _sql(local, "admin", admin) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS fed_crm")
        conn.execute("CREATE TABLE fed_crm.orders (customer_id BIGINT, amount BIGINT)")
        conn.execute("INSERT INTO fed_crm.orders VALUES (1, 100), (3, 30), (3, 5), (9, 900)")
        rows = conn.execute(
            f"SELECT c.id, c.name, sum(o.amount) FROM acme.{ns}.customers c "
            "JOIN fed_crm.orders o ON o.customer_id = c.id GROUP BY c.id, c.name ORDER BY c.id").fetchall()
        assert rows == [(1, "a", 100), (3, "c", 35)]
        # Every row of the remote table, as PyIceberg reads it from the remote.
        got = conn.execute(f"SELECT id, name FROM acme.{ns}.customers ORDER BY id").fetchall()
        assert got == list(zip(want.column("id").to_pylist(), want.column("name").to_pylist()))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="read-only"):
            conn.execute(f"INSERT INTO acme.{ns}.customers VALUES (4, 'd')")
    # A principal with SELECT on the local table only: the foreign one is
    # refused naming the missing privilege, and the remote is not asked.
    created = local.request("POST", "/api/v1/principals", token=admin, body={"name": "fed_sql_orders_only"})
    local.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": "fed_sql_orders_only"}, "privilege": "SELECT",
        "on": {"kind": "table", "warehouse": "floe", "namespace": ["fed_crm"], "name": "orders"}})
    token = local.fetch_token(created["client_id"], created["client_secret"])
    with _sql(local, "fed_sql_orders_only", token) as conn:
        assert conn.execute("SELECT count(*) FROM fed_crm.orders").fetchone() == (4,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="SELECT"):
            conn.execute(f"SELECT * FROM acme.{ns}.customers")


def test_pyiceberg_remote_signing_through_a_foreign_catalog(local, remote_table):
    """A PyIceberg client that asks for remote signing (no keys) reads the
    foreign table with every S3 request signed by the local Floe's signer,
    which checks its grants and has the remote's signer sign with Floe's
    identity; the remote's signer and Floe's identity never reach it."""
    ns, want = remote_table
    cat = local.catalog("signing", warehouse="acme", **{
        "header.X-Iceberg-Access-Delegation": "remote-signing",
        "py-io-impl": "signing_io.SessionSignedFsspecFileIO",
    })
    tbl = cat.load_table(f"{ns}.customers")
    props = tbl.io.properties
    assert props.get("s3.remote-signing-enabled") == "true"
    assert props.get("s3.signer.uri", "").rstrip("/") == local.uri
    assert not props.get("s3.access-key-id") and not props.get("s3.secret-access-key")
    assert tbl.scan().to_arrow().sort_by("id").equals(want)
