"""Issue 18: a recipient reaches an unshared table by no path.

A provider shares one table (`pub.orders` as `sales.orders`) and keeps
another (`pub.secret`) next to it, in the same namespace. The recipient
holds its bearer token, a profile file, the share catalog's vended storage
credential and pre-signed URLs, and tries every door:

- the main Iceberg REST catalog, its token endpoint, the management API and
  the SQL endpoint, with the recipient token;
- share-catalog and Delta Sharing names: the real names, the unshared
  table's name, the alias in another share, encoded separators and dots;
- S3 with the vended credential: the unshared table's objects by key, a
  listing of the namespace, a write into the shared table;
- a pre-signed URL tampered to another key or a later expiry.

Every attempt is refused with the protocol's 4xx, none with a 5xx, and no
answer names the unshared table.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from conftest import WAREHOUSE, s3_client
from test_sharing_admin import _cli


def _http(method: str, url: str, token: str | None = None, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, str]:
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=15) as res:
            return res.status, res.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


@pytest.fixture(scope="module")
def world(floe, tmp_path_factory):
    import uuid
    u = uuid.uuid4().hex[:8]
    cat = floe.catalog()
    ns = f"pub_{u}"
    cat.create_namespace(ns)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]})
    shared = cat.create_table(f"{ns}.orders", schema=data.schema)
    shared.append(data)
    secret = cat.create_table(f"{ns}.secret_{u}", schema=data.schema)
    secret.append(data)
    share, other, rcpt = f"s_{u}", f"o_{u}", f"r_{u}"
    tmp = tmp_path_factory.mktemp("adv")
    _cli(floe, "share", "create", share)
    _cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "sales.orders", "--history")
    _cli(floe, "share", "create", other)  # another share, not granted, with the unshared table
    _cli(floe, "share", "add", other, "table", f"{ns}.secret_{u}", "--as", "sales.orders2")
    profile = tmp / "r.share"
    _cli(floe, "recipient", "create", rcpt, "--profile-out", str(profile))
    _cli(floe, "share", "grant", share, "TO", rcpt)
    token = json.loads(profile.read_text())["bearerToken"]
    return {"u": u, "ns": ns, "share": share, "other": other, "rcpt": rcpt, "token": token,
            "shared": shared, "secret": secret, "secret_name": f"secret_{u}"}


def _no_leak(w, status: int, body: str, asked: str = "") -> None:
    """A 4xx whose body names neither the unshared table nor the real
    namespace, unless the request named them itself (errors echo it)."""
    assert 400 <= status < 500, (status, body[:300])
    asked = urllib.parse.unquote(asked)
    for name in (w["secret_name"], w["ns"]):
        assert name in asked or name not in body, (name, body[:300])


def test_main_catalog_and_services_refuse_the_recipient_token(floe, world):
    w = world
    for method, path in [("GET", f"/v1/{WAREHOUSE}/namespaces"),
                         ("GET", f"/v1/{WAREHOUSE}/namespaces/{w['ns']}/tables/orders"),
                         ("GET", f"/v1/{WAREHOUSE}/namespaces/{w['ns']}/tables/{w['secret_name']}"),
                         ("GET", "/api/v1/principals"), ("GET", "/api/v1/shares")]:
        status, body = _http(method, floe.uri + path, w["token"])
        _no_leak(w, status, body, path)
        assert status == 401, (path, status, body[:200])
    # Nor does it work as a client secret at the main token endpoint.
    status, body = _http("POST", floe.uri + "/v1/oauth/tokens", body=urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": w["rcpt"], "client_secret": w["token"]}).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status in (400, 401) and json.loads(body)["error"] in ("invalid_client", "invalid_grant"), body
    # Nor as a password on the SQL endpoint.
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname=WAREHOUSE, user=w["rcpt"], password=w["token"],
                        sslmode="disable", connect_timeout=10)


def test_share_catalog_and_delta_sharing_names(floe, world):
    w = world
    sc = f"{floe.uri}/shares/{w['share']}/iceberg/v1/{w['share']}"
    ds = f"{floe.uri}/delta-sharing/shares"
    enc = urllib.parse.quote
    attempts = [
        f"{sc}/namespaces/{w['ns']}/tables/orders",  # the real names
        f"{sc}/namespaces/{w['ns']}/tables/{w['secret_name']}",
        f"{sc}/namespaces/sales/tables/{w['secret_name']}",
        f"{sc}/namespaces/sales/tables/orders2",  # the alias in the other share
        f"{sc}/namespaces/sales%1F..%1F{w['ns']}/tables/{w['secret_name']}",
        f"{sc}/namespaces/{enc('sales/../' + w['ns'], safe='')}/tables/{w['secret_name']}",
        f"{floe.uri}/shares/{w['other']}/iceberg/v1/{w['other']}/namespaces/sales/tables/orders2",  # the other share
        f"{floe.uri}/shares/{w['share']}/iceberg/v1/{w['other']}/namespaces/sales/tables/orders2",  # its prefix
        f"{ds}/{w['other']}/schemas/sales/tables/orders2/metadata",
        f"{ds}/{w['share']}/schemas/{w['ns']}/tables/{w['secret_name']}/metadata",
        f"{ds}/{w['share']}/schemas/sales/tables/{w['secret_name']}/metadata",
        f"{ds}/{w['share']}/schemas/sales/tables/{enc('../' + w['secret_name'], safe='')}/metadata",
        f"{ds}/{w['other']}/schemas",
    ]
    for url in attempts:
        status, body = _http("GET", url, w["token"])
        _no_leak(w, status, body, url)
        assert status in (403, 404), (url, status, body[:200])
    status, body = _http("POST", f"{ds}/{w['other']}/schemas/sales/tables/orders2/query", w["token"], b"{}",
                         {"Content-Type": "application/json"})
    _no_leak(w, status, body)
    # The shared table itself is readable: the doors above are closed, not broken.
    status, _ = _http("GET", f"{sc}/namespaces/sales/tables/orders", w["token"])
    assert status == 200


def test_storage_credentials_and_urls_reach_only_the_shared_table(floe, world):
    w = world
    status, body = _http("GET", f"{floe.uri}/shares/{w['share']}/iceberg/v1/{w['share']}/namespaces/sales/tables/orders",
                         w["token"])
    assert status == 200
    config = json.loads(body)["config"]
    s3 = s3_client(config)
    bucket = WAREHOUSE

    def key(loc: str) -> str:
        return loc.removeprefix(f"s3://{bucket}/")

    own = next(iter(w["shared"].scan().plan_files())).file.file_path
    s3.get_object(Bucket=bucket, Key=key(own))["Body"].read()  # the shared table: allowed
    other = next(iter(w["secret"].scan().plan_files())).file.file_path
    for call in (lambda: s3.get_object(Bucket=bucket, Key=key(other)),
                 lambda: s3.get_object(Bucket=bucket, Key=key(w["secret"].metadata_location)),
                 lambda: s3.list_objects_v2(Bucket=bucket, Prefix=w["ns"] + "/"),
                 lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key(w["secret"].location()) + "/"),
                 lambda: s3.put_object(Bucket=bucket, Key=key(w["shared"].location()) + "/data/evil.parquet", Body=b"x"),
                 lambda: s3.delete_object(Bucket=bucket, Key=key(own))):
        with pytest.raises(Exception) as e:
            call()
        assert "AccessDenied" in str(e.value) or "403" in str(e.value), str(e.value)[:300]

    # Pre-signed URLs from a Delta Sharing query, tampered.
    status, body = _http("POST", f"{floe.uri}/delta-sharing/shares/{w['share']}/schemas/sales/tables/orders/query",
                         w["token"], b"{}", {"Content-Type": "application/json"})
    assert status == 200
    url = next(json.loads(line)["file"]["url"] for line in body.splitlines() if '"file"' in line)
    assert _http("GET", url)[0] == 200
    parts = urllib.parse.urlsplit(url)
    other_path = "/" + bucket + "/" + key(other)
    q = urllib.parse.parse_qs(parts.query)
    later = dict(q, **{"X-Amz-Expires": ["604800"]})
    for tampered in (urllib.parse.urlunsplit(parts._replace(path=other_path)),
                     urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(later, doseq=True)))):
        status, body = _http("GET", tampered)
        assert status == 403, (status, body[:200])
