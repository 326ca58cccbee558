"""boto3 against Floe's embedded S3 endpoint, with the credentials loadTable vends.

Each S3 operation Floe serves (bucket metadata, listing, reads with ranges and
conditions, writes with conditional create, copy, deletes, multipart uploads,
presigned URLs, XML errors), then what a vended credential must not do: reach
another table's files, write with a read-only credential, work with a
tampered or foreign session token, or escape the table (or the warehouse) with
`..`, percent-encoded or absolute keys.

Expired credentials are not tested here: the shortest lifetime Floe vends is
15 minutes (FLOE_CREDENTIAL_TTL), too long for this suite. The Go tests of
vend and objstore/s3api cover expiry (ExpiredToken) with a fake clock.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import urllib.parse
import urllib.request
import uuid
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog

from conftest import WAREHOUSE, FloeServer, _finish, _start, s3_client

B = WAREHOUSE  # the bucket
MiB = 1 << 20
KV = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])


class Table:
    """A table, its key prefix in the bucket, and credentials for it."""

    def __init__(self, floe: FloeServer, ns: tuple[str, ...], name: str, token: str | None = None) -> None:
        body = floe.load_table_raw(ns, name, token=token)
        self.cfg: dict[str, str] = body["config"]
        self.metadata_key = key_of(body["metadata-location"])
        self.prefix = key_of(body["metadata"]["location"]) + "/"
        self.s3 = s3_client(self.cfg)


def key_of(location: str) -> str:
    assert location.startswith(f"s3://{B}/"), location
    return location[len(f"s3://{B}/"):]


def err(e: pytest.ExceptionInfo[ClientError]) -> tuple[str, int]:
    r = e.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def denied_with(call: Any) -> tuple[str, int] | str:
    """The S3 error code and status call fails with, or what it returned."""
    try:
        out = call()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return f"no error: {out!r}"[:500]


@pytest.fixture(scope="module")
def tables(floe: FloeServer) -> Any:
    """Tables a and b (each with one snapshot) in a fresh namespace, with read-write
    credentials, and a_sibling, whose location is a's with "-sibling" appended."""
    cat: RestCatalog = floe.catalog()
    ns = (f"s3_{uuid.uuid4().hex[:8]}",)
    cat.create_namespace(ns)
    for name in ("a", "b"):
        cat.create_table(ns + (name,), schema=KV).append(pa.Table.from_pylist([{"k": name, "v": 1}], schema=KV))
    a_loc = cat.load_table(ns + ("a",)).location()
    cat.create_table(ns + ("a_sibling",), schema=KV, location=a_loc + "-sibling").append(
        pa.Table.from_pylist([{"k": "sibling", "v": 1}], schema=KV))
    yield ns, Table(floe, ns, "a"), Table(floe, ns, "b"), Table(floe, ns, "a_sibling")
    for name in ("a", "b", "a_sibling"):
        cat.purge_table(ns + (name,))
    cat.drop_namespace(ns)


@pytest.fixture
def a(tables: Any) -> Table:
    return tables[1]


@pytest.fixture
def b(tables: Any) -> Table:
    return tables[2]


@pytest.fixture
def a_sibling(tables: Any) -> Table:
    return tables[3]


@pytest.fixture
def scratch(a: Table) -> str:
    """A fresh key prefix inside table a's location."""
    return f"{a.prefix}scratch/{uuid.uuid4().hex[:8]}/"


# --- the operations ----------------------------------------------------------


def test_bucket_metadata(a: Table) -> None:
    assert a.s3.head_bucket(Bucket=B)["ResponseMetadata"]["HTTPStatusCode"] == 200
    loc = a.s3.get_bucket_location(Bucket=B).get("LocationConstraint")
    assert loc in (None, "", "us-east-1"), loc
    with pytest.raises(ClientError) as e:
        a.s3.head_bucket(Bucket="not-a-floe-bucket")
    assert err(e)[1] in (403, 404)


