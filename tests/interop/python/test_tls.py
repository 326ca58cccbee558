"""TLS on every listener, with real clients (issue 15, part D).

A Floe server started with `floe serve --tls-self-signed --demo` serves the
REST catalog, the S3 endpoint and the SQL endpoint over TLS with a local CA it
made in <data-dir>/tls/ca.pem. The clients trust that CA the way a user would:
PyIceberg with ssl={"cabundle": ...} for the catalog and SSL_CERT_FILE for its
pyarrow S3 file IO, boto3 with verify=<ca>, psycopg and psql with
sslmode=verify-full sslrootcert=<ca>. A second server verifies client
certificates (--tls-client-ca, --rest-tls-client-auth optional) and maps them
to principals (FLOE_TLS_CLIENT_PRINCIPALS).

The PyIceberg reads run in a child interpreter: pyarrow's S3 layer reads
SSL_CERT_FILE once per process, and this suite must not change how the rest
of the interop tests trust certificates.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import psycopg
import pytest
from botocore.config import Config
from conftest import WAREHOUSE, FloeServer, RestError, _finish, floe_binary

import floe_server


class _TrustHandler(urllib.request.HTTPSHandler):
    """An HTTPS handler trusting the CA file of whichever TLS server it is used
    for (read at each connection: the file appears while the server starts)."""

    def __init__(self) -> None:
        super().__init__()
        self.ca: Path | None = None
        self.cert: tuple[str, str] | None = None

    def https_open(self, req):  # noqa: D102
        ctx = ssl.create_default_context(cafile=str(self.ca)) if self.ca and self.ca.exists() else ssl.create_default_context()
        if self.cert:
            ctx.load_cert_chain(*self.cert)
        return self.do_open(urllib.request.http.client.HTTPSConnection, req, context=ctx)


class TLSServer(FloeServer):
    """A Floe server with --tls-self-signed (and the demo dataset)."""

    def __init__(self, binary: Path, name: str, extra: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        super().__init__(binary, name, demo=True)
        self._extra = extra or []
        self._env = env or {}

    @property
    def uri(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return self.data_dir / "tls" / "ca.pem"

    def serve_args(self) -> list[str]:
        return super().serve_args() + ["--tls-self-signed"] + self._extra

    def extra_env(self) -> dict[str, str]:
        return dict(self._env)


_handler = _TrustHandler()


@pytest.fixture(scope="module", autouse=True)
def _trusting_opener():
    """urllib (the fixtures' REST client) trusts the server's CA during this module."""
    urllib.request.install_opener(urllib.request.build_opener(_handler))
    yield
    urllib.request.install_opener(urllib.request.build_opener())


def _start(name: str, **kw) -> TLSServer:
    srv = TLSServer(floe_binary(), name, **kw)
    floe_server.servers.append(srv)
    try:
        _handler.ca = srv.ca
        srv.start()
    except Exception:
        srv.stop()
        raise
    return srv


@pytest.fixture(scope="module")
def floe_tls(request: pytest.FixtureRequest):
    srv = _start("tls")
    yield srv
    _finish(srv, request)


def _pyiceberg(script: str, env: dict[str, str]) -> dict:
    """Runs a PyIceberg script in a child interpreter; it prints one JSON line."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    full.update(env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def _read_accounts(srv: TLSServer, ssl_props: dict | None, env: dict[str, str]) -> dict:
    props = {"uri": srv.uri, "warehouse": WAREHOUSE, "credential": srv.credential, "oauth2-server-uri": srv.token_url}
    if ssl_props is not None:
        props["ssl"] = ssl_props
    script = f"""
        import json
        from pyiceberg.catalog.rest import RestCatalog
        try:
            cat = RestCatalog("floe", **{props!r})
            t = cat.load_table("crm.accounts")
            n = t.scan().to_arrow().num_rows
            print(json.dumps({{"rows": n, "endpoint": t.io.properties.get("s3.endpoint", "")}}))
        except Exception as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)}}))
    """
    return _pyiceberg(script, env)


def test_pyiceberg_reads_a_table_over_https(floe_tls: TLSServer) -> None:
    out = _read_accounts(floe_tls, {"cabundle": str(floe_tls.ca)}, {"SSL_CERT_FILE": str(floe_tls.ca)})
    assert out.get("rows") == 500, out
    assert out["endpoint"].startswith("https://"), out


def test_pyiceberg_without_the_ca_is_refused(floe_tls: TLSServer) -> None:
    out = _read_accounts(floe_tls, None, {})
    assert "error" in out and ("SSL" in out["error"] or "certificate" in out["error"]), out


def _s3(cfg: dict[str, str], verify) -> object:
    return boto3.client(
        "s3", endpoint_url=cfg["s3.endpoint"], region_name=cfg.get("client.region", "us-east-1"),
        aws_access_key_id=cfg["s3.access-key-id"], aws_secret_access_key=cfg["s3.secret-access-key"],
        aws_session_token=cfg.get("s3.session-token"), verify=verify,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def test_boto3_over_https_with_vended_credentials(floe_tls: TLSServer) -> None:
    lt = floe_tls.load_table_raw(("crm",), "accounts", delegation="vended-credentials")
    cfg = lt["config"]
    assert cfg["s3.endpoint"].startswith("https://"), cfg["s3.endpoint"]
    key = lt["metadata-location"].removeprefix(f"s3://{WAREHOUSE}/")
    body = _s3(cfg, str(floe_tls.ca)).get_object(Bucket=WAREHOUSE, Key=key)["Body"].read()
    assert b'"format-version"' in body
    from botocore.exceptions import SSLError

    with pytest.raises(SSLError):
        _s3(cfg, True).get_object(Bucket=WAREHOUSE, Key=key)  # the system CAs do not vouch for it


def test_plain_http_to_a_tls_listener_is_refused_clearly(floe_tls: TLSServer) -> None:
    for url in (f"http://127.0.0.1:{floe_tls.port}/v1/config", floe_tls.s3_url.replace("https://", "http://") + "/"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.build_opener().open(url, timeout=10)
        assert e.value.code == 400
        assert "HTTP request to an HTTPS server" in e.value.read().decode()


def test_psycopg_and_psql_verify_full(floe_tls: TLSServer) -> None:
    tok = floe_tls.fetch_token()
    with psycopg.connect(host="127.0.0.1", port=floe_tls.sql_port, user="admin", password=tok, dbname=WAREHOUSE,
                         sslmode="verify-full", sslrootcert=str(floe_tls.ca), connect_timeout=10) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT count(*) FROM crm.accounts").fetchone()[0] == 500
    # verify-full checks the name: 127.0.0.1 is in the certificate, a stranger's CA is not trusted.
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host="127.0.0.1", port=floe_tls.sql_port, user="admin", password=tok, dbname=WAREHOUSE,
                        sslmode="verify-full", sslrootcert="system", connect_timeout=10)
    p = subprocess.run(["psql", f"host=127.0.0.1 port={floe_tls.sql_port} user=admin dbname={WAREHOUSE} "
                        f"sslmode=verify-full sslrootcert={floe_tls.ca}", "-tAc", "SELECT count(*) FROM crm.accounts"],
                       env={**os.environ, "PGPASSWORD": tok}, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "500", p.stderr


def test_ca_is_reused_on_restart(request: pytest.FixtureRequest) -> None:
    srv = _start("tls-restart")
    try:
        first = srv.ca.read_bytes()
        assert "created" in srv.stdout_text()
        srv.stop()
        srv.start()
        assert srv.ca.read_bytes() == first, "the CA changed on restart: clients would have to trust it again"
        assert "(reused)" in srv.stdout_text()
    finally:
        _finish(srv, request)


# --- mTLS ----------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def client_pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A client CA and certificates for CN admin-box (mapped to admin) and CN intruder (unmapped)."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "2", "-subj", "/CN=test client CA", cwd=d)
    for cn in ("admin-box", "intruder", "etl-box"):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{cn}.key",
                 "-out", f"{cn}.csr", "-subj", f"/CN={cn}", cwd=d)
        _openssl("x509", "-req", "-in", f"{cn}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{cn}.pem", "-days", "2", cwd=d)
    return d


@pytest.fixture(scope="module")
def floe_mtls(request: pytest.FixtureRequest, client_pki: Path):
    srv = _start("mtls", extra=["--tls-client-ca", str(client_pki / "ca.pem"), "--rest-tls-client-auth", "optional",
                                     "--s3-tls-client-auth", "optional"],
                 env={"FLOE_TLS_CLIENT_PRINCIPALS": "cn:admin-box=admin,cn:etl-box=etl"})
    yield srv
    _finish(srv, request)


def test_client_certificate_maps_to_a_principal(floe_mtls: TLSServer, client_pki: Path) -> None:
    # PyIceberg with a client certificate and no credential at all acts as admin.
    script = f"""
        import json
        from pyiceberg.catalog.rest import RestCatalog
        cat = RestCatalog("floe", uri={floe_mtls.uri!r}, warehouse={WAREHOUSE!r},
                          ssl={{"cabundle": {str(floe_mtls.ca)!r}, "client": {{"cert": {str(client_pki / "admin-box.pem")!r},
                               "key": {str(client_pki / "admin-box.key")!r}}}}})
        print(json.dumps({{"namespaces": [list(n) for n in cat.list_namespaces()]}}))
    """
    out = _pyiceberg(script, {})
    assert ["crm"] in out["namespaces"], out
    # The same call with an unmapped certificate is refused, saying why.
    _handler.cert = (str(client_pki / "intruder.pem"), str(client_pki / "intruder.key"))
    try:
        with pytest.raises(RestError) as e:
            floe_mtls.request("GET", f"/v1/{WAREHOUSE}/namespaces")
        assert e.value.status == 401 and "not mapped to a principal" in e.value.body, e.value
        _handler.cert = (str(client_pki / "admin-box.pem"), str(client_pki / "admin-box.key"))
        # whoami names the principal of the certificate.
        assert floe_mtls.request("GET", "/api/v1/whoami")["principal"] == "admin"
    finally:
        _handler.cert = None
    # The refusal is in the audit trail (written asynchronously).
    deadline = time.monotonic() + 10
    while True:
        p = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(floe_mtls.data_dir),
                            "--action", "auth.client_certificate", "--json"], capture_output=True, text=True, timeout=60)
        if "cn:intruder" in p.stdout and "unauthenticated" in p.stdout or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert "cn:intruder" in p.stdout and "unauthenticated" in p.stdout, (p.stdout, p.stderr)


