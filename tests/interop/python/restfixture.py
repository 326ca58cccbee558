"""Apache Iceberg's REST fixture server (org.apache.iceberg.rest.RESTCatalogServer
from iceberg-open-api's test-fixtures jar, with an in-memory SQLite JDBC
catalog and a warehouse in a temporary directory), resolved from Maven
Central into ~/.m2 by tests/interop/restfixture/pom.xml and run with java:
a real third-party Iceberg REST catalog for the tests (conftest's
session fixture `rest_fixture` starts one per suite run).

Needs Java 17+ and Maven (CI installs both); the first run downloads the
fixture's jars, later runs are offline.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FIXTURE_POM = REPO / "tests" / "interop" / "restfixture" / "pom.xml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


@dataclass
class RestFixture:
    """A running REST fixture: its base URI and warehouse directory."""
    uri: str
    warehouse: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        """Stop the server (an outage, for the tests that need one)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@contextlib.contextmanager
def rest_fixture_server() -> Iterator[RestFixture]:
    """Start the REST fixture on a free port; stop it and remove its files at exit."""
    mvn, java = shutil.which("mvn"), shutil.which("java")
    assert mvn and java, "the REST fixture needs java and mvn on PATH (CI installs both)"
    work = Path(tempfile.mkdtemp(prefix="floe-interop-restfixture-"))
    cp_file = work / "cp.txt"
    r = subprocess.run([mvn, "-q", "-B", "-f", str(FIXTURE_POM), "dependency:build-classpath",
                        f"-Dmdep.outputFile={cp_file}"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"resolving the REST fixture failed:\n{r.stdout}\n{r.stderr}"
    port = free_port()
    env = {**os.environ, "CATALOG_WAREHOUSE": str(work / "warehouse"), "CATALOG_REST_PORT": str(port)}
    log = open(work / "fixture.log", "w")
    proc = subprocess.Popen([java, "-cp", cp_file.read_text().strip(), "org.apache.iceberg.rest.RESTCatalogServer"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    fx = RestFixture(uri=f"http://127.0.0.1:{port}", warehouse=work / "warehouse", proc=proc)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"the REST fixture exited: {(work / 'fixture.log').read_text()[-3000:]}"
            try:
                http("GET", fx.uri + "/v1/config")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield fx
    finally:
        fx.stop()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
