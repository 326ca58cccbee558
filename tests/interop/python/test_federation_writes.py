"""Issue 19, Data In: writes forwarded to a foreign catalog, when its
writes are explicitly enabled.

- The remote (the suite's shared server) has two principals for the local
  Floe: fedw-reader (DESCRIBE and SELECT on its tables) and fedw-writer
  (also MODIFY, CREATE_NAMESPACE, CREATE_TABLE).
- A local Floe is started with FLOE_FEDERATED_CATALOGS naming the remote as
  "acme" with `writes: true`: reads use the reader's client, writes the
  writer's (write_client_id, write_client_secret_env), secrets in the
  environment.
- A local principal allowed only CREATE_NAMESPACE on acme creates a
  namespace and a table with PyIceberg through the local Floe and appends
  rows; PyIceberg on the remote reads them back.
- A local principal with SELECT only gets the reader's vended credentials,
  never the writer's (their access key ids differ), and those cannot write
  to the table's storage; its commit is refused in Floe naming MODIFY.
"""

from __future__ import annotations

import json

import botocore.exceptions
import pyarrow as pa
import pytest
from conftest import FloeServer, RestError, _finish, _start_server, floe_binary, s3_client


def _principal(srv: FloeServer, admin: str, name: str) -> dict:
    return srv.request("POST", "/api/v1/principals", token=admin, body={"name": name})


def _grant(srv: FloeServer, admin: str, who: str, privilege: str, on: dict, all_tables: bool = False) -> None:
    body = {"grantee": {"kind": "principal", "name": who}, "privilege": privilege, "on": on}
    if all_tables:
        body["all_tables"] = True
    srv.request("POST", "/api/v1/grants", token=admin, body=body)


class _WritingFederatingFloe(FloeServer):
    def __init__(self, remote: FloeServer, reader: dict, writer: dict) -> None:
        super().__init__(floe_binary(), "federating-writes")
        self.remote, self.reader, self.writer = remote, reader, writer

    def extra_env(self) -> dict[str, str]:
        return {
            "FLOE_FEDERATED_CATALOGS": json.dumps([{
                "name": "acme", "uri": self.remote.uri, "warehouse": "floe", "auth": "oauth2",
                "client_id": self.reader["client_id"], "client_secret_env": "ACME_READ_SECRET",
                "writes": True,
                "write_client_id": self.writer["client_id"], "write_client_secret_env": "ACME_WRITE_SECRET"}]),
            "ACME_READ_SECRET": self.reader["client_secret"],
            "ACME_WRITE_SECRET": self.writer["client_secret"],
        }


@pytest.fixture(scope="module")
def local(floe, request):
    admin = floe.fetch_token()
    reader = _principal(floe, admin, "fedw-reader")
    writer = _principal(floe, admin, "fedw-writer")
    wh = {"kind": "warehouse", "warehouse": "floe"}
    for who in ("fedw-reader", "fedw-writer"):
        _grant(floe, admin, who, "DESCRIBE", wh, all_tables=True)
        _grant(floe, admin, who, "SELECT", wh, all_tables=True)
    _grant(floe, admin, "fedw-writer", "MODIFY", wh, all_tables=True)
    _grant(floe, admin, "fedw-writer", "CREATE_NAMESPACE", wh)
    _grant(floe, admin, "fedw-writer", "CREATE_TABLE", wh)
    srv = _WritingFederatingFloe(floe, reader, writer)
    _start_server(srv)
    yield srv
    _finish(srv, request)


@pytest.fixture(scope="module")
def users(local):
    """Local principals: fedw_maker (CREATE_NAMESPACE on acme) and
    fedw_select (nothing yet), with their credentials."""
    admin = local.fetch_token()
    out = {}
    for name in ("fedw_maker", "fedw_select"):
        out[name] = _principal(local, admin, name)
    _grant(local, admin, "fedw_maker", "CREATE_NAMESPACE", {"kind": "warehouse", "warehouse": "acme"})
    return out


def _cred(user: dict) -> str:
    return f"{user['client_id']}:{user['client_secret']}"


def test_pyiceberg_writes_through_a_foreign_catalog(local, users, unique):
    ns = f"fedw_{unique}"
    cat = local.catalog(warehouse="acme", credential=_cred(users["fedw_maker"]))
    cat.create_namespace(ns)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    tbl = cat.create_table(f"{ns}.orders", schema=schema)
    rows = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema)
    tbl.append(rows)
    tbl.append(pa.table({"id": [4], "name": ["d"]}, schema=schema))

    # The remote's own PyIceberg reads them back: the table is the remote's.
    remote_tbl = local.remote.catalog().load_table(f"{ns}.orders")
    got = remote_tbl.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [1, 2, 3, 4]
    assert got.column("name").to_pylist() == ["a", "b", "c", "d"]
    # And through the local Floe, the same (newest) metadata file.
    assert cat.load_table(f"{ns}.orders").metadata_location == remote_tbl.metadata_location


def test_select_only_never_gets_the_writers_credentials(local, users, unique):
    ns = f"fedw_sel_{unique}"
    maker = local.catalog(warehouse="acme", credential=_cred(users["fedw_maker"]))
    maker.create_namespace(ns)
    schema = pa.schema([("id", pa.int64())])
    maker.create_table(f"{ns}.t", schema=schema).append(pa.table({"id": [1]}, schema=schema))

    admin = local.fetch_token()
    on = {"kind": "table", "warehouse": "acme", "namespace": [ns], "name": "t"}
    _grant(local, admin, "fedw_select", "SELECT", on)
    sel = users["fedw_select"]
    sel_token = local.fetch_token(sel["client_id"], sel["client_secret"])
    maker_token = local.fetch_token(users["fedw_maker"]["client_id"], users["fedw_maker"]["client_secret"])
    path = f"/v1/acme/namespaces/{ns}/tables/t"
    hdr = {"X-Iceberg-Access-Delegation": "vended-credentials"}

    def creds(token: str) -> tuple[dict, str]:
        res = local.request("GET", path, token=token, headers=hdr)
        c = res["config"]
        if res.get("storage-credentials"):
            c = {**c, **res["storage-credentials"][0]["config"]}
        return c, res["metadata"]["location"]

    read, location = creds(sel_token)
    write, _ = creds(maker_token)
    assert read["s3.access-key-id"] and write["s3.access-key-id"]
    assert read["s3.access-key-id"] != write["s3.access-key-id"]

    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3_client(read).put_object(Bucket=bucket, Key=f"{prefix}/data/by-reader.txt", Body=b"x")
    assert e.value.response["Error"]["Code"] in ("AccessDenied", "403")
    s3_client(write).put_object(Bucket=bucket, Key=f"{prefix}/data/by-writer.txt", Body=b"x")

    # A commit by the SELECT-only principal is refused in Floe.
    with pytest.raises(RestError) as e:
        local.request("POST", path, token=sel_token,
                      body={"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert e.value.status == 403 and "MODIFY" in e.value.body
