"""Keys at rest (issue 15 item 2), with real clients.

- A copy of the SQLite store holds no usable token-signing key: an admin JWT
  forged from what it holds is refused by the REST catalog (requests: 401;
  PyIceberg: the catalog refuses to list namespaces).
- With key_wrapper kms against moto's KMS (started here; a customer-managed
  key created with boto3), Floe seals its keys and the objects' data keys
  under that key, restarts and reads everything back, and re-wraps the
  store's secrets when the configured KMS key changes.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pyarrow as pa
import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

import floe_server
from conftest import FloeServer, _finish, floe_binary

MAGIC = b"floe-kw1"


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def copy_store(srv: FloeServer, dest: Path) -> sqlite3.Connection:
    """Copy the SQLite store (database and WAL) as a backup would."""
    for suffix in ("", "-wal"):
        src = srv.data_dir / ("floe.db" + suffix)
        if src.exists():
            (dest / ("copy.db" + suffix)).write_bytes(src.read_bytes())
    return sqlite3.connect(dest / "copy.db")


def forge_token(db: sqlite3.Connection, issuer: str) -> tuple[str, bool]:
    """An admin JWT signed with the first usable key in the copy, or (none
    being usable) with a fresh key under the newest kid."""
    admin_id, client_id = db.execute("SELECT id, client_id FROM principals WHERE name = 'admin'").fetchone()
    rows = db.execute("SELECT kid, private_pem FROM signing_keys ORDER BY created_at DESC").fetchall()
    assert rows, "the store copy holds no signing key row"
    kid, key, stolen = rows[0][0], None, False
    for k, blob in rows:
        try:
            key = serialization.load_pem_private_key(bytes(blob), password=None)
            kid, stolen = k, True
            break
        except (ValueError, TypeError):
            continue
    if key is None:
        key = ec.generate_private_key(ec.SECP256R1())
    now = int(time.time())
    header = {"alg": "ES256", "typ": "JWT", "kid": kid}
    claims = {"iss": issuer, "sub": admin_id, "aud": issuer, "iat": now, "nbf": now, "exp": now + 600,
              "jti": str(uuid.uuid4()), "client_id": client_id, "name": "admin", "scope": "catalog", "adm": True}
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}".encode()
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return signing_input.decode() + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")), stolen


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    srv = FloeServer(floe_binary(), "keys-at-rest")
    floe_server.servers.append(srv)
    srv.start()
    yield srv
    _finish(srv, request)


def test_store_copy_cannot_sign_admin_token(server: FloeServer, tmp_path: Path) -> None:
    cat = server.catalog()
    cat.create_namespace(("kar",))
    db = copy_store(server, tmp_path)
    for table, col in (("signing_keys", "private_pem"), ("vend_keys", "secret")):
        for (blob,) in db.execute(f"SELECT {col} FROM {table}"):
            assert bytes(blob).startswith(MAGIC), f"{table} holds an unsealed key"
            assert b"PRIVATE KEY" not in bytes(blob)
    raw = b"".join(p.read_bytes() for p in server.data_dir.glob("floe.db*"))
    assert b"PRIVATE KEY" not in raw, "the SQLite files hold a plaintext private key"

    token, stolen = forge_token(db, server.uri)
    assert not stolen, "a usable private key was found in the store copy"
    r = requests.get(f"{server.uri}/v1/floe/namespaces", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 401, r.text
    with pytest.raises(Exception) as exc:
        server.catalog(token=token).list_namespaces()
    assert "401" in str(exc.value) or "Unauthorized" in type(exc.value).__name__ or "not authorized" in str(exc.value).lower(), exc.value
    # The real credential still works.
    assert ("kar",) in cat.list_namespaces()


# --- AWS KMS through moto ------------------------------------------------

REGION = "us-east-1"


class MotoKMS:
    def __init__(self, dir: Path) -> None:
        self.dir, self.proc, self.port = dir, None, 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = floe_server.free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=open(self.dir / "moto.log", "wb"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError((self.dir / "moto.log").read_text(errors="replace"))

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def kms(self):
        return boto3.client("kms", endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id="testing", aws_secret_access_key="testing")


class KMSFloe(FloeServer):
    def __init__(self, moto: MotoKMS, key_id: str) -> None:
        super().__init__(floe_binary(), "keys-kms")
        self.moto, self.key_id = moto, key_id

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_KEY_WRAPPER": "kms", "FLOE_KMS_KEY_ID": self.key_id, "FLOE_KMS_ENDPOINT": self.moto.url,
                "FLOE_KMS_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


def wrapping_key_ids(srv: FloeServer) -> set[str]:
    db = sqlite3.connect(f"file:{srv.data_dir / 'floe.db'}?mode=ro", uri=True)
    try:
        out = set()
        for (blob,) in db.execute("SELECT private_pem FROM signing_keys UNION ALL SELECT secret FROM vend_keys"):
            b = bytes(blob)
            assert b.startswith(MAGIC), "unsealed key in the store"
            out.add(b[len(MAGIC) + 1:len(MAGIC) + 1 + b[len(MAGIC)]].decode())
        return out
    finally:
        db.close()


def test_kms_wrapper_round_trip(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    moto = MotoKMS(tmp_path)
    moto.start()
    request.addfinalizer(moto.stop)
    kms = moto.kms()
    key1 = kms.create_key(Description="floe keys at rest 1")["KeyMetadata"]["Arn"]

    srv = KMSFloe(moto, key1)
    floe_server.servers.append(srv)
    try:
        srv.start()
        cat = srv.catalog()
        cat.create_namespace(("kms",))
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        t = cat.create_table(("kms", "t"), schema=schema)
        t.append(pa.table({"id": list(range(100))}, schema=schema))
        assert wrapping_key_ids(srv) == {key1}

        # Restart: every key and data key is unwrapped through KMS again.
        srv.stop()
        srv.start()
        assert srv.catalog().load_table(("kms", "t")).scan().to_arrow().num_rows == 100

        # A new customer-managed key: the store's secrets move to it on start;
        # objects wrapped under the first key still read.
        meta2 = kms.create_key(Description="floe keys at rest 2")["KeyMetadata"]
        key2 = meta2["Arn"]
        srv.stop()
        srv.key_id = key2
        srv.start()
        assert wrapping_key_ids(srv) == {key2}
        assert srv.catalog().load_table(("kms", "t")).scan().to_arrow().num_rows == 100

        # A KMS key that does not exist: the node refuses to start rather
        # than keep secrets it cannot wrap.
        srv.stop()
        srv.key_id = f"arn:aws:kms:{REGION}:123456789012:key/{uuid.uuid4()}"
        with pytest.raises(Exception):
            srv.start()
        assert "kms" in srv.stderr_tail().lower()
    finally:
        _finish(srv, request)
