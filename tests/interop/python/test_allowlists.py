"""Network allowlists with real clients: requests/urllib and PyIceberg on the
REST catalog, boto3 on the S3 endpoint, psycopg on the SQL endpoint.

Everything runs on 127.0.0.1, so addresses "outside" are simulated the way a
deployment behind a load balancer sees them: the server trusts 127.0.0.1 as
a proxy (FLOE_TRUSTED_PROXIES) and the clients send X-Forwarded-For. The SQL
endpoint has no forwarded header: its listener allowlist excludes loopback
to prove the refusal, and the principal's allowlist is changed to prove the
per-principal one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid

import psycopg
import pyarrow as pa
import pytest
from botocore.exceptions import ClientError

from conftest import FloeServer, _finish, s3_client, table_path
import conftest

INSIDE = "10.1.2.3"
OUTSIDE = "192.0.2.10"


class AllowServer(FloeServer):
    """A Floe server with allowlists given in the environment."""

    def __init__(self, *args, env: dict[str, str], **kw) -> None:
        super().__init__(*args, **kw)
        self._env = env

    def extra_env(self) -> dict[str, str]:
        return self._env


def start(name: str, env: dict[str, str]) -> AllowServer:
    binary = conftest.floe_binary()
    srv = AllowServer(binary, name, env=env)
    conftest._servers.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    return srv


@pytest.fixture(scope="module")
def listeners(request: pytest.FixtureRequest):
    """A server whose REST and S3 listeners admit loopback and 10.0.0.0/8
    (loopback for the fixture's own readiness check) and whose SQL listener
    admits only 10.0.0.0/8."""
    srv = start("allow-listeners", {
        "FLOE_TRUSTED_PROXIES": "127.0.0.1",
        "FLOE_REST_ALLOW_CIDRS": "127.0.0.1,10.0.0.0/8",
        "FLOE_S3_ALLOW_CIDRS": "127.0.0.1,10.0.0.0/8",
        "FLOE_SQL_ALLOW_CIDRS": "10.0.0.0/8,fd00::/8",
    })
    yield srv
    _finish(srv, request)


@pytest.fixture(scope="module")
def principals(request: pytest.FixtureRequest):
    """A server without listener allowlists that trusts 127.0.0.1 as a proxy."""
    srv = start("allow-principals", {"FLOE_TRUSTED_PROXIES": "127.0.0.1"})
    yield srv
    _finish(srv, request)


def raw(srv: FloeServer, method: str, path: str, xff: str | None = None, token: str | None = None,
        body: object = None, form: dict[str, str] | None = None) -> tuple[int, dict]:
    """Send a request to srv from the client address xff; (status, decoded JSON)."""
    headers = {}
    data = None
    if xff:
        headers["X-Forwarded-For"] = xff
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(srv.uri + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def with_xff(client, xff: str):
    """Make a boto3 client send X-Forwarded-For (added after signing, as a proxy would)."""
    def add(request, **_):
        request.headers["X-Forwarded-For"] = xff
    client.meta.events.register("before-send.s3.*", add)
    return client


def make_table(srv: FloeServer, name: str):
    cat = srv.catalog()
    ns = (f"allow_{uuid.uuid4().hex[:8]}",)
    cat.create_namespace(ns)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    tbl = cat.create_table(ns + (name,), schema=schema)
    tbl.append(pa.Table.from_pylist([{"id": i} for i in range(10)], schema=schema))
    return ns, tbl


# --- listener allowlists -----------------------------------------------------


def test_rest_listener_refuses_outside(listeners: FloeServer) -> None:
    status, body = raw(listeners, "GET", "/v1/config", xff=OUTSIDE)
    assert status == 403, body
    assert body["error"]["type"] == "ForbiddenException"
    assert body["error"]["message"] == f"client address {OUTSIDE} is not in the rest listener's allowlist"
    # The token endpoint is on the same listener.
    status, body = raw(listeners, "POST", "/v1/oauth/tokens", xff=OUTSIDE,
                       form={"grant_type": "client_credentials", "client_id": listeners.client_id,
                             "client_secret": listeners.client_secret})
    assert status == 403, body


def test_pyiceberg_through_the_proxy(listeners: FloeServer) -> None:
    # Inside: PyIceberg works as usual.
    cat = listeners.catalog(**{"header.X-Forwarded-For": INSIDE})
    cat.list_namespaces()
    # Outside: refused at its first request (the token), naming the rule.
    with pytest.raises(Exception, match="is not in the rest listener's allowlist"):
        listeners.catalog(**{"header.X-Forwarded-For": OUTSIDE}).list_namespaces()


def test_s3_listener_refuses_outside(listeners: FloeServer) -> None:
    ns, tbl = make_table(listeners, "t")
    cfg = listeners.load_table_raw(ns, "t")["config"]
    key = tbl.metadata_location.split("://", 1)[1].split("/", 1)[1]
    bucket = tbl.metadata_location.split("://", 1)[1].split("/", 1)[0]
    assert with_xff(s3_client(cfg), INSIDE).get_object(Bucket=bucket, Key=key)["Body"].read()
    with pytest.raises(ClientError) as e:
        with_xff(s3_client(cfg), OUTSIDE).get_object(Bucket=bucket, Key=key)
    err = e.value.response["Error"]
    assert err["Code"] == "AccessDenied", err
    assert err["Message"] == f"client address {OUTSIDE} is not in the s3 listener's allowlist", err


def test_sql_listener_refuses_loopback(listeners: FloeServer) -> None:
    with pytest.raises(psycopg.OperationalError, match="client address 127.0.0.1 is not in the sql listener's allowlist"):
        psycopg.connect(host="127.0.0.1", port=listeners.sql_port, dbname="floe", user="admin",
                        password=listeners.fetch_token(), sslmode="disable", connect_timeout=10)


# --- per-principal allowlists ------------------------------------------------


def test_principal_allowlist(principals: FloeServer) -> None:
    srv = principals
    admin = srv.fetch_token()
    ns, tbl = make_table(srv, "accounts")
    name = "etl_" + uuid.uuid4().hex[:6]
    created = srv.request("POST", "/api/v1/principals", token=admin,
                          body={"name": name, "allowed_cidrs": ["10.0.0.0/8", "127.0.0.1"]})
    assert created["allowed_cidrs"] == ["10.0.0.0/8", "127.0.0.1/32"], created
    for priv in ("DESCRIBE", "SELECT"):
        srv.request("POST", "/api/v1/grants", token=admin, body={
            "grantee": {"kind": "principal", "name": name}, "privilege": priv,
            "on": {"kind": "table", "namespace": list(ns), "name": "accounts"}})
    cred = f"{created['client_id']}:{created['client_secret']}"

    # PyIceberg from inside reads the table (REST and S3 both from 127.0.0.1).
    assert srv.catalog(credential=cred).load_table(ns + ("accounts",)).scan().to_arrow().num_rows == 10
    # From outside its token is refused (OAuth access_denied).
    with pytest.raises(Exception, match=f"client address {OUTSIDE} is not in principal {name}'s allowlist"):
        srv.catalog(credential=cred, **{"header.X-Forwarded-For": OUTSIDE}).list_namespaces()
    status, body = raw(srv, "POST", "/v1/oauth/tokens", xff=OUTSIDE, form={
        "grant_type": "client_credentials", "client_id": created["client_id"], "client_secret": created["client_secret"]})
    assert status == 403 and body["error"] == "access_denied", body

    # A token issued inside, used from outside: 403 ErrorModel.
    tok = srv.fetch_token(created["client_id"], created["client_secret"])
    status, body = raw(srv, "GET", table_path(ns, "accounts"), xff=OUTSIDE, token=tok)
    assert status == 403, body
    assert body["error"]["message"] == f"client address {OUTSIDE} is not in principal {name}'s allowlist"

    # Its vended credentials carry the allowlist to the S3 endpoint.
    cfg = srv.load_table_raw(ns, "accounts", token=tok)["config"]
    bucket, key = tbl.metadata_location.split("://", 1)[1].split("/", 1)
    assert with_xff(s3_client(cfg), INSIDE).get_object(Bucket=bucket, Key=key)["Body"].read()
    with pytest.raises(ClientError) as e:
        with_xff(s3_client(cfg), OUTSIDE).get_object(Bucket=bucket, Key=key)
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert e.value.response["Error"]["Message"] == f"client address {OUTSIDE} is not in principal {name}'s allowlist"

    # SQL from 127.0.0.1: logs in while loopback is on the list ...
    with psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname="floe", user=name, password=tok,
                         sslmode="disable", connect_timeout=10) as conn:
        assert conn.execute(f"SELECT count(*) FROM {ns[0]}.accounts").fetchone()[0] == 10
    # ... and not once it is taken off.
    srv.request("PUT", f"/api/v1/principals/{name}/allowed-cidrs", token=admin, body={"allowed_cidrs": ["10.0.0.0/8"]})
    with pytest.raises(psycopg.OperationalError, match=f"client address 127.0.0.1 is not in principal {name}'s allowlist"):
        psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname="floe", user=name, password=tok,
                        sslmode="disable", connect_timeout=10)