def test_put_get_head(a: Table, scratch: str) -> None:
    key = scratch + "obj.bin"
    data = os.urandom(100_000)
    put = a.s3.put_object(Bucket=B, Key=key, Body=data, ContentType="application/x-test", Metadata={"who": "interop"})
    etag = put["ETag"]
    assert etag.startswith('"') and etag.endswith('"')

    head = a.s3.head_object(Bucket=B, Key=key)
    assert head["ContentLength"] == len(data)
    assert head["ETag"] == etag
    assert head["ContentType"] == "application/x-test"
    assert head["Metadata"] == {"who": "interop"}
    got = a.s3.get_object(Bucket=B, Key=key)
    assert got["Body"].read() == data
    assert got["ETag"] == etag

    # Range: a slice, a suffix, an open end
    r = a.s3.get_object(Bucket=B, Key=key, Range="bytes=1000-1999")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert r["ContentRange"] == f"bytes 1000-1999/{len(data)}"
    assert r["Body"].read() == data[1000:2000]
    assert a.s3.get_object(Bucket=B, Key=key, Range="bytes=-10")["Body"].read() == data[-10:]
    assert a.s3.get_object(Bucket=B, Key=key, Range=f"bytes={len(data) - 5}-")["Body"].read() == data[-5:]
    # across the encryption segments of a larger object
    big = os.urandom(3 * MiB + 12345)
    a.s3.put_object(Bucket=B, Key=scratch + "big.bin", Body=big)
    for lo, hi in ((0, 0), (65535, 65537), (MiB - 3, MiB + 3), (3 * MiB, len(big) - 1)):
        got = a.s3.get_object(Bucket=B, Key=scratch + "big.bin", Range=f"bytes={lo}-{hi}")["Body"].read()
        assert got == big[lo:hi + 1], (lo, hi)
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=key, Range=f"bytes={len(data) + 10}-{len(data) + 20}")
    assert err(e) == ("InvalidRange", 416)

    # If-Match / If-None-Match / If-Modified-Since
    assert a.s3.get_object(Bucket=B, Key=key, IfMatch=etag)["Body"].read() == data
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=key, IfMatch='"0000"')
    assert err(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=key, IfNoneMatch=etag)
    assert err(e)[1] == 304
    assert a.s3.get_object(Bucket=B, Key=key, IfNoneMatch='"0000"')["Body"].read() == data
    modified = head["LastModified"]
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=key, IfModifiedSince=modified + timedelta(hours=1))
    assert err(e)[1] == 304
    assert a.s3.get_object(Bucket=B, Key=key, IfModifiedSince=modified - timedelta(days=1))["Body"].read() == data
    with pytest.raises(ClientError) as e:
        a.s3.head_object(Bucket=B, Key=key, IfNoneMatch=etag)
    assert err(e)[1] == 304


def test_put_if_none_match_creates_once(a: Table, scratch: str) -> None:
    key = scratch + "once.txt"
    a.s3.put_object(Bucket=B, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        a.s3.put_object(Bucket=B, Key=key, Body=b"second", IfNoneMatch="*")
    assert err(e) == ("PreconditionFailed", 412)
    assert a.s3.get_object(Bucket=B, Key=key)["Body"].read() == b"first"


def test_copy_and_delete(a: Table, scratch: str) -> None:
    src, dst = scratch + "src.txt", scratch + "dst.txt"
    a.s3.put_object(Bucket=B, Key=src, Body=b"copy me")
    out = a.s3.copy_object(Bucket=B, Key=dst, CopySource={"Bucket": B, "Key": src})
    assert out["CopyObjectResult"]["ETag"]
    assert a.s3.get_object(Bucket=B, Key=dst)["Body"].read() == b"copy me"

    assert a.s3.delete_object(Bucket=B, Key=src)["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=src)
    assert err(e) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        a.s3.head_object(Bucket=B, Key=src)
    assert err(e)[1] == 404
    # deleting what is not there succeeds, as in S3
    assert a.s3.delete_object(Bucket=B, Key=src)["ResponseMetadata"]["HTTPStatusCode"] == 204

    keys = [f"{scratch}many/{i}" for i in range(5)]
    for k in keys:
        a.s3.put_object(Bucket=B, Key=k, Body=k.encode())
    out = a.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys[:3]]})
    assert sorted(d["Key"] for d in out["Deleted"]) == keys[:3]
    assert not out.get("Errors")
    left = a.s3.list_objects_v2(Bucket=B, Prefix=f"{scratch}many/")
    assert [o["Key"] for o in left["Contents"]] == keys[3:]
    out = a.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys[3:]], "Quiet": True})
    assert not out.get("Errors") and not out.get("Deleted")
    assert a.s3.list_objects_v2(Bucket=B, Prefix=f"{scratch}many/")["KeyCount"] == 0


