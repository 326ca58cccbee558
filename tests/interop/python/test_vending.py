"""PyIceberg with nothing but the catalog URI and a catalog credential.

Floe vends storage access with every table: its embedded S3 endpoint and a
short-lived credential scoped to the table's location (read-write for a token
with scope `catalog`, read-only for `catalog:read`), refreshed through the
credentials endpoint; or, when the client asks for remote signing, a signer
endpoint instead of any key. The files behind the bucket are ciphertext on
disk.
"""

from __future__ import annotations

import re
import time
import uuid

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog

from conftest import WAREHOUSE, FloeServer, RestError, s3_client, table_path

KV = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])
VENDED_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
ACCESS_DENIED = re.compile(r"AccessDenied|ACCESS_DENIED|Access Denied|\b403\b", re.IGNORECASE)


def kv(*pairs: tuple[str, int]) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "v": v} for k, v in pairs], schema=KV)


def content(t: pa.Table) -> list[tuple[str, int]]:
    return sorted((r["k"], r["v"]) for r in t.to_pylist())


def key_of(location: str) -> str:
    """The object key of s3://floe/<key>."""
    prefix = f"s3://{WAREHOUSE}/"
    assert location.startswith(prefix), location
    return location[len(prefix):]


@pytest.fixture
def ns(catalog: RestCatalog, unique: str):
    ns = (f"vend_{unique}",)
    catalog.create_namespace(ns)
    yield ns
    for ident in catalog.list_tables(ns):
        catalog.purge_table(ident)
    catalog.drop_namespace(ns)


def test_load_table_vends_scoped_credentials(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    """loadTable hands out the endpoint and a credential by default, with or without the delegation header."""
    catalog.create_table(ns + ("t",), schema=KV).append(kv(("a", 1)))
    for delegation in (None, "vended-credentials", "vended-credentials,remote-signing"):
        body = floe.load_table_raw(ns, "t", delegation=delegation)
        cfg = body["config"]
        assert cfg["s3.endpoint"] == floe.s3_url
        assert cfg["s3.path-style-access"] == "true"
        assert cfg["client.region"] == "us-east-1"
        for k in VENDED_KEYS:
            assert cfg.get(k), (delegation, k, sorted(cfg))
        assert cfg["s3.access-key-id"].startswith("FLOE")
        expires_ms = int(cfg["s3.session-token-expires-at-ms"])
        assert 50 * 60 < expires_ms / 1000 - time.time() <= 3600 + 60, "default lifetime is one hour"
        assert cfg["client.refresh-credentials-endpoint"] == (
            f"v1/{WAREHOUSE}/namespaces/{ns[0]}/tables/t/credentials")
        [sc] = body["storage-credentials"]
        assert sc["prefix"].rstrip("/") == body["metadata"]["location"]
        assert {k: sc["config"][k] for k in VENDED_KEYS} == {k: cfg[k] for k in VENDED_KEYS}

    # The credential works for this table's files and nothing else in the bucket.
    loc = key_of(body["metadata"]["location"])
    s3 = s3_client(cfg)
    listed = s3.list_objects_v2(Bucket=WAREHOUSE, Prefix=loc + "/metadata/")
    assert listed["KeyCount"] > 0
    assert s3.get_object(Bucket=WAREHOUSE, Key=key_of(body["metadata-location"]))["Body"].read().startswith(b"{")
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=WAREHOUSE, Prefix="")
    assert e.value.response["Error"]["Code"] == "AccessDenied"


def test_write_read_delete_overwrite(catalog: RestCatalog, ns) -> None:
    ident = ns + ("dml",)
    tbl = catalog.create_table(ident, schema=KV)
    assert tbl.location().startswith(f"s3://{WAREHOUSE}/")
    assert tbl.io.properties.get("s3.access-key-id", "").startswith("FLOE"), "the table's FileIO uses the vended key"
    tbl.append(kv(("x", 1), ("y", 2)))
    tbl.append(kv(("z", 3), ("w", 4)))
    assert content(catalog.load_table(ident).scan().to_arrow()) == [("w", 4), ("x", 1), ("y", 2), ("z", 3)]

    tbl = catalog.load_table(ident)
    tbl.delete("k = 'x' or v = 4")
    tbl = catalog.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("y", 2), ("z", 3)]

    tbl.overwrite(kv(("q", 9), ("r", 10)))
    tbl = catalog.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("q", 9), ("r", 10)]
    assert content(tbl.scan(row_filter="v > 9").to_arrow()) == [("r", 10)]
    # every earlier state is still readable through the vended credential
    assert content(tbl.scan(snapshot_id=tbl.snapshots()[1].snapshot_id).to_arrow()) == [
        ("w", 4), ("x", 1), ("y", 2), ("z", 3)]


