"""Revocation reaches the data (issue 15, item 1).

PyIceberg loads a table as a non-admin principal and gets storage credentials
vended with it. Then, in separate cases, the principal is disabled, its SELECT
grant revoked, its OAuth token revoked, or the table dropped: within one
second boto3, still holding the credentials vended before, gets 403
AccessDenied, naming why, on GetObject and on a presigned GET URL minted
from those credentials. An open SQL session (psycopg) of a revoked token or
a disabled principal refuses its next statement within one second.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import psycopg
import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from conftest import WAREHOUSE, RestError, floe_binary, s3_client
from floe_server import send
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))
ROWS = pa.Table.from_pydict({"id": [1, 2, 3]}, schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]))

DEADLINE = 1.0  # seconds from the revoking call's answer to the first refusal


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


class Fed:
    """A non-admin principal holding SELECT on one table, with a token and the
    storage config PyIceberg got with the table."""

    def __init__(self, floe, unique: str) -> None:
        self.floe = floe
        self.ns = f"rev_{unique}"
        admin = floe.catalog("admin")
        admin.create_namespace(self.ns)
        admin.create_table((self.ns, "t"), schema=SCHEMA).append(ROWS)
        self.admin = admin
        self.name = f"rev-{unique}"
        out = _admin(floe, "POST", "/principals", {"name": self.name})
        self.client_id, self.secret = out["client_id"], out["client_secret"]
        self.grant = _admin(floe, "POST", "/grants", {
            "grantee": {"kind": "principal", "name": self.name}, "privilege": "SELECT",
            "on": {"kind": "table", "warehouse": WAREHOUSE, "namespace": [self.ns], "name": "t"}})
        self.token = floe.fetch_token(self.client_id, self.secret)
        self.catalog = floe.catalog("fed", token=self.token)
        tbl = self.catalog.load_table((self.ns, "t"))
        assert tbl.scan().to_arrow().num_rows == 3  # PyIceberg reads with the vended credentials
        self.config = dict(tbl.io.properties)
        assert self.config.get("s3.access-key-id", "").startswith("FLOE"), self.config
        bucket, _, key = tbl.metadata_location.removeprefix("s3://").partition("/")
        self.bucket, self.key = bucket, key
        self.s3 = s3_client(self.config)
        self.presigned = self.s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key},
                                                        ExpiresIn=900)

    def get(self) -> tuple[int, str]:
        """GetObject with the vended credentials: (status, error message)."""
        try:
            self.s3.get_object(Bucket=self.bucket, Key=self.key)["Body"].read()
            return 200, ""
        except ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Message", "")

    def get_presigned(self) -> tuple[int, str]:
        """GET of the presigned URL: (status, body)."""
        try:
            with urllib.request.urlopen(self.presigned, timeout=10) as r:
                r.read()
                return r.status, ""
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")


def _refused_within(fetch, deadline: float) -> tuple[float, int, str]:
    """Polls fetch until it answers non-200; the seconds it took and the answer."""
    start = time.monotonic()
    while True:
        status, msg = fetch()
        took = time.monotonic() - start
        if status != 200 or took > deadline + 2:
            return took, status, msg
        time.sleep(0.02)


def _revoke_token(floe, fed: Fed) -> None:
    form = urllib.parse.urlencode({"token": fed.token, "client_id": fed.client_id,
                                   "client_secret": fed.secret}).encode()
    send(urllib.request.Request(floe.uri + "/v1/oauth/revoke", data=form, method="POST",
                                headers={"Content-Type": "application/x-www-form-urlencoded"}))


def _disable(floe, fed: Fed) -> None:
    _admin(floe, "POST", f"/principals/{fed.name}/disable")


def _revoke_grant(floe, fed: Fed) -> None:
    _admin(floe, "DELETE", f"/grants/{fed.grant['id']}")


def _drop_table(floe, fed: Fed) -> None:
    fed.admin.drop_table((fed.ns, "t"))


CASES = [
    pytest.param(_disable, "credential revoked: principal disabled", id="principal-disabled"),
    pytest.param(_revoke_grant, "credential revoked: grant revoked", id="grant-revoked"),
    pytest.param(_revoke_token, "credential revoked: token revoked", id="token-revoked"),
    pytest.param(_drop_table, "credential revoked: table dropped", id="table-dropped"),
]


@pytest.mark.parametrize("revoke,reason", CASES)
def test_vended_credentials_refused_within_one_second(floe, unique, revoke, reason):
    fed = Fed(floe, unique)
    assert fed.get() == (200, "")
    assert fed.get_presigned() == (200, "")

    revoke(floe, fed)
    took, status, msg = _refused_within(fed.get, DEADLINE)
    assert status == 403, (status, msg)
    assert reason in msg, msg
    assert took <= DEADLINE, f"GetObject still served {took:.2f}s after the revocation"

    status, body = fed.get_presigned()
    assert status == 403, (status, body)
    assert "<Code>AccessDenied</Code>" in body, body
    assert reason in body, body
    _assert_audited(floe, fed, reason)


def _assert_audited(floe, fed: Fed, reason: str) -> None:
    """The refusal is an audit event naming the credential and its token."""
    token_id = json.loads(base64.urlsafe_b64decode(fed.token.split(".")[1] + "=="))["jti"]
    deadline = time.time() + 10
    while True:
        out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(floe.data_dir),
                              "--action", "s3.GetObject", "--outcome", "denied", "--principal", fed.name, "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        if recs or time.time() > deadline:
            break
        time.sleep(0.2)
    assert recs, "no denied s3.GetObject audit record"
    d = recs[0]["detail"]
    assert reason in d.get("revoked", ""), d
    assert d.get("token_id") == token_id, d
    assert d.get("credential_id"), d
    assert d.get("access_key_id") == fed.config["s3.access-key-id"], d


def test_new_grant_keeps_credentials(floe, unique):
    """Granting a principal more does not invalidate what it holds."""
    fed = Fed(floe, unique)
    _admin(floe, "POST", "/grants", {
        "grantee": {"kind": "principal", "name": fed.name}, "privilege": "DESCRIBE",
        "on": {"kind": "warehouse", "warehouse": WAREHOUSE}, "all_tables": True})
    time.sleep(DEADLINE + 0.5)
    assert fed.get() == (200, "")


def test_reload_after_grant_revocation_elsewhere(floe, unique):
    """Credentials die with any revoked grant of their principal; loading the
    table again hands out working ones while SELECT is still held."""
    fed = Fed(floe, unique)
    other = _admin(floe, "POST", "/grants", {
        "grantee": {"kind": "principal", "name": fed.name}, "privilege": "DESCRIBE",
        "on": {"kind": "warehouse", "warehouse": WAREHOUSE}, "all_tables": True})
    _admin(floe, "DELETE", f"/grants/{other['id']}")
    _, status, msg = _refused_within(fed.get, DEADLINE)
    assert status == 403 and "grant revoked" in msg, (status, msg)
    tbl = fed.catalog.load_table((fed.ns, "t"))
    assert tbl.io.properties["s3.access-key-id"] != fed.config["s3.access-key-id"]
    assert tbl.scan().to_arrow().num_rows == 3


def _sql(floe, fed: Fed) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=fed.name,
                           password=fed.token, autocommit=True, connect_timeout=10)


@pytest.mark.parametrize("revoke,sqlstate", [
    pytest.param(_revoke_token, "28000", id="token-revoked"),
    pytest.param(_disable, "28000", id="principal-disabled"),
])
def test_open_sql_session_ends_within_one_second(floe, unique, revoke, sqlstate):
    fed = Fed(floe, unique)
    with _sql(floe, fed) as conn:
        assert conn.execute(f"SELECT count(*) FROM {fed.ns}.t").fetchone()[0] == 3
        revoke(floe, fed)
        start = time.monotonic()
        err = None
        while time.monotonic() - start < DEADLINE + 2:
            try:
                conn.execute("SELECT 1").fetchone()
            except psycopg.Error as e:
                err = e
                break
            time.sleep(0.02)
        took = time.monotonic() - start
        assert err is not None, "the session still runs statements"
        assert err.sqlstate == sqlstate, (err.sqlstate, str(err))
        assert "revoked" in str(err) or "disabled" in str(err), str(err)
        assert took <= DEADLINE, f"the session ran statements {took:.2f}s after the revocation"


def _replay(url: str, headers: dict[str, list[str]]) -> tuple[int, str]:
    """Sends a GET that the remote signer signed: (status, body)."""
    h = {k: v[0] if isinstance(v, list) else v for k, v in headers.items()}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=h), timeout=10) as r:
            r.read()
            return r.status, ""
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


@pytest.mark.parametrize("revoke,reason", CASES[:3])
def test_remote_signer_refuses_revoked(floe, unique, revoke, reason):
    """The remote signer signs no more for a revoked session, and a request
    it signed before is refused by the S3 endpoint within one second."""
    from conftest import table_path

    fed = Fed(floe, unique)
    sign = table_path((fed.ns,), "t") + "/sign"
    url = f"{floe.s3_url}/{fed.bucket}/{fed.key}"
    signed = floe.request("POST", sign, body={"region": "us-east-1", "method": "GET", "uri": url, "headers": {}},
                          token=fed.token)
    assert _replay(signed["uri"], signed["headers"]) == (200, "")

    revoke(floe, fed)
    took, status, body = _refused_within(lambda: _replay(signed["uri"], signed["headers"]), DEADLINE)
    assert status == 403 and reason in body, (status, body)
    assert took <= DEADLINE, f"a request signed before the revocation was served {took:.2f}s after it"
    with pytest.raises(RestError) as e:
        floe.request("POST", sign, body={"region": "us-east-1", "method": "GET", "uri": url, "headers": {}},
                     token=fed.token)
    assert e.value.status in (401, 403), e.value