def test_s3_client_certificate_must_match_the_credential(floe_mtls: TLSServer, client_pki: Path) -> None:
    """boto3 still signs with the vended credential; a client certificate, when
    sent, must map to the principal the credential was vended to."""
    from botocore.exceptions import ClientError

    lt = floe_mtls.load_table_raw(("crm",), "accounts", delegation="vended-credentials")  # vended to admin
    cfg, key = lt["config"], lt["metadata-location"].removeprefix(f"s3://{WAREHOUSE}/")

    def get(cn: str | None) -> bytes:
        c = boto3.client(
            "s3", endpoint_url=cfg["s3.endpoint"], region_name=cfg.get("client.region", "us-east-1"),
            aws_access_key_id=cfg["s3.access-key-id"], aws_secret_access_key=cfg["s3.secret-access-key"],
            aws_session_token=cfg.get("s3.session-token"), verify=str(floe_mtls.ca),
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          client_cert=(str(client_pki / f"{cn}.pem"), str(client_pki / f"{cn}.key")) if cn else None),
        )
        return c.get_object(Bucket=WAREHOUSE, Key=key)["Body"].read()

    assert b'"format-version"' in get("admin-box")
    assert b'"format-version"' in get(None)  # optional: no certificate, the credential alone
    for cn in ("etl-box", "intruder"):  # another principal's certificate; an unmapped one
        with pytest.raises(ClientError) as e:
            get(cn)
        assert e.value.response["Error"]["Code"] == "AccessDenied", (cn, e.value.response)
