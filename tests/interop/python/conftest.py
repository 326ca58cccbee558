"""Fixtures that run a real Floe server for the PyIceberg interop suite.

The server itself (binary lookup via $FLOE_BIN, free port, temporary data
directory, random bootstrap credential, start and stop) is
tests/interop/floe_server.py, shared with the Spark suite; this adds the demo
server, PyIceberg catalogs and raw REST and S3 helpers. Servers are stopped
(terminate, then kill) when their fixture ends. When a test fails, the tail of
each running server's stderr is attached to its report.

PyIceberg catalogs get the catalog URI, warehouse and a credential only: table
files are read and written through Floe's embedded S3 endpoint with the
credentials Floe vends with each table. AWS_* variables are taken out of this
process's environment so that nothing else can supply storage credentials.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/interop, for floe_server

import floe_server
import pytest
from floe_server import WAREHOUSE, RestError, floe_binary  # noqa: F401  (RestError: for the tests)
from pyiceberg.catalog.rest import RestCatalog

DEMO_TIMEOUT = 180.0  # seconds for "Demo dataset ready" on a slow 2-core box

for _k in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[_k]

_servers = floe_server.servers


class FloeServer(floe_server.FloeServer):
    """One `floe serve` process on a temporary data directory, optionally with --demo."""

    def __init__(self, binary: Path, name: str, demo: bool = False) -> None:
        super().__init__(binary, name, client_prefix="interop-", dir_prefix=f"floe-interop-{name}-")
        self.demo = demo

    def serve_args(self) -> list[str]:
        return ["--demo"] if self.demo else []

    def wait_ready(self) -> None:
        if self.demo:
            self.wait_for_stdout("Demo dataset ready", DEMO_TIMEOUT)

    def catalog(self, name: str = "floe", **props: Any) -> RestCatalog:
        """A fresh PyIceberg RestCatalog logged in with the bootstrap credential
        unless props say otherwise (token=..., credential=...)."""
        base: dict[str, Any] = {
            "uri": self.uri,
            "warehouse": WAREHOUSE,
            "oauth2-server-uri": self.token_url,
        }
        if "token" not in props and "credential" not in props:
            base["credential"] = self.credential
        base.update(props)
        return RestCatalog(name, **base)

    def load_table_raw(self, ns: tuple[str, ...], table: str, token: str | None = None,
                       delegation: str | None = None) -> dict[str, Any]:
        """The LoadTableResult JSON of ns.table, as Floe sends it to token's holder
        (default: a fresh bootstrap token), optionally with X-Iceberg-Access-Delegation."""
        headers = {"X-Iceberg-Access-Delegation": delegation} if delegation else None
        return self.request("GET", table_path(ns, table), token=token or self.fetch_token(), headers=headers)


def table_path(ns: tuple[str, ...], table: str) -> str:
    """The REST path of a table: /v1/floe/namespaces/{ns}/tables/{table}."""
    q = urllib.parse.quote
    return f"/v1/{WAREHOUSE}/namespaces/{q(chr(0x1f).join(ns), safe='')}/tables/{q(table, safe='')}"


def s3_client(config: dict[str, str], **overrides: str):
    """A boto3 S3 client from a vended storage config (s3.endpoint, keys, token, region),
    path-style and without retries; overrides replace config entries."""
    import boto3
    from botocore.config import Config

    c = {**config, **overrides}
    return boto3.client(
        "s3",
        endpoint_url=c["s3.endpoint"],
        region_name=c.get("client.region") or c.get("s3.region") or "us-east-1",
        aws_access_key_id=c["s3.access-key-id"],
        aws_secret_access_key=c["s3.secret-access-key"],
        aws_session_token=c.get("s3.session-token"),
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"max_attempts": 1, "mode": "standard"},
                      connect_timeout=5, read_timeout=30),
    )


def _start(name: str, demo: bool = False) -> FloeServer:
    binary = floe_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    return _start_server(FloeServer(binary, name, demo=demo))


def _start_server(srv: FloeServer) -> FloeServer:
    """Start srv, reporting its stderr with any failing test (_finish stops it)."""
    _servers.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    return srv


def _finish(srv: FloeServer, request: pytest.FixtureRequest) -> None:
    crashed = srv.proc is not None and srv.proc.poll() is not None
    srv.stop()
    _servers.remove(srv)
    failed = request.session.testsfailed > 0
    if crashed or failed:
        print(f"\n--- floe {srv.name} stderr (tail), data in {srv.dir} ---\n{srv.stderr_tail()}")
    if not failed and not crashed:
        srv.cleanup()


@pytest.fixture(scope="session")
def floe(request: pytest.FixtureRequest):
    """The shared Floe server (empty at start)."""
    srv = _start("main")
    yield srv
    _finish(srv, request)


@pytest.fixture(scope="module")
def floe_demo(request: pytest.FixtureRequest):
    """A second Floe server started with --demo (CRM dataset loaded)."""
    srv = _start("demo", demo=True)
    yield srv
    _finish(srv, request)


@pytest.fixture(scope="session")
def rest_fixture():
    """Apache Iceberg's REST fixture server (restfixture.py), one per run:
    a real third-party Iceberg REST catalog; tests keep to namespaces of
    their own."""
    from restfixture import rest_fixture_server
    with rest_fixture_server() as fx:
        yield fx


@pytest.fixture
def catalog(floe: FloeServer) -> RestCatalog:
    return floe.catalog()


@pytest.fixture
def unique() -> str:
    """A short suffix that keeps names of different tests apart."""
    return uuid.uuid4().hex[:8]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for srv in list(_servers):
            state = "running" if srv.proc is not None and srv.proc.poll() is None else "exited"
            rep.sections.append((f"floe {srv.name} stderr (tail, {state}, {srv.uri})", srv.stderr_tail()))