def test_list_objects_v2(a: Table, scratch: str) -> None:
    keys = sorted([f"{scratch}{p}" for p in ("a/1", "a/2", "a/3", "b/1", "b/2", "c", "d", "e/x/y")])
    for k in keys:
        a.s3.put_object(Bucket=B, Key=k, Body=b"x")
    everything = a.s3.list_objects_v2(Bucket=B, Prefix=scratch)
    assert [o["Key"] for o in everything["Contents"]] == keys
    assert everything["KeyCount"] == len(keys) and not everything["IsTruncated"]
    assert all(o["Size"] == 1 and o["ETag"] for o in everything["Contents"])

    assert [o["Key"] for o in a.s3.list_objects_v2(Bucket=B, Prefix=scratch + "a/")["Contents"]] == keys[:3]

    top = a.s3.list_objects_v2(Bucket=B, Prefix=scratch, Delimiter="/")
    assert [o["Key"] for o in top["Contents"]] == [scratch + "c", scratch + "d"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == [scratch + p for p in ("a/", "b/", "e/")]

    # continuation: two keys per page
    seen, token, pages = [], None, 0
    while True:
        kw: dict[str, Any] = {"Bucket": B, "Prefix": scratch, "MaxKeys": 2}
        if token:
            kw["ContinuationToken"] = token
        page = a.s3.list_objects_v2(**kw)
        pages += 1
        seen += [o["Key"] for o in page.get("Contents", [])]
        assert page["KeyCount"] <= 2
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == keys and pages == 4
    # the paginator does the same
    pag = a.s3.get_paginator("list_objects_v2").paginate(Bucket=B, Prefix=scratch, PaginationConfig={"PageSize": 3})
    assert [o["Key"] for p in pag for o in p.get("Contents", [])] == keys

    after = a.s3.list_objects_v2(Bucket=B, Prefix=scratch, StartAfter=scratch + "b/1")
    assert [o["Key"] for o in after["Contents"]] == keys[4:]
    # delimiter with paging: common prefixes count towards MaxKeys and are not repeated
    seen, token = [], None
    while True:
        kw = {"Bucket": B, "Prefix": scratch, "Delimiter": "/", "MaxKeys": 1}
        if token:
            kw["ContinuationToken"] = token
        page = a.s3.list_objects_v2(**kw)
        seen += [o["Key"] for o in page.get("Contents", [])] + [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == [scratch + p for p in ("a/", "b/", "c", "d", "e/")]


def test_multipart_upload(a: Table, scratch: str) -> None:
    key = scratch + "multi.bin"
    parts_data = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(5 * MiB)]
    up = a.s3.create_multipart_upload(Bucket=B, Key=key, ContentType="application/x-parts")
    uid = up["UploadId"]
    parts = []
    for n, data in enumerate(parts_data, start=1):
        r = a.s3.upload_part(Bucket=B, Key=key, UploadId=uid, PartNumber=n, Body=data)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    listed = a.s3.list_parts(Bucket=B, Key=key, UploadId=uid)
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed["Parts"]] == [
        (p["PartNumber"], p["ETag"], 5 * MiB) for p in parts]
    uploads = a.s3.list_multipart_uploads(Bucket=B, Prefix=scratch)
    assert [(u["Key"], u["UploadId"]) for u in uploads.get("Uploads", [])] == [(key, uid)]
    with pytest.raises(ClientError) as e:
        a.s3.head_object(Bucket=B, Key=key)  # not visible before completion
    assert err(e)[1] == 404

    done = a.s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    assert done["ETag"].strip('"').endswith("-3")
    whole = b"".join(parts_data)
    head = a.s3.head_object(Bucket=B, Key=key)
    assert head["ContentLength"] == len(whole) and head["ETag"] == done["ETag"]
    assert head["ContentType"] == "application/x-parts"
    got = a.s3.get_object(Bucket=B, Key=key)["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(whole).digest()
    r = a.s3.get_object(Bucket=B, Key=key, Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}")["Body"].read()
    assert r == whole[5 * MiB - 10:5 * MiB + 10]
    with pytest.raises(ClientError) as e:
        a.s3.list_parts(Bucket=B, Key=key, UploadId=uid)
    assert err(e) == ("NoSuchUpload", 404)


def test_multipart_abort_and_errors(a: Table, scratch: str) -> None:
    key = scratch + "aborted.bin"
    uid = a.s3.create_multipart_upload(Bucket=B, Key=key)["UploadId"]
    e1 = a.s3.upload_part(Bucket=B, Key=key, UploadId=uid, PartNumber=1, Body=os.urandom(5 * MiB))["ETag"]
    e2 = a.s3.upload_part(Bucket=B, Key=key, UploadId=uid, PartNumber=2, Body=b"tail")["ETag"]
    # a part below 5 MiB that is not the last one
    with pytest.raises(ClientError) as e:
        a.s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=uid, MultipartUpload={"Parts": [
            {"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]})
    assert err(e)[0] in ("InvalidPartOrder", "EntityTooSmall"), err(e)
    with pytest.raises(ClientError) as e:
        a.s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=uid, MultipartUpload={"Parts": [
            {"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}]})
    assert err(e) == ("InvalidPart", 400)
    a.s3.abort_multipart_upload(Bucket=B, Key=key, UploadId=uid)
    with pytest.raises(ClientError) as e:
        a.s3.list_parts(Bucket=B, Key=key, UploadId=uid)
    assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        a.s3.upload_part(Bucket=B, Key=key, UploadId=uid, PartNumber=3, Body=b"late")
    assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        a.s3.head_object(Bucket=B, Key=key)
    assert err(e)[1] == 404


def test_presigned_urls(a: Table, scratch: str) -> None:
    key = scratch + "presigned.txt"
    put_url = a.s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": key}, ExpiresIn=300)
    assert "X-Amz-Signature=" in put_url and "X-Amz-Security-Token=" in put_url
    r = requests.put(put_url, data=b"via a presigned PUT", timeout=10)
    assert r.status_code == 200, r.text
    assert a.s3.get_object(Bucket=B, Key=key)["Body"].read() == b"via a presigned PUT"

    get_url = a.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": key}, ExpiresIn=300)
    with urllib.request.urlopen(get_url, timeout=10) as resp:
        assert resp.status == 200 and resp.read() == b"via a presigned PUT"

    # a presigned URL is good for its key only, and not past its expiry
    u = urllib.parse.urlsplit(get_url)
    other = urllib.parse.urlunsplit(u._replace(path=u.path.replace("presigned.txt", "other.txt")))
    r = requests.get(other, timeout=10)
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text, r.text
    q = urllib.parse.parse_qs(u.query)
    q["X-Amz-Expires"] = ["604800"]
    longer = urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q, doseq=True)))
    assert requests.get(longer, timeout=10).status_code == 403
    q = urllib.parse.parse_qs(u.query)
    q["X-Amz-Date"] = ["20200101T000000Z"]
    old = urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q, doseq=True)))
    assert requests.get(old, timeout=10).status_code in (400, 403)


def test_expired_presigned_url_and_clock_skew(a: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """A presigned URL past its X-Amz-Expires, and a request signed 30 minutes ago, are refused."""
    import botocore.auth

    real = botocore.auth.get_current_datetime
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: real() - timedelta(hours=2))
    url = a.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": a.metadata_key}, ExpiresIn=3600)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text and "expired" in r.text.lower(), r.text
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: real() - timedelta(minutes=30))
    with pytest.raises(ClientError) as e:
        a.s3.head_object(Bucket=B, Key=a.metadata_key)
    assert err(e) == ("403", 403) or err(e) == ("RequestTimeTooSkewed", 403), e.value.response
    with pytest.raises(ClientError) as e:
        a.s3.get_object(Bucket=B, Key=a.metadata_key)
    assert err(e) == ("RequestTimeTooSkewed", 403), e.value.response
    monkeypatch.setattr(botocore.auth, "get_current_datetime", real)
    assert a.s3.head_object(Bucket=B, Key=a.metadata_key)["ContentLength"] > 0


