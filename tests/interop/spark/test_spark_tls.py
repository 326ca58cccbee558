"""Spark reads a Floe table over HTTPS (issue 15, part D: TLS on every listener).

A Floe server started with `floe serve --tls-self-signed --demo` serves the
REST catalog and the S3 endpoint over TLS with a local CA it made in
<data-dir>/tls/ca.pem. Spark trusts it the Java way: a PKCS#12 truststore
made from the CA with keytool, passed as -Djavax.net.ssl.trustStore to the
driver (Iceberg's REST client and S3FileIO both use the JVM's default trust).
Spark runs in a child interpreter with a JVM of its own, because the suite's
shared SparkSession (conftest.py) cannot take JVM options after it started.
Without the truststore the same read fails on the certificate.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import floe_server
import pytest
from conftest import WAREHOUSE, catalog_conf, floe_binary, iceberg_jars


class _TrustHandler(urllib.request.HTTPSHandler):
    """Trusts the CA file of the TLS server (read per connection: it appears
    while the server starts)."""

    def __init__(self, ca: Path) -> None:
        super().__init__()
        self.ca = ca

    def https_open(self, req):  # noqa: D102
        ctx = ssl.create_default_context(cafile=str(self.ca)) if self.ca.exists() else ssl.create_default_context()
        return self.do_open(urllib.request.http.client.HTTPSConnection, req, context=ctx)


class TLSServer(floe_server.FloeServer):
    def __init__(self, binary: Path) -> None:
        super().__init__(binary, "tls", client_prefix="spark-", dir_prefix="floe-spark-tls-")

    @property
    def uri(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return self.data_dir / "tls" / "ca.pem"

    def serve_args(self) -> list[str]:
        return ["--tls-self-signed", "--demo"]

    def wait_ready(self) -> None:
        self.wait_for_stdout("Demo dataset ready", 240)


@pytest.fixture(scope="module")
def floe_tls():
    binary = floe_binary()
    if not binary.is_file():
        pytest.fail(f"Floe binary {binary} not found: run `make build` or set FLOE_BIN", pytrace=False)
    srv = TLSServer(binary)
    floe_server.servers.append(srv)
    urllib.request.install_opener(urllib.request.build_opener(_TrustHandler(srv.ca)))
    try:
        srv.start()
        yield srv
    finally:
        urllib.request.install_opener(urllib.request.build_opener())
        srv.stop()
        floe_server.servers.remove(srv)
        srv.cleanup()


SCRIPT = """
    import json, os, sys
    conf, jars, java_opts = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    for k in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"):
        os.environ.pop(k, None)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[1]").appName("floe-spark-tls")
         .config("spark.driver.memory", "512m").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC " + java_opts)
         .config("spark.jars", jars))
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        n = spark.sql("SELECT count(*) AS n FROM floe.crm.accounts").collect()[0]["n"]
        out = {"rows": n}
    except Exception as e:
        msg = str(e)
        out = {"error": msg[:300], "certificate": "PKIX" in msg or "SSLHandshakeException" in msg}
    finally:
        spark.stop()
    print(json.dumps(out))
"""


def _spark_count(srv: TLSServer, java_opts: str) -> dict:
    conf = catalog_conf("floe", srv, credential=srv.credential)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("AWS_")}
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), json.dumps(conf),
                        ",".join(str(j) for j in iceberg_jars()), java_opts],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"spark child failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_spark_reads_a_table_over_https_with_a_java_truststore(floe_tls: TLSServer, tmp_path: Path) -> None:
    store = tmp_path / "floe-truststore.p12"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "floe-local-ca", "-file", str(floe_tls.ca),
                    "-keystore", str(store), "-storetype", "PKCS12", "-storepass", "changeit"],
                   check=True, capture_output=True, timeout=60)
    lt = floe_tls.request("GET", f"/v1/{WAREHOUSE}/namespaces/crm/tables/accounts", token=floe_tls.fetch_token(),
                          headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert lt["config"]["s3.endpoint"].startswith("https://"), lt["config"]
    out = _spark_count(floe_tls, f"-Djavax.net.ssl.trustStore={store} -Djavax.net.ssl.trustStorePassword=changeit "
                                 "-Djavax.net.ssl.trustStoreType=PKCS12")
    assert out == {"rows": 500}, out


def test_spark_without_the_truststore_is_refused(floe_tls: TLSServer) -> None:
    out = _spark_count(floe_tls, "")
    assert "error" in out and out["certificate"], out
