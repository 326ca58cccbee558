"""The PostgreSQL JDBC driver against Floe's SQL endpoint.

Spark writes a table through the REST catalog; JdbcCheck.java (run with the
pgjdbc jar that scripts/install-spark.sh fetched from Maven Central) then
connects to the SQL endpoint with an access token as password, queries it
with a plain and a prepared statement, reads DatabaseMetaData, cancels a long
query and checks the connection survives an error. Spark's own answer is the
reference.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import CATALOG, FloeServer, versions

NS = "jdbc_ns"
TABLE = f"{NS}.people"
HERE = Path(__file__).resolve().parent


def pgjdbc_jar() -> Path:
    jars = os.environ.get("FLOE_JARS_DIR", "").strip()
    if not jars:
        cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
        jars = str(Path(cache) / "floe" / "jars")
    return Path(jars) / f"postgresql-{versions()['PGJDBC_VERSION']}.jar"


def test_jdbc(floe: FloeServer, spark: Any) -> None:
    jar = pgjdbc_jar()
    if not jar.is_file():
        pytest.fail(f"PostgreSQL JDBC jar {jar} not found: run scripts/install-spark.sh", pytrace=False)
    java = shutil.which("java")
    assert java, "java is not on PATH (scripts/install-spark.sh installs a JDK)"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    spark.sql(f"CREATE TABLE {CATALOG}.{TABLE} (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{TABLE} SELECT id, concat('name-', CAST(id AS STRING)) FROM range(0, 300)")
    want_count = spark.sql(f"SELECT count(*) FROM {CATALOG}.{TABLE}").collect()[0][0]
    want_name = spark.sql(f"SELECT name FROM {CATALOG}.{TABLE} WHERE id = 42").collect()[0][0]

    token = floe.fetch_token()
    url = f"jdbc:postgresql://127.0.0.1:{floe.sql_port}/floe?sslmode=disable"
    proc = subprocess.run([java, "-cp", str(jar), str(HERE / "JdbcCheck.java"), url, "admin", token, TABLE, "42"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"JdbcCheck failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        k, _, v = line.partition("=")
        out.setdefault(k, []).append(v)
    assert token not in proc.stdout + proc.stderr
    assert out["count"] == [str(want_count)] and want_count == 300
    # The prepared statement ran twice (the second time as a named server-side statement).
    assert out["row"] == [f"42,{want_name}", f"42,{want_name}"]
    assert out["tables"] == ["people"], out
    # DatabaseMetaData.getColumns lists the Iceberg columns in order with
    # their PostgreSQL types (long -> int8, string -> varchar).
    assert out["columns"] == ["id:int8,name:varchar"], out
    assert out["cancel"] == ["57014"], f"cancel: {out.get('cancel')} {out.get('cancel-failed')}"
    assert out["error"] == ["42P01"], out
    assert out["after"] == ["1"]
