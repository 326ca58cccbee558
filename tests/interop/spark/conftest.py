"""Fixtures for the Spark interop suite: one Floe server and one SparkSession.

Nothing is built or downloaded here. The Floe binary comes from $FLOE_BIN
(default bin/floe in the repository root; `make build` makes it); pyspark comes
from the virtualenv that scripts/install-spark.sh made, and so do the Iceberg
Spark runtime and Iceberg AWS bundle jars, which it puts in $FLOE_JARS_DIR
(default ~/.cache/floe/jars; $FLOE_ICEBERG_JAR and $FLOE_ICEBERG_AWS_JAR name
the jars themselves instead).

The server (tests/interop/floe_server.py, shared with the PyIceberg suite)
runs on a free loopback port with a fresh temporary data directory and a
random bootstrap credential; Spark reaches it as the Iceberg REST catalog
`floe` with that credential (OAuth2 client credentials) and nothing else: no
storage keys, no endpoint, no file IO class. Spark reads and writes table
files through Floe's embedded S3 endpoint with the credentials Floe vends with
each table (Iceberg's S3FileIO from the AWS bundle). When a test fails, the
tail of Floe's stderr is attached to its report (FLOE_LOG_LEVEL=debug makes it
log every request; FLOE_SPARK_KEEP=1 keeps its data directory and logs).
"""

from __future__ import annotations

import os
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/interop, for floe_server

import floe_server
import pytest
from floe_server import WAREHOUSE, RestError, floe_binary  # noqa: F401  (RestError: for the tests)

CATALOG = "floe"  # the Spark catalog name

_servers = floe_server.servers


# --- where things are ------------------------------------------------------


def versions() -> dict[str, str]:
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def iceberg_jars() -> list[Path]:
    """The Iceberg Spark runtime and the Iceberg AWS bundle, as install-spark.sh put them."""
    v = versions()
    jars = os.environ.get("FLOE_JARS_DIR", "").strip()
    if not jars:
        cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
        jars = str(Path(cache) / "floe" / "jars")
    out = []
    for env, name in (
        ("FLOE_ICEBERG_JAR", f"iceberg-spark-runtime-{v['SPARK_MINOR']}_{v['SCALA']}-{v['ICEBERG_VERSION']}.jar"),
        ("FLOE_ICEBERG_AWS_JAR", f"iceberg-aws-bundle-{v['ICEBERG_VERSION']}.jar"),
    ):
        raw = os.environ.get(env, "").strip()
        out.append(Path(raw).resolve() if raw else Path(jars) / name)
    return out


# --- the Floe server ---------------------------------------------------------


class FloeServer(floe_server.FloeServer):
    """One `floe serve` process on a temporary data directory, with a REST
    client that keeps its token, to check Floe's own view of what Spark did."""

    def __init__(self, binary: Path) -> None:
        super().__init__(binary, "main", client_prefix="spark-", dir_prefix="floe-spark-")
        self.data_dir.mkdir()
        self._token: tuple[str, float] | None = None  # (access token, when fetched) for rest()

    def start(self) -> None:
        self._token = None
        super().start()

    def rest(self, method: str, path: str, query: dict[str, str] | None = None, body: Any = None) -> Any:
        if self._token is None or time.monotonic() - self._token[1] > 300:  # tokens live 15 minutes
            self._token = (self.fetch_token(), time.monotonic())
        return self.request(method, path, query=query, body=body, token=self._token[0])

    def load_table(self, namespace: str, table: str) -> dict[str, Any]:
        ns = urllib.parse.quote(namespace, safe="")
        return self.rest("GET", f"/v1/{WAREHOUSE}/namespaces/{ns}/tables/{urllib.parse.quote(table, safe='')}")


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
            srv.cleanup()


# --- Spark -------------------------------------------------------------------


def catalog_conf(name: str, floe: FloeServer, **extra: str) -> dict[str, str]:
    """Spark conf entries that define Iceberg REST catalog `name` on Floe: its
    URI, warehouse and token URL only (plus extra). Storage access (S3
    endpoint, region, path style, credentials) comes from Floe with each table."""
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
    jars = iceberg_jars()
    for jar in jars:
        if not jar.is_file():
            pytest.fail(f"Iceberg jar {jar} not found: run scripts/install-spark.sh", pytrace=False)
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
    # No AWS credentials or settings from the developer's environment: S3FileIO
    # must get everything from what Floe vends.
    for k in list(os.environ):
        if k.startswith("AWS_"):
            os.environ.pop(k)
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
        .config("spark.jars", ",".join(str(j) for j in jars))
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
