"""Fixtures for the Trino interop suite: one Floe server and one Trino server.

Nothing is built or downloaded here. The Floe binary comes from $FLOE_BIN
(default bin/floe in the repository root); Trino comes from $TRINO_HOME and
runs on the JDK at $TRINO_JAVA_HOME, both as scripts/install-trino.sh prints
them (defaults: its cache directory and Temurin 25).

Trino reaches Floe as an Iceberg REST catalog `floe` with an OAuth2 client
credential (client credentials against Floe's token endpoint) and vended
credentials: it is given no storage keys, and reads and writes table files
through Floe's embedded S3 endpoint with the credentials Floe vends with each
table. Trino runs as a single node (coordinator and worker in one JVM, 3 GiB
heap) with only the Iceberg plugin loaded, so that it starts quickly on two
cores. Statements go over Trino's HTTP client protocol (POST /v1/statement,
then follow nextUri), with the Python standard library only.

When a test fails, the tails of Floe's stderr and Trino's log are attached to
its report; FLOE_TRINO_KEEP=1 keeps both data directories.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/interop, for floe_server

import floe_server
import pytest
from floe_server import WAREHOUSE, RestError, floe_binary  # noqa: F401  (RestError: for the tests)

CATALOG = "floe"  # the Trino catalog name
TRINO_START_TIMEOUT = 300.0  # seconds; Trino's first start on two busy cores can take minutes
STATEMENT_TIMEOUT = 300.0  # seconds per statement

for _k in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[_k]

_servers = floe_server.servers


def _cache_dir() -> Path:
    raw = os.environ.get("FLOE_TRINO_CACHE", "").strip()
    if raw:
        return Path(raw)
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "floe-ci" / "trino"


def trino_home() -> Path:
    raw = os.environ.get("TRINO_HOME", "").strip()
    return Path(raw) if raw else _cache_dir() / f"trino-server-{os.environ.get('TRINO_VERSION', '476')}"


def trino_java_home() -> Path:
    raw = os.environ.get("TRINO_JAVA_HOME", "").strip()
    return Path(raw) if raw else Path("/usr/lib/jvm/temurin-25-jdk-amd64")


class FloeServer(floe_server.FloeServer):
    """The Floe server Trino talks to."""

    def __init__(self, binary: Path) -> None:
        super().__init__(binary, "main", client_prefix="trino-", dir_prefix="floe-trino-")

    def table_json(self, ns: str, table: str) -> dict[str, Any]:
        """The LoadTableResult of ns.table as Floe answers it."""
        return self.request("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}/tables/{table}", token=self.fetch_token())

    def namespace_json(self, ns: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}", token=self.fetch_token())

    def table_names(self, ns: str) -> list[str]:
        body = self.request("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}/tables", token=self.fetch_token())
        return sorted(i["name"] for i in body["identifiers"])


class TrinoError(Exception):
    """A statement Trino answered with an error."""

    def __init__(self, sql: str, error: dict[str, Any]) -> None:
        self.error = error
        self.message = error.get("message", "")
        self.name = error.get("errorName", "")
        super().__init__(f"{self.name}: {self.message}\n  in: {sql}")


class TrinoServer:
    """One single-node Trino server with the Iceberg catalog `floe` on Floe."""

    def __init__(self, floe: FloeServer) -> None:
        self.floe = floe
        self.home = trino_home()
        self.java_home = trino_java_home()
        self.dir = Path(tempfile.mkdtemp(prefix="floe-trino-server-"))
        self.port = floe_server.free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.dir / "trino.log"

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self) -> None:
        etc = self.dir / "etc"
        (etc / "catalog").mkdir(parents=True)
        # Only the Iceberg plugin: loading Trino's 60 plugins costs most of a
        # minute of startup on two cores.
        plugins = self.dir / "plugin"
        plugins.mkdir()
        (plugins / "iceberg").symlink_to(self.home / "plugin" / "iceberg")
        (etc / "node.properties").write_text(
            "node.environment=floe_interop\n"
            f"node.id=floe-trino-{uuid.uuid4().hex[:8]}\n"
            f"node.data-dir={self.dir / 'data'}\n")
        (etc / "jvm.config").write_text("\n".join([
            "-server",
            "-Xmx3G",
            "-XX:+UseG1GC",
            "-XX:G1HeapRegionSize=32M",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:+ExitOnOutOfMemoryError",
            "-XX:-OmitStackTraceInFastThrow",
            "-XX:ReservedCodeCacheSize=256M",
            "-XX:PerMethodRecompilationCutoff=10000",
            "-XX:PerBytecodeRecompilationCutoff=10000",
            "-XX:+EnableDynamicAgentLoading",
            "-Djdk.attach.allowAttachSelf=true",
            "-Djdk.nio.maxCachedBufferSize=2000000",
            "-Dfile.encoding=UTF-8",
        ]) + "\n")
        (etc / "config.properties").write_text(
            "coordinator=true\n"
            "node-scheduler.include-coordinator=true\n"
            f"http-server.http.port={self.port}\n"
            f"discovery.uri={self.uri}\n"
            "query.max-memory=1GB\n"
            "query.max-memory-per-node=1GB\n"
            "task.concurrency=2\n"
            f"plugin.dir={plugins}\n")
        (etc / "log.properties").write_text("io.trino=INFO\norg.apache.iceberg=WARN\n")
        f = self.floe
        (etc / "catalog" / f"{CATALOG}.properties").write_text(
            "connector.name=iceberg\n"
            "iceberg.catalog.type=rest\n"
            f"iceberg.rest-catalog.uri={f.uri}\n"
            f"iceberg.rest-catalog.warehouse={WAREHOUSE}\n"
            "iceberg.rest-catalog.security=OAUTH2\n"
            f"iceberg.rest-catalog.oauth2.credential={f.credential}\n"
            f"iceberg.rest-catalog.oauth2.server-uri={f.token_url}\n"
            "iceberg.rest-catalog.oauth2.scope=catalog\n"
            "iceberg.rest-catalog.vended-credentials-enabled=true\n"
            "iceberg.rest-catalog.view-endpoints-enabled=true\n"
            "iceberg.expire-snapshots.min-retention=0s\n"
            "fs.native-s3.enabled=true\n"
            f"s3.endpoint={f.s3_url}\n"
            "s3.region=us-east-1\n"
            "s3.path-style-access=true\n")

    def start(self) -> None:
        launcher = self.home / "bin" / "launcher"
        if not launcher.exists():
            pytest.exit(f"Trino not found at {self.home}: run scripts/install-trino.sh or set TRINO_HOME", returncode=2)
        if not (self.java_home / "bin" / "java").exists():
            pytest.exit(f"no JDK at {self.java_home}: Trino needs Java 24+ (set TRINO_JAVA_HOME)", returncode=2)
        self._write_config()
        env = dict(os.environ)
        env["JAVA_HOME"] = str(self.java_home)
        env["PATH"] = f"{self.java_home / 'bin'}:{env.get('PATH', '')}"
        args = [str(launcher), "run", f"--etc-dir={self.dir / 'etc'}", f"--data-dir={self.dir / 'data'}",
                f"--jvm-dir={self.java_home}"]
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.dir, env=env)
        deadline = time.monotonic() + TRINO_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Trino exited with code {self.proc.returncode}\n{self.log_tail()}")
            if "======== SERVER STARTED ========" in self.log_text():
                try:
                    with urllib.request.urlopen(self.uri + "/v1/info", timeout=5) as r:
                        if not json.loads(r.read()).get("starting", True):
                            return
                except (OSError, ValueError):
                    pass
            time.sleep(0.5)
        raise RuntimeError(f"Trino did not start within {TRINO_START_TIMEOUT:.0f}s\n{self.log_tail()}")

    def stop(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)
        self.proc = None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    # --- the client protocol ----------------------------------------------

    def _call(self, req: urllib.request.Request) -> dict[str, Any]:
        for attempt in range(50):
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                if e.code in (502, 503) and attempt < 49:  # documented: retry after a short wait
                    time.sleep(0.1)
                    continue
                raise RuntimeError(f"Trino HTTP {e.code}: {e.read().decode(errors='replace')}") from None
        raise AssertionError("unreachable")

    def execute(self, sql: str, schema: str | None = None) -> list[list[Any]]:
        """Run one statement to completion; its rows, or TrinoError."""
        headers = {"X-Trino-User": "floe-interop", "X-Trino-Catalog": CATALOG, "Content-Type": "text/plain"}
        if schema:
            headers["X-Trino-Schema"] = schema
        body = self._call(urllib.request.Request(self.uri + "/v1/statement", data=sql.encode(), method="POST",
                                                 headers=headers))
        rows: list[list[Any]] = []
        deadline = time.monotonic() + STATEMENT_TIMEOUT
        while True:
            if "error" in body:
                raise TrinoError(sql, body["error"])
            rows.extend(body.get("data") or [])
            nxt = body.get("nextUri")
            if not nxt:
                return rows
            if time.monotonic() > deadline:
                raise TimeoutError(f"Trino statement did not finish in {STATEMENT_TIMEOUT:.0f}s: {sql}")
            body = self._call(urllib.request.Request(nxt, headers={"X-Trino-User": "floe-interop"}))


@pytest.fixture(scope="session")
def floe(request: pytest.FixtureRequest):
    """The Floe server of the suite (empty at start)."""
    binary = floe_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    srv = FloeServer(binary)
    _servers.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    yield srv
    crashed = srv.proc is not None and srv.proc.poll() is not None
    srv.stop()
    _servers.remove(srv)
    failed = request.session.testsfailed > 0 or crashed
    if failed:
        print(f"\n--- floe stderr (tail), data in {srv.dir} ---\n{srv.stderr_tail()}")
    elif not os.environ.get("FLOE_TRINO_KEEP"):
        srv.cleanup()


_trinos: list[TrinoServer] = []


@pytest.fixture(scope="session")
def trino(floe: FloeServer, request: pytest.FixtureRequest):
    """The Trino server of the suite, with the catalog `floe` on the Floe server."""
    srv = TrinoServer(floe)
    _trinos.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    yield srv
    srv.stop()
    _trinos.remove(srv)
    if request.session.testsfailed > 0:
        print(f"\n--- trino log (tail), in {srv.dir} ---\n{srv.log_tail()}")
    elif not os.environ.get("FLOE_TRINO_KEEP"):
        shutil.rmtree(srv.dir, ignore_errors=True)


@pytest.fixture
def unique() -> str:
    """A short suffix that keeps names of different tests apart."""
    return uuid.uuid4().hex[:8]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    rep = outcome.get_result()
    if "incremental" in item.keywords and rep.when == "call" and rep.failed:
        item.parent._previousfailed = item  # type: ignore[union-attr]
    if rep.failed:
        for srv in list(_servers):
            rep.sections.append((f"floe {srv.name} stderr (tail)", srv.stderr_tail()))
        for t in list(_trinos):
            rep.sections.append(("trino log (tail)", t.log_tail(40)))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "incremental" in item.keywords:
        previous = getattr(item.parent, "_previousfailed", None)
        if previous is not None:
            pytest.xfail(f"an earlier step failed ({previous.name})")
