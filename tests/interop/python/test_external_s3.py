"""External S3 mode: Floe's warehouse on an S3-compatible store, vending through STS.

The S3 and STS implementation is moto's server (`python -m moto.server`, the
pinned moto[server] from PyPI), run on a loopback port for this module. Floe
runs with FLOE_STORAGE=s3 on s3://lake/warehouse, path-style, with moto as
both its S3 endpoint (FLOE_S3_ENDPOINT) and its STS endpoint
(FLOE_STS_ENDPOINT); its own credentials are an IAM user's access key from the
AWS default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in its
environment). PyIceberg is configured with the catalog URI and a catalog
credential only.

moto runs with IAM authentication on (after the IAM user, its key and the
role are created): every request must be signed with an access key moto
issued, and the signer's identity must be allowed the action by its IAM
policies.

What this proves:
  - Floe writes table metadata to the external store with its base
    credentials from the default chain, and serves it back.
  - Floe vends STS AssumeRole credentials (access key ids "ASIA...", with a
    session token), not its own key, and PyIceberg creates, appends to and
    scans a table with exactly those: moto checks each request's SigV4
    signature and session token against the assumed-role session it issued.
  - The vended credential is a session of the role Floe was given (STS
    GetCallerIdentity with it names the assumed role), and each AssumeRole
    request (read from moto's request recording) carries an inline session
    policy that allows objects under the table's prefix only, with write
    actions for a `catalog` token and none for `catalog:read`.
  - The credentials endpoint mints a fresh STS credential.

What it does not prove:
  - That the session policy is enforced. moto authorizes an assumed-role
    credential with the role's own policies only and ignores session
    policies, so a vended credential could reach another table's files on
    moto (the role here allows the whole bucket). On AWS S3 the effective
    permissions are the intersection of the role's policies and the session
    policy; the policy's content is what is checked here (and in vend's Go
    tests), not its effect.
  - Anything about AWS-specific behaviour moto does not model (real
    credential expiry, KMS, virtual-hosted addressing, regions).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from botocore.config import Config

import floe_server
from conftest import FloeServer, _finish, floe_binary

BUCKET = "lake"
PREFIX = "warehouse"
REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/floe-vend"
KV = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])


class Moto:
    """A moto server process on a loopback port."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.recording = dir / "recording.jsonl"  # every request moto receives

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        for _ in range(3):
            self.port = floe_server.free_port()
            log = open(self.dir / "moto.log", "wb")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_", "TEST_"))}
            env.update(MOTO_ENABLE_RECORDING="true", MOTO_RECORDER_FILEPATH=str(self.recording))
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=2):
                        return
                except OSError:
                    time.sleep(0.1)
            self.stop()
        raise RuntimeError(f"moto server did not start:\n{(self.dir / 'moto.log').read_text(errors='replace')}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def client(self, service: str, key: str, secret: str, token: str | None = None) -> Any:
        return boto3.client(service, endpoint_url=self.url, region_name=REGION, aws_access_key_id=key,
                            aws_secret_access_key=secret, aws_session_token=token,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def assume_role_requests(self) -> list[dict[str, str]]:
        """The parameters of every STS AssumeRole request moto received, in order.
        (moto's /moto-api/data.json would have the sessions, but fails with a 500
        once S3 multipart uploads have run, so the request recording it is.)"""
        out = []
        for line in self.recording.read_text().splitlines():
            e = json.loads(line)
            body = e.get("body") or ""
            if e.get("body_encoded"):
                body = base64.b64decode(body).decode(errors="replace")
            if e["method"] == "POST" and "Action=AssumeRole" in body:
                out.append({k: v[0] for k, v in urllib.parse.parse_qs(body).items()})
        return out

    def enable_auth(self) -> None:
        """From now on moto authenticates and authorizes every request (IAM)."""
        req = urllib.request.Request(f"{self.url}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req, timeout=10):
            pass


class ExternalFloe(FloeServer):
    """Floe with its warehouse on moto's S3, vending through moto's STS."""

    expect_s3 = False  # no embedded S3 endpoint with external storage

    def __init__(self, binary: Path, moto: Moto, key: str, secret: str) -> None:
        super().__init__(binary, "external-s3")
        self.moto, self.key, self.secret = moto, key, secret

    def extra_env(self) -> dict[str, str]:
        return {
            "FLOE_STORAGE": "s3",
            "FLOE_WAREHOUSE_LOCATION": f"s3://{BUCKET}/{PREFIX}",
            "FLOE_S3_ENDPOINT": self.moto.url,
            "FLOE_S3_PATH_STYLE": "true",
            "FLOE_STS_ENDPOINT": self.moto.url,
            "FLOE_S3_ROLE_ARN": ROLE_ARN,
            "FLOE_REGION": REGION,
            # the AWS default chain: this key and nothing else
            "AWS_ACCESS_KEY_ID": self.key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    moto = Moto(tmp_path_factory.mktemp("moto"))
    moto.start()
    try:
        # IAM and the bucket first, while moto still lets everything in.
        root = moto.client("iam", "testing", "testing")
        root.create_user(UserName="floe")
        root.put_user_policy(UserName="floe", PolicyName="floe", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:*"], "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]},
                {"Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": [ROLE_ARN]}]}))
        ak = root.create_access_key(UserName="floe")["AccessKey"]
        root.create_role(RoleName="floe-vend", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/floe"}}]}))
        root.put_role_policy(RoleName="floe-vend", PolicyName="tables", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:*"], "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}]}))
        moto.client("s3", "testing", "testing").create_bucket(Bucket=BUCKET)
        moto.enable_auth()
        floe_admin = moto.client("s3", ak["AccessKeyId"], ak["SecretAccessKey"])
        with pytest.raises(Exception):  # auth is on: a key moto never issued is refused
            moto.client("s3", "testing", "testing").list_objects_v2(Bucket=BUCKET)

        srv = ExternalFloe(floe_binary(), moto, ak["AccessKeyId"], ak["SecretAccessKey"])
        floe_server.servers.append(srv)
        try:
            srv.start()
        except Exception:
            srv.stop()
            floe_server.servers.remove(srv)
            raise
        yield moto, srv, floe_admin
        _finish(srv, request)
    finally:
        moto.stop()


