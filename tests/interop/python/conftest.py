"""Fixtures that run a real Floe server for the PyIceberg interop suite.

The server itself (binary lookup via $FLOE_BIN, free port, temporary data
directory, random bootstrap credential, start and stop) is
tests/interop/floe_server.py, shared with the Spark suite; this adds the demo
server and PyIceberg catalogs. Servers are stopped (terminate, then kill) when
their fixture ends. When a test fails, the tail of each running server's
stderr is attached to its report.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/interop, for floe_server

import floe_server
import pytest
from floe_server import WAREHOUSE, floe_binary
from pyiceberg.catalog.rest import RestCatalog

DEMO_TIMEOUT = 180.0  # seconds for "Demo dataset ready" on a slow 2-core box

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


def _start(name: str, demo: bool = False) -> FloeServer:
    binary = floe_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    srv = FloeServer(binary, name, demo=demo)
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
