"""Fixtures that run a real Floe server for the PyIceberg interop suite.

Nothing is built here: the binary comes from $FLOE_BIN (default bin/floe in the
repository root; `make build` makes it). Each server runs on a free loopback
port with a fresh temporary data directory and a random bootstrap credential,
and is stopped (terminate, then kill) when the session ends. When a test
fails, the tail of each running server's stderr is attached to its report.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

REPO_ROOT = Path(__file__).resolve().parents[3]
WAREHOUSE = "floe"
START_TIMEOUT = 60.0  # seconds for "Floe is running." and a working /v1/config
DEMO_TIMEOUT = 180.0  # seconds for "Demo dataset ready" on a slow 2-core box

_servers: list["FloeServer"] = []


@atexit.register
def _kill_leftovers() -> None:  # e.g. after Ctrl-C in the middle of a fixture
    for srv in list(_servers):
        srv.stop()


def floe_binary() -> Path:
    """$FLOE_BIN (relative to the current directory), else bin/floe in the repository."""
    raw = os.environ.get("FLOE_BIN", "").strip()
    return Path(raw).resolve() if raw else REPO_ROOT / "bin" / "floe"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FloeServer:
    """One `floe serve` process on a temporary data directory."""

    def __init__(self, binary: Path, name: str, demo: bool = False) -> None:
        self.binary = binary
        self.name = name
        self.demo = demo
        self.client_id = "interop-" + secrets.token_hex(4)
        self.client_secret = secrets.token_urlsafe(24)
        self.dir = Path(tempfile.mkdtemp(prefix=f"floe-interop-{name}-"))
        self.data_dir = self.dir / "data"  # floe creates it on first start
        self.stdout_path = self.dir / "stdout.log"
        self.stderr_path = self.dir / "stderr.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    # --- addresses and credentials -------------------------------------

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.uri}/v1/oauth/tokens"

    @property
    def credential(self) -> str:
        return f"{self.client_id}:{self.client_secret}"

    @property
    def warehouse_dir(self) -> Path:
        return self.data_dir / "warehouse"

    # --- lifecycle -------------------------------------------------------

    def start(self) -> None:
        last = ""
        for _ in range(3):  # a free port can be taken between probe and bind
            self.port = free_port()
            try:
                self._start_once()
                return
            except _PortTaken as e:
                last = str(e)
                self.stop()
        raise RuntimeError(f"floe {self.name}: could not bind a port: {last}")

    def _start_once(self) -> None:
        env = dict(os.environ)
        env["FLOE_BOOTSTRAP_CREDENTIAL"] = self.credential
        for k in ("FLOE_DEMO", "FLOE_STORE", "FLOE_LISTEN", "FLOE_DATA_DIR", "FLOE_WAREHOUSE_LOCATION", "FLOE_INSECURE_NO_AUTH"):
            env.pop(k, None)
        args = [str(self.binary), "serve", "--data-dir", str(self.data_dir), "--listen", f"127.0.0.1:{self.port}"]
        if self.demo:
            args.append("--demo")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.dir, env=env)
        self._wait_for("Floe is running.", START_TIMEOUT)
        self._wait_for_config(START_TIMEOUT)
        if self.demo:
            self._wait_for("Demo dataset ready", DEMO_TIMEOUT)

    def _check_alive(self) -> None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            err = self.stderr_tail()
            if "address already in use" in err:
                raise _PortTaken(err)
            raise RuntimeError(
                f"floe {self.name} exited with code {rc} before it was ready\n"
                f"--- stdout ---\n{self.stdout_text()}\n--- stderr (tail) ---\n{err}"
            )

    def _wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stdout_text():
                return
            self._check_alive()
            time.sleep(0.05)
        raise RuntimeError(
            f"floe {self.name}: no {text!r} on stdout within {timeout:.0f}s\n"
            f"--- stdout ---\n{self.stdout_text()}\n--- stderr (tail) ---\n{self.stderr_tail()}"
        )

    def _wait_for_config(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                tok = self.fetch_token()
                r = requests.get(
                    f"{self.uri}/v1/config",
                    params={"warehouse": WAREHOUSE},
                    headers={"Authorization": f"Bearer {tok}"},
                    timeout=5,
                )
                if r.status_code == 200:
                    return
                last = f"GET /v1/config -> {r.status_code} {r.text}"
            except (requests.RequestException, AssertionError) as e:
                last = repr(e)
            time.sleep(0.1)
        raise RuntimeError(f"floe {self.name}: /v1/config not ready within {timeout:.0f}s: {last}\n{self.stderr_tail()}")

    def stop(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
        self.proc = None

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- helpers for tests ----------------------------------------------

    def stdout_text(self) -> str:
        try:
            return self.stdout_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stderr_tail(self, lines: int = 60) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def fetch_token(self, client_id: str | None = None, client_secret: str | None = None) -> str:
        r = requests.post(
            self.token_url,
            data={
                "grant_type": "client_credentials",
                "client_id": client_id or self.client_id,
                "client_secret": client_secret or self.client_secret,
                "scope": "catalog",
            },
            timeout=10,
        )
        assert r.status_code == 200, f"POST /v1/oauth/tokens -> {r.status_code} {r.text}"
        body = r.json()
        assert body.get("token_type", "").lower() == "bearer", body
        assert body.get("access_token"), body
        return body["access_token"]

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


class _PortTaken(Exception):
    pass


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