def test_pyiceberg_through_sts_credentials(env: Any) -> None:
    moto, floe, admin = env
    assert "S3 endpoint:" not in floe.stdout_text()
    cat = floe.catalog()
    ns = (f"ext_{uuid.uuid4().hex[:8]}",)
    cat.create_namespace(ns)
    tbl = cat.create_table(ns + ("t",), schema=KV)
    assert tbl.location().startswith(f"s3://{BUCKET}/{PREFIX}/"), tbl.location()
    vended = tbl.io.properties.get("s3.access-key-id", "")
    assert vended.startswith("ASIA") and vended != floe.key, vended
    assert tbl.io.properties.get("s3.session-token")

    tbl.append(pa.Table.from_pylist([{"k": "a", "v": 1}, {"k": "b", "v": 2}], schema=KV))
    tbl = cat.load_table(ns + ("t",))
    tbl.append(pa.Table.from_pylist([{"k": "c", "v": 3}], schema=KV))
    tbl = cat.load_table(ns + ("t",))
    assert sorted((r["k"], r["v"]) for r in tbl.scan().to_arrow().to_pylist()) == [("a", 1), ("b", 2), ("c", 3)]
    tbl.delete("k = 'a'")
    tbl = cat.load_table(ns + ("t",))
    assert sorted(r["k"] for r in tbl.scan().to_arrow().to_pylist()) == ["b", "c"]

    # The files are where the table says, in moto's bucket.
    table_prefix = tbl.location().removeprefix(f"s3://{BUCKET}/") + "/"
    keys = [o["Key"] for o in admin.list_objects_v2(Bucket=BUCKET, Prefix=table_prefix).get("Contents", [])]
    assert any(k.startswith(table_prefix + "data/") and k.endswith(".parquet") for k in keys), keys
    assert tbl.metadata_location.removeprefix(f"s3://{BUCKET}/") in keys

    # The vended credential is a session of Floe's role, requested with a
    # session policy scoped to the table.
    used = tbl.io.properties["s3.access-key-id"]
    who = moto.client("sts", used, tbl.io.properties["s3.secret-access-key"], tbl.io.properties["s3.session-token"])
    arn = who.get_caller_identity()["Arn"]
    assert arn.startswith(f"arn:aws:sts::{ACCOUNT}:assumed-role/floe-vend/floe-"), arn
    [*_, last] = moto.assume_role_requests()
    assert last["RoleArn"] == ROLE_ARN and last["RoleSessionName"].startswith("floe-"), last
    assert 900 <= int(last["DurationSeconds"]) <= 3600, last
    check_policy(json.loads(last["Policy"]), table_prefix, write=True)

    # A catalog:read token gets a read-only policy, and can read.
    n = len(moto.assume_role_requests())
    ro = floe.catalog("ro", token=floe.fetch_token(scope="catalog:read"))
    rtbl = ro.load_table(ns + ("t",))
    assert sorted(r["k"] for r in rtbl.scan().to_arrow().to_pylist()) == ["b", "c"]
    ro_key = rtbl.io.properties["s3.access-key-id"]
    assert ro_key.startswith("ASIA") and ro_key != used
    [ro_req] = moto.assume_role_requests()[n:]
    check_policy(json.loads(ro_req["Policy"]), table_prefix, write=False)

    # The credentials endpoint mints a fresh session.
    token = floe.fetch_token()
    fresh = floe.request("GET", f"/v1/floe/namespaces/{ns[0]}/tables/t/credentials", token=token)
    [sc] = fresh["storage-credentials"]
    assert sc["prefix"].rstrip("/") == tbl.location()
    c = sc["config"]
    assert c["s3.access-key-id"].startswith("ASIA") and c["s3.access-key-id"] not in (used, ro_key)
    s3 = moto.client("s3", c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])
    assert s3.get_object(Bucket=BUCKET, Key=tbl.metadata_location.removeprefix(f"s3://{BUCKET}/"))["Body"].read()
    cfg = floe.load_table_raw(ns, "t", token=token)["config"]
    assert cfg["s3.endpoint"] == moto.url and cfg["s3.path-style-access"] == "true"

    cat.purge_table(ns + ("t",))
    cat.drop_namespace(ns)


def check_policy(policy: dict[str, Any], table_prefix: str, write: bool) -> None:
    """The session policy allows objects under s3://lake/<table_prefix> only, and writes only if write."""
    obj = f"arn:aws:s3:::{BUCKET}/{table_prefix}*"
    actions: dict[str, set[str]] = {}
    for st in policy["Statement"]:
        assert st["Effect"] == "Allow", st
        for act in st["Action"]:
            for res in st["Resource"]:
                actions.setdefault(act, set()).add(res)
        if "s3:ListBucket" in st["Action"]:
            assert st["Resource"] == [f"arn:aws:s3:::{BUCKET}"], st
            prefixes = st["Condition"]["StringLike"]["s3:prefix"]
            assert prefixes and all(p.startswith(table_prefix) for p in prefixes), st
    assert actions.get("s3:GetObject") == {obj}, actions
    for act, res in actions.items():
        if act not in ("s3:ListBucket", "s3:GetBucketLocation"):
            assert res == {obj}, (act, res)
    writes = {"s3:PutObject", "s3:DeleteObject"}
    if write:
        assert writes <= set(actions), actions
    else:
        assert not writes & set(actions), actions