def test_xml_errors(a: Table, scratch: str) -> None:
    url = a.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": scratch + "missing"}, ExpiresIn=60)
    r = requests.get(url, timeout=10)
    assert r.status_code == 404
    assert r.headers["Content-Type"].startswith("application/xml")
    assert "<Error>" in r.text and "<Code>NoSuchKey</Code>" in r.text and "<RequestId>" in r.text
    assert r.headers.get("x-amz-request-id")
    # no credentials at all
    r = requests.get(f"{a.cfg['s3.endpoint']}/{B}/{scratch}missing", timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    # a subresource Floe does not serve
    with pytest.raises(ClientError) as e:
        a.s3.get_object_tagging(Bucket=B, Key=a.metadata_key)
    assert err(e) == ("NotImplemented", 501)


# --- what a vended credential must not do ----------------------------------------


def test_table_credentials_cannot_reach_another_table(a: Table, b: Table, a_sibling: Table, scratch: str) -> None:
    assert a_sibling.prefix == a.prefix.rstrip("/") + "-sibling/"
    denied = [
        ("list", lambda: a.s3.list_objects_v2(Bucket=B, Prefix=b.prefix)),
        ("list parent", lambda: a.s3.list_objects_v2(Bucket=B, Prefix=a.prefix.rsplit("/", 2)[0] + "/")),
        ("list bucket", lambda: a.s3.list_objects_v2(Bucket=B)),
        ("list sibling", lambda: a.s3.list_objects_v2(Bucket=B, Prefix=a_sibling.prefix)),
        ("get sibling", lambda: a.s3.get_object(Bucket=B, Key=a_sibling.metadata_key)),
        ("put sibling", lambda: a.s3.put_object(Bucket=B, Key=a_sibling.prefix + "data/x", Body=b"x")),
        ("get", lambda: a.s3.get_object(Bucket=B, Key=b.metadata_key)),
        ("head", lambda: a.s3.head_object(Bucket=B, Key=b.metadata_key)),
        ("put", lambda: a.s3.put_object(Bucket=B, Key=b.prefix + "data/evil.parquet", Body=b"x")),
        ("delete", lambda: a.s3.delete_object(Bucket=B, Key=b.metadata_key)),
        ("copy out of b", lambda: a.s3.copy_object(Bucket=B, Key=scratch + "stolen",
                                                    CopySource={"Bucket": B, "Key": b.metadata_key})),
        ("copy into b", lambda: a.s3.copy_object(Bucket=B, Key=b.prefix + "data/evil",
                                                  CopySource={"Bucket": B, "Key": a.metadata_key})),
        ("multipart into b", lambda: a.s3.create_multipart_upload(Bucket=B, Key=b.prefix + "data/evil")),
        ("presigned get", lambda: _presigned_get(a, b.metadata_key)),
    ]
    for what, call in denied:
        want = ("403", 403) if what == "head" else ("AccessDenied", 403)  # HEAD answers have no body
        assert denied_with(call) == want, what
    out = a.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": b.metadata_key}, {"Key": scratch + "nothing"}]})
    assert [(x["Key"], x["Code"]) for x in out.get("Errors", [])] == [(b.metadata_key, "AccessDenied")]
    # b is untouched, and b's own credential still reads it
    assert b.s3.head_object(Bucket=B, Key=b.metadata_key)["ContentLength"] > 0
    assert b.s3.list_objects_v2(Bucket=B, Prefix=b.prefix + "data/")["KeyCount"] == 1
    # Listing a's location without its trailing slash (as some engines do) shows
    # a's keys only, not those of the table whose location merely starts the same.
    keys = [o["Key"] for o in a.s3.list_objects_v2(Bucket=B, Prefix=a.prefix.rstrip("/"))["Contents"]]
    assert keys and all(k.startswith(a.prefix) for k in keys), keys
    top = a.s3.list_objects_v2(Bucket=B, Prefix=a.prefix.rstrip("/"), Delimiter="/")
    assert [p["Prefix"] for p in top.get("CommonPrefixes", [])] == [a.prefix], top


def test_table_location_cannot_cover_another_table(floe: FloeServer, tables: Any) -> None:
    """A table created (or registered) at a location equal to, or above, another
    live table's gets no credential for that table's files.

    Otherwise whoever may create a table in one namespace could read and write
    every table of another through the credential Floe vends with it."""
    ns, a, _, _ = tables
    cat = floe.catalog()
    other = (ns[0] + "_other",)
    cat.create_namespace(other)
    a_loc = f"s3://{B}/{a.prefix.rstrip('/')}"
    attempts = [(name, lambda name=name, loc=loc: cat.create_table(other + (name,), schema=KV, location=loc))
                for name, loc in (("same", a_loc), ("parent", f"s3://{B}/{ns[0]}"), ("parent_slash", f"s3://{B}/{ns[0]}/"),
                                  ("dotdot", f"s3://{B}/{other[0]}/../{ns[0]}"))]
    attempts.append(("registered", lambda: cat.register_table(other + ("registered",), f"s3://{B}/{a.metadata_key}")))
    try:
        leaks = []
        for name, create in attempts:
            try:
                tbl = create()
            except Exception as e:  # refused by Floe (a REST error): fine
                assert type(e).__module__.startswith("pyiceberg"), (name, repr(e))
                continue
            cfg = floe.load_table_raw(other, name)["config"]
            got = denied_with(lambda: s3_client(cfg).get_object(Bucket=B, Key=a.metadata_key)["Body"].read()[:30])
            if got != ("AccessDenied", 403):
                leaks.append(f"{other[0]}.{name} at {tbl.location()}: {got}")
        assert not leaks, "tables whose vended credential reads table a's metadata:\n" + "\n".join(leaks)
    finally:
        for ident in cat.list_tables(other):
            cat.drop_table(ident)
        cat.drop_namespace(other)


def _presigned_get(t: Table, key: str) -> None:
    url = t.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": key}, ExpiresIn=60)
    r = requests.get(url, timeout=10)
    if r.status_code != 200:
        raise ClientError({"Error": {"Code": _xml_code(r.text)}, "ResponseMetadata": {"HTTPStatusCode": r.status_code}},
                          "PresignedGet")


def _xml_code(text: str) -> str:
    start = text.find("<Code>")
    return text[start + 6:text.find("</Code>")] if start >= 0 else ""


def test_read_only_credentials_cannot_write(floe: FloeServer, tables: Any) -> None:
    ns, a, _, _ = tables
    ro = Table(floe, ns, "a", token=floe.fetch_token(scope="catalog:read"))
    assert ro.prefix == a.prefix
    assert ro.s3.get_object(Bucket=B, Key=ro.metadata_key)["Body"].read().startswith(b"{")
    assert ro.s3.list_objects_v2(Bucket=B, Prefix=ro.prefix)["KeyCount"] > 0
    a.s3.put_object(Bucket=B, Key=a.prefix + "scratch/ro-target", Body=b"keep")
    for what, call in [
        ("put", lambda: ro.s3.put_object(Bucket=B, Key=ro.prefix + "data/x.parquet", Body=b"x")),
        ("overwrite", lambda: ro.s3.put_object(Bucket=B, Key=ro.metadata_key, Body=b"{}")),
        ("delete", lambda: ro.s3.delete_object(Bucket=B, Key=a.prefix + "scratch/ro-target")),
        ("copy", lambda: ro.s3.copy_object(Bucket=B, Key=ro.prefix + "data/copy",
                                            CopySource={"Bucket": B, "Key": ro.metadata_key})),
        ("multipart", lambda: ro.s3.create_multipart_upload(Bucket=B, Key=ro.prefix + "data/mp")),
    ]:
        assert denied_with(call) == ("AccessDenied", 403), what
    out = ro.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": a.prefix + "scratch/ro-target"}]})
    assert [x["Code"] for x in out.get("Errors", [])] == ["AccessDenied"]
    assert a.s3.get_object(Bucket=B, Key=a.prefix + "scratch/ro-target")["Body"].read() == b"keep"
    assert a.s3.get_object(Bucket=B, Key=a.metadata_key)["Body"].read().startswith(b"{")


def _tamper(token: str, at: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    c = token[at]
    return token[:at] + ("A" if c != "A" else "B") + token[at + 1:] if c in alphabet else token


@pytest.fixture(scope="module")
def other_floe(request: pytest.FixtureRequest):
    """A second, unrelated Floe deployment (its own keys)."""
    srv = _start("other")
    yield srv
    _finish(srv, request)


def test_tampered_and_foreign_tokens_are_rejected(a: Table, b: Table, other_floe: FloeServer) -> None:
    tok = a.cfg["s3.session-token"]
    assert tok.startswith("FV1."), "embedded session token format"
    for at in (len(tok) // 2, len(tok) - 10, 6):
        bad = s3_client(a.cfg, **{"s3.session-token": _tamper(tok, at)})
        with pytest.raises(ClientError) as e:
            bad.get_object(Bucket=B, Key=a.metadata_key)
        assert err(e) in (("InvalidToken", 400), ("AccessDenied", 403)), (at, e.value.response)
    # a's token with b's access key id and secret, and a's key id and token with b's secret
    mixed = [
        ({"s3.access-key-id": b.cfg["s3.access-key-id"], "s3.secret-access-key": b.cfg["s3.secret-access-key"]},
         ("InvalidToken", 400)),
        ({"s3.secret-access-key": b.cfg["s3.secret-access-key"]}, ("SignatureDoesNotMatch", 403)),
        ({"s3.session-token": ""}, ("InvalidAccessKeyId", 403)),
        ({"s3.access-key-id": "AKIAIOSFODNN7EXAMPLE"}, ("InvalidAccessKeyId", 403)),
    ]
    for over, want in mixed:
        c = s3_client(a.cfg, **over)
        with pytest.raises(ClientError) as e:
            c.get_object(Bucket=B, Key=a.metadata_key)
        assert err(e) == want, (over.keys(), e.value.response)

    # A credential another Floe deployment vended, for a table of the same name there.
    cat = other_floe.catalog()
    ns = (a.prefix.split("/")[0],)
    cat.create_namespace(ns)
    cat.create_table(ns + ("a",), schema=KV).append(pa.Table.from_pylist([{"k": "x", "v": 1}], schema=KV))
    # Its location is its own, but let it claim a's: the token must still be refused.
    foreign_table = Table(other_floe, ns, "a")
    foreign = foreign_table.cfg
    assert foreign["s3.access-key-id"].startswith("FLOE")
    assert foreign_table.s3.list_objects_v2(Bucket=B, Prefix=foreign_table.prefix)["KeyCount"] > 0  # works at home
    at_ours = s3_client(foreign, **{"s3.endpoint": a.cfg["s3.endpoint"]})
    for what, call in (("list a", lambda: at_ours.list_objects_v2(Bucket=B, Prefix=a.prefix)),
                       ("get a", lambda: at_ours.get_object(Bucket=B, Key=a.metadata_key)),
                       ("list own", lambda: at_ours.list_objects_v2(Bucket=B, Prefix=foreign_table.prefix)),
                       ("put own", lambda: at_ours.put_object(Bucket=B, Key=foreign_table.prefix + "x", Body=b"x"))):
        assert denied_with(call) == ("InvalidToken", 400), what


# --- path tricks, as raw signed HTTP requests --------------------------------------


def raw(t: Table, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
        send_body: bytes | None = None) -> tuple[int, bytes]:
    """Send method path (exactly as given: no normalisation, no re-encoding) to the
    S3 endpoint, signed with t's credential (SigV4 with a signed payload: body;
    send_body, if given, is sent instead)."""
    endpoint = urllib.parse.urlsplit(t.cfg["s3.endpoint"])
    creds = Credentials(t.cfg["s3.access-key-id"], t.cfg["s3.secret-access-key"], t.cfg["s3.session-token"])
    req = AWSRequest(method=method, url=f"{endpoint.scheme}://{endpoint.netloc}{path}", data=body,
                     headers={"Host": endpoint.netloc, **(headers or {})})
    S3SigV4Auth(creds, "s3", t.cfg.get("client.region", "us-east-1")).add_auth(req)
    if send_body is not None:
        body = send_body
    conn = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in req.headers.items():
            conn.putheader(k, v)
        if body or method in ("PUT", "POST"):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_raw_signing_works(a: Table) -> None:
    """The raw client itself: a plain GET of a's metadata file succeeds."""
    status, body = raw(a, "GET", f"/{B}/{a.metadata_key}")
    assert status == 200 and body.startswith(b"{"), (status, body[:300])


def test_path_tricks_cannot_escape(floe: FloeServer, a: Table, b: Table) -> None:
    b_rel = b.metadata_key[len(b.prefix):]  # metadata/xxx.metadata.json
    a_table = a.prefix.rstrip("/").rsplit("/", 1)[1]
    b_table = b.prefix.rstrip("/").rsplit("/", 1)[1]
    reads = [
        f"/{B}/{a.prefix}../{b_table}/{b_rel}",
        f"/{B}/{a.prefix}%2e%2e/{b_table}/{b_rel}",
        f"/{B}/{a.prefix}%2E%2E/{b_table}/{b_rel}",
        f"/{B}/{a.prefix}..%2f{b_table}/{b_rel}",
        f"/{B}/{a.prefix}%2e%2e%2f{b_table}%2f{b_rel.replace('/', '%2f')}",
        f"/{B}/{a.prefix}./../{b_table}/{b_rel}",
        f"/{B}/{a.prefix}..%5c{b_table}%5c{b_rel}",
        f"/{B}/{a.prefix}../../../../../../etc/passwd",
        f"/{B}/{a.prefix}%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        f"/{B}//etc/passwd",
        f"/{B}/%2fetc%2fpasswd",
        f"/{B}/{a.prefix}/etc/passwd",
        f"/{B}/../{B}/{b.metadata_key}",
        f"/{B}/%2e%2e/{B}/{b.metadata_key}",
        f"/{B}/{a.prefix}..%00/{b_table}",
        f"/{B}/{a.prefix}" + "x" * 2000,
    ]
    for path in reads:
        status, body = raw(a, "GET", path)
        assert status in (400, 403, 404), (path, status, body[:300])
        assert b'"format-version"' not in body and b"root:" not in body, path
        code = _xml_code(body.decode(errors="replace"))
        assert code != "SignatureDoesNotMatch", (path, "the request must be judged on its key, not on its signature")

    before = {p for p in floe.data_dir.parent.rglob("*")}
    writes = [
        f"/{B}/{a.prefix}../{b_table}/metadata/evil.json",
        f"/{B}/{a.prefix}%2e%2e/{b_table}/metadata/evil.json",
        f"/{B}/{a.prefix}../../../../escape.txt",
        f"/{B}/{a.prefix}%2e%2e/%2e%2e/%2e%2e/%2e%2e/escape.txt",
        f"/{B}//tmp/escape.txt",
        f"/{B}/{a.prefix}data/.floe-reserved",
    ]
    for path in writes:
        status, body = raw(a, "PUT", path, body=b"escaped")
        assert status in (400, 403, 404), (path, status, body[:300])
        assert _xml_code(body.decode(errors="replace")) != "SignatureDoesNotMatch", path
    for path in writes[:2]:
        status, body = raw(a, "DELETE", path.replace("evil.json", b_rel.rsplit("/", 1)[1]))
        assert status in (400, 403, 404), (path, status, body[:300])
    created = {p for p in floe.data_dir.parent.rglob("*")} - before
    assert not [p for p in created if p.is_file() and p.read_bytes().endswith(b"escaped")], created
    assert not any("escape" in p.name or "evil" in p.name for p in created), created
    assert not os.path.exists("/tmp/escape.txt") or open("/tmp/escape.txt", "rb").read() != b"escaped"
    assert b.s3.head_object(Bucket=B, Key=b.metadata_key)["ContentLength"] > 0
    assert a_table != b_table


def test_signed_payload_and_checksums(a: Table, scratch: str) -> None:
    """A payload that does not match its signed hash, its Content-MD5 or its x-amz-checksum is refused."""
    key = f"/{B}/{scratch}checked.bin"
    status, body = raw(a, "PUT", key, body=b"good")
    assert status == 200, body
    status, body = raw(a, "PUT", key, body=b"good", send_body=b"evil")
    assert status == 400 and _xml_code(body.decode()) == "XAmzContentSHA256Mismatch", body
    good_md5 = base64.b64encode(hashlib.md5(b"good").digest()).decode()
    status, body = raw(a, "PUT", key, body=b"evil", headers={"Content-MD5": good_md5})
    assert status == 400 and _xml_code(body.decode()) in ("BadDigest", "InvalidDigest"), body
    bad_sha = base64.b64encode(hashlib.sha256(b"good").digest()).decode()
    status, body = raw(a, "PUT", key, body=b"evil", headers={"x-amz-checksum-sha256": bad_sha})
    assert status == 400 and _xml_code(body.decode()) in ("BadDigest", "XAmzContentChecksumMismatch",
                                                           "InvalidRequest"), body
    assert a.s3.get_object(Bucket=B, Key=key.split("/", 2)[2])["Body"].read() == b"good"


def test_refused_upload_is_answered_before_its_body(a: Table, b: Table) -> None:
    """A PUT sent with Expect: 100-continue (as boto3 and the AWS SDKs send
    uploads) that Floe refuses gets its error at once: Floe neither waits for
    nor reads a body it will not store (no stall, and no reading up to 256 KiB
    of an unauthenticated upload)."""
    endpoint = urllib.parse.urlsplit(a.cfg["s3.endpoint"])
    creds = Credentials(a.cfg["s3.access-key-id"], a.cfg["s3.secret-access-key"], a.cfg["s3.session-token"])
    for what, key, spoil in (("another table's key", b.prefix + "data/x", False), ("bad signature", a.prefix + "x", True)):
        path = f"/{B}/{key}"
        req = AWSRequest(method="PUT", url=f"http://{endpoint.netloc}{path}", data=b"x" * 1000,
                         headers={"Host": endpoint.netloc, "Expect": "100-continue", "Content-Length": "1000"})
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        if spoil:
            req.headers.replace_header("Authorization", req.headers["Authorization"][:-64] + "0" * 64)
        conn = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=3)
        try:
            conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
            for k, v in req.headers.items():
                conn.putheader(k, v)
            conn.endheaders()  # the body is held back until the server asks for it
            try:
                resp = conn.getresponse()
            except TimeoutError:
                pytest.fail(f"{what}: no answer within 3 s while the client waits for 100 Continue")
            assert resp.status == 403, (what, resp.status, resp.read()[:300])
        finally:
            conn.close()
