"""Fixtures for the Spark interop suite: one Floe server and one SparkSession.

Nothing is built or downloaded here. The Floe binary comes from $FLOE_BIN
(default bin/floe in the repository root; `make build` makes it); pyspark comes
from the virtualenv that scripts/install-spark.sh made, and so does the Iceberg
Spark runtime jar, which it puts in $FLOE_JARS_DIR (default
~/.cache/floe/jars; $FLOE_ICEBERG_JAR names the jar itself instead).

The server runs on a free loopback port with a fresh temporary data directory
and a random bootstrap credential; Spark reaches it as the Iceberg REST catalog
`floe` with that credential (OAuth2 client credentials). When a test fails, the
tail of Floe's stderr is attached to its report (FLOE_LOG_LEVEL=debug makes it
log every request; FLOE_SPARK_KEEP=1 keeps its data directory and logs).
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
WAREHOUSE = "floe"
CATALOG = "floe"  # the Spark catalog name
START_TIMEOUT = 60.0  # seconds for "Floe is running." and a working /v1/config

_servers: list["FloeServer"] = []


@atexit.register
def _kill_leftovers() -> None:  # e.g. after Ctrl-C in the middle of a fixture
    for srv in list(_servers):
        srv.stop()


# --- where things are ------------------------------------------------------


def floe_binary() -> Path:
    raw = os.environ.get("FLOE_BIN", "").strip()
    return Path(raw).resolve() if raw else REPO_ROOT / "bin" / "floe"


def versions() -> dict[str, str]:
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def iceberg_jar() -> Path:
    raw = os.environ.get("FLOE_ICEBERG_JAR", "").strip()
    if raw:
        return Path(raw).resolve()
    v = versions()
    jars = os.environ.get("FLOE_JARS_DIR", "").strip()
    if not jars:
        cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
        jars = str(Path(cache) / "floe" / "jars")
    name = f"iceberg-spark-runtime-{v['SPARK_MINOR']}_{v['SCALA']}-{v['ICEBERG_VERSION']}.jar"
    return Path(jars) / name


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the Floe server ---------------------------------------------------------


class _PortTaken(Exception):
    pass


class FloeServer:
    """One `floe serve` process on a temporary data directory."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.client_id = "spark-" + secrets.token_hex(4)
        self.client_secret = secrets.token_urlsafe(24)
        self.dir = Path(tempfile.mkdtemp(prefix="floe-spark-"))
        self.data_dir = self.dir / "data"
        self.data_dir.mkdir()
        self.stdout_path = self.dir / "stdout.log"
        self.stderr_path = self.dir / "stderr.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._token: tuple[str, float] | None = None  # (access token, when fetched) for rest()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def credential(self) -> str:
        return f"{self.client_id}:{self.client_secret}"

    @property
    def warehouse_dir(self) -> Path:
        return self.data_dir / "warehouse"

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
        raise RuntimeError(f"floe: could not bind a port: {last}")

    def _start_once(self) -> None:
        self._token = None
        env = dict(os.environ)
        env["FLOE_BOOTSTRAP_CREDENTIAL"] = self.credential
        for k in ("FLOE_DEMO", "FLOE_STORE", "FLOE_LISTEN", "FLOE_DATA_DIR", "FLOE_WAREHOUSE",
                  "FLOE_WAREHOUSE_LOCATION", "FLOE_INSECURE_NO_AUTH"):
            env.pop(k, None)
        args = [str(self.binary), "serve", "--data-dir", str(self.data_dir), "--listen", f"127.0.0.1:{self.port}"]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.dir, env=env)
        deadline = time.monotonic() + START_TIMEOUT
        while "Floe is running." not in self._read(self.stdout_path):
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"floe: not running within {START_TIMEOUT:.0f}s\n{self.stderr_tail()}")
            time.sleep(0.05)
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                self.rest("GET", "/v1/config", query={"warehouse": WAREHOUSE})
                return
            except (OSError, RestError) as e:
                last = repr(e)
            time.sleep(0.1)
        raise RuntimeError(f"floe: /v1/config not ready within {START_TIMEOUT:.0f}s: {last}\n{self.stderr_tail()}")

    def _check_alive(self) -> None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            err = self.stderr_tail()
            if "address already in use" in err:
                raise _PortTaken(err)
            raise RuntimeError(f"floe exited with code {rc} before it was ready\n"
                               f"--- stdout ---\n{self._read(self.stdout_path)}\n--- stderr ---\n{err}")

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

    @staticmethod
    def _read(path: Path) -> str:
        try:
            return path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stderr_tail(self, lines: int = 60) -> str:
        return "\n".join(self._read(self.stderr_path).splitlines()[-lines:])

    # --- a minimal REST client, to check Floe's own view of what Spark did ---

    def token(self, client_id: str | None = None, client_secret: str | None = None) -> str:
        form = urllib.parse.urlencode({
            "grant_type": "client_credentials",
            "client_id": client_id or self.client_id,
            "client_secret": client_secret or self.client_secret,
            "scope": "catalog",
        }).encode()
        req = urllib.request.Request(f"{self.uri}/v1/oauth/tokens", data=form, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        return _send(req)["access_token"]

    def rest(self, method: str, path: str, query: dict[str, str] | None = None, body: Any = None) -> Any:
        url = self.uri + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        if self._token is None or time.monotonic() - self._token[1] > 300:  # tokens live 15 minutes
            self._token = (self.token(), time.monotonic())
        headers = {"Authorization": f"Bearer {self._token[0]}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        return _send(urllib.request.Request(url, data=data, method=method, headers=headers))

    def load_table(self, namespace: str, table: str) -> dict[str, Any]:
        ns = urllib.parse.quote(namespace, safe="")
        return self.rest("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}/tables/{urllib.parse.quote(table, safe='')}")


class RestError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


def _send(req: urllib.request.Request) -> Any:
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raise RestError(e.code, e.read().decode(errors="replace")) from None


@pytest.fixture(scope="session")
def floe() -> Any:
    binary = floe_binary()
    if not binary.is_file():
        pytest.fail(f"Floe binary {binary} not found: run `make build` or set FLOE_BIN", pytrace=False)
    srv = FloeServer(binary)
    _servers.append(srv)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        _servers.remove(srv)
        if os.environ.get("FLOE_SPARK_KEEP"):  # keep the data dir and logs to look at
            print(f"\nfloe data and logs kept in {srv.dir}", file=sys.stderr)
        else:
            shutil.rmtree(srv.dir, ignore_errors=True)


# --- Spark -------------------------------------------------------------------


def catalog_conf(name: str, floe: FloeServer, **extra: str) -> dict[str, str]:
    """Spark conf entries that define Iceberg REST catalog `name` on Floe."""
    p = f"spark.sql.catalog.{name}"
    conf = {
        p: "org.apache.iceberg.spark.SparkCatalog",
        f"{p}.type": "rest",
        f"{p}.uri": floe.uri,
        f"{p}.warehouse": WAREHOUSE,
        f"{p}.oauth2-server-uri": f"{floe.uri}/v1/oauth/tokens",
        # Load tables from Floe on every statement, never from a client cache.
        f"{p}.cache-enabled": "false",
    }
    conf.update({f"{p}.{k.replace('_', '-')}": v for k, v in extra.items()})
    return conf


@pytest.fixture(scope="session")
def spark(floe: FloeServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    jar = iceberg_jar()
    if not jar.is_file():
        pytest.fail(f"Iceberg Spark runtime {jar} not found: run scripts/install-spark.sh", pytrace=False)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.fail("pyspark is not installed here: run scripts/install-spark.sh and use its venv", pytrace=False)

    # Workers must run this interpreter, and Spark must not pick up a
    # SPARK_HOME or extra submit args from the environment.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    for k in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"):
        os.environ.pop(k, None)
    scratch = tmp_path_factory.mktemp("spark")
    os.environ["SPARK_LOCAL_DIRS"] = str(scratch / "local")  # shuffle and block files
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # Spark listens and connects on loopback only
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("floe-spark-interop")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.jars", str(jar))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    )
    for k, v in catalog_conf(CATALOG, floe, credential=floe.credential).items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


# --- ordered scenarios and failure reports --------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    if "incremental" in item.keywords and rep.when == "call" and rep.failed:
        item.parent._previousfailed = item  # type: ignore[union-attr]
    if rep.failed:
        for srv in _servers:
            rep.sections.append((f"floe stderr (tail, {srv.uri})", srv.stderr_tail()))
    return rep


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "incremental" in item.keywords:
        previous = getattr(item.parent, "_previousfailed", None)
        if previous is not None:
            pytest.xfail(f"an earlier step failed ({previous.name})")