def test_read_only_token_reads_but_cannot_write(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    ident = ns + ("ro",)
    catalog.create_table(ident, schema=KV).append(kv(("a", 1), ("b", 2)))

    ro_token = floe.fetch_token(scope="catalog:read")
    ro = floe.catalog("ro", token=ro_token)
    tbl = ro.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("a", 1), ("b", 2)]

    # The data file upload is refused by the S3 endpoint before any commit.
    with pytest.raises(Exception) as e:
        tbl.append(kv(("c", 3)))
    assert ACCESS_DENIED.search(f"{type(e.value).__name__}: {e.value}"), repr(e.value)
    assert content(catalog.load_table(ident).scan().to_arrow()) == [("a", 1), ("b", 2)]

    # The same with the read-only credential directly: reads work, PUT and DELETE do not.
    body = floe.load_table_raw(ns, "ro", token=ro_token)
    s3 = s3_client(body["config"])
    meta_key = key_of(body["metadata-location"])
    assert s3.head_object(Bucket=WAREHOUSE, Key=meta_key)["ContentLength"] > 0
    table_key = key_of(body["metadata"]["location"])
    for call in (lambda: s3.put_object(Bucket=WAREHOUSE, Key=table_key + "/data/evil.parquet", Body=b"x"),
                 lambda: s3.delete_object(Bucket=WAREHOUSE, Key=meta_key)):
        with pytest.raises(ClientError) as ce:
            call()
        assert ce.value.response["Error"]["Code"] == "AccessDenied"
        assert ce.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert s3.head_object(Bucket=WAREHOUSE, Key=meta_key)["ContentLength"] > 0


def test_credentials_endpoint_refreshes(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    catalog.create_table(ns + ("c",), schema=KV).append(kv(("a", 1)))
    token = floe.fetch_token()
    body = floe.load_table_raw(ns, "c", token=token)
    fresh = floe.request("GET", table_path(ns, "c") + "/credentials", token=token)
    [sc] = fresh["storage-credentials"]
    assert sc["prefix"] == body["storage-credentials"][0]["prefix"]
    cfg = sc["config"]
    assert cfg["s3.access-key-id"].startswith("FLOE")
    assert cfg["s3.access-key-id"] != body["config"]["s3.access-key-id"], "a refresh mints a new credential"
    assert int(cfg["s3.session-token-expires-at-ms"]) >= int(body["config"]["s3.session-token-expires-at-ms"])
    s3 = s3_client({**body["config"], **cfg})
    got = s3.get_object(Bucket=WAREHOUSE, Key=key_of(body["metadata-location"]))["Body"].read()
    assert got.startswith(b"{") and b'"format-version"' in got

    # A table that does not exist has no credentials.
    with pytest.raises(RestError) as e:
        floe.request("GET", table_path(ns, "nope") + "/credentials", token=token)
    assert e.value.status == 404


def test_remote_signing_config(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    """A client that asks for remote signing (only) gets a signer endpoint and no key at all."""
    catalog.create_table(ns + ("signed",), schema=KV)
    body = floe.load_table_raw(ns, "signed", delegation="remote-signing")
    cfg = body["config"]
    assert cfg.get("s3.remote-signing-enabled") == "true"
    assert cfg.get("s3.signer.uri", "").rstrip("/") == floe.uri
    assert cfg.get("s3.signer.endpoint") == f"v1/{WAREHOUSE}/namespaces/{ns[0]}/tables/signed/sign"
    assert cfg.get("s3.endpoint") == floe.s3_url
    assert not any(k in cfg for k in VENDED_KEYS), sorted(cfg)
    assert not body.get("storage-credentials")
    # PyIceberg signs through Floe only when the config names its signer.
    assert cfg.get("s3.signer") == "S3V4RestSigner", sorted(cfg)


def test_remote_signing_pyiceberg(floe: FloeServer, ns) -> None:
    """PyIceberg (FsspecFileIO) writes and reads with every S3 request signed by Floe.

    The FileIO is PyIceberg's, with its signer registered on the aiobotocore
    session rather than one client (signing_io.py: apache/iceberg-python#3625
    made this test flaky when s3fs reconnected and dropped the signer).
    """
    cat = floe.catalog("signing", **{
        "header.X-Iceberg-Access-Delegation": "remote-signing",
        "py-io-impl": "signing_io.SessionSignedFsspecFileIO",
    })
    ident = ns + ("signed",)
    tbl = cat.create_table(ident, schema=KV)
    assert not any(tbl.io.properties.get(k) for k in VENDED_KEYS), "remote signing must not hand out keys"
    tbl.append(kv(("a", 1), ("b", 2)))
    tbl = cat.load_table(ident)
    tbl.append(kv(("c", 3)))
    tbl = cat.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("a", 1), ("b", 2), ("c", 3)]
    tbl.delete("k = 'b'")
    assert content(cat.load_table(ident).scan().to_arrow()) == [("a", 1), ("c", 3)]
    # What a vending client sees matches.
    assert content(floe.catalog().load_table(ident).scan().to_arrow()) == [("a", 1), ("c", 3)]


def test_sign_endpoint_guards(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    """Floe signs only requests inside the table, and writes only for a token that may write."""
    catalog.create_table(ns + ("guarded",), schema=KV)
    token = floe.fetch_token()
    body = floe.load_table_raw(ns, "guarded", token=token, delegation="remote-signing")
    sign = table_path(ns, "guarded") + "/sign"
    table_key = key_of(body["metadata"]["location"])
    inside = f"{floe.s3_url}/{WAREHOUSE}/{table_key}/data/x.parquet"
    req = {"region": "us-east-1", "method": "GET", "uri": inside, "headers": {}}
    signed = floe.request("POST", sign, body=req, token=token)
    assert signed["uri"] == inside
    assert any(k.lower() == "authorization" for k in signed["headers"]), signed
    assert floe.request("POST", sign, body={**req, "method": "PUT"}, token=token)["uri"] == inside
    for uri in (f"{floe.s3_url}/{WAREHOUSE}/{ns[0]}/other/data/x.parquet",
                f"{floe.s3_url}/{WAREHOUSE}/{table_key}/../other/x.parquet",
                f"{floe.s3_url}/{WAREHOUSE}/{table_key}",
                f"{floe.s3_url}/{WAREHOUSE}?list-type=2&prefix=",
                f"{floe.s3_url}/{WAREHOUSE}?list-type=2&prefix={ns[0]}/",
                f"http://169.254.169.254/{WAREHOUSE}/{table_key}/data/x.parquet"):
        with pytest.raises(RestError) as e:
            floe.request("POST", sign, body={**req, "uri": uri}, token=token)
        assert e.value.status in (400, 403), (uri, e.value)
    assert floe.request("POST", sign, body={**req, "uri": f"{floe.s3_url}/{WAREHOUSE}?list-type=2&prefix={table_key}/"},
                        token=token)["headers"]
    ro_token = floe.fetch_token(scope="catalog:read")
    assert floe.request("POST", sign, body=req, token=ro_token)["uri"] == inside
    for method in ("PUT", "DELETE", "POST"):
        with pytest.raises(RestError) as e:
            floe.request("POST", sign, body={**req, "method": method}, token=ro_token)
        assert e.value.status == 403, method
    with pytest.raises(RestError) as e:
        floe.request("POST", sign, body=req)  # no token
    assert e.value.status == 401


def test_files_on_disk_are_ciphertext(floe: FloeServer, catalog: RestCatalog, ns) -> None:
    marker = f"floe-plaintext-marker-{uuid.uuid4().hex}"
    ident = ns + ("secret",)
    # Uncompressed Parquet: were the files stored in the clear, the marker
    # would be there byte for byte (checked below through the S3 endpoint).
    tbl = catalog.create_table(ident, schema=KV, properties={
        "write.parquet.compression-codec": "uncompressed", "marker": marker})
    tbl.append(kv(*[(f"{marker}-{i}", i) for i in range(50)]))
    tbl = catalog.load_table(ident)
    assert len(content(tbl.scan().to_arrow())) == 50

    files = [p for p in floe.local_path(tbl.location()).rglob("*") if p.is_file()]
    data_files = [f.file.file_path for f in tbl.scan().plan_files()]
    assert data_files and all(floe.local_path(f) in files for f in data_files), (data_files, files)
    assert floe.local_path(tbl.metadata_location) in files
    for p in files:
        raw = p.read_bytes()
        assert raw, p
        assert not raw.startswith(b"PAR1") and not raw.endswith(b"PAR1"), f"{p} is plaintext Parquet"
        assert not raw.lstrip().startswith(b"{"), f"{p} is plaintext JSON"
        assert marker.encode() not in raw, f"{p} holds a value written into the table in the clear"
    # Nothing anywhere under the warehouse holds it either (staging, multipart parts, ...).
    for p in floe.data_dir.rglob("*"):
        if p.is_file() and p.suffix not in (".db", ".db-wal", ".db-shm"):
            assert marker.encode() not in p.read_bytes(), p

    # Through the endpoint the same objects are plain Parquet holding the marker.
    s3 = s3_client(floe.load_table_raw(ns, "secret")["config"])
    plain = s3.get_object(Bucket=WAREHOUSE, Key=key_of(data_files[0]))["Body"].read()
    assert plain.startswith(b"PAR1") and plain.endswith(b"PAR1")
    assert marker.encode() in plain
    on_disk = floe.local_path(data_files[0]).stat().st_size
    assert on_disk > len(plain), "ciphertext carries nonces and tags"
