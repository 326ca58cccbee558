"""PostgreSQL tools against Floe's SQL endpoint (issue 17, part B).

SQLAlchemy's inspector (psycopg dialect), pandas.read_sql, psql's
meta-commands and pgJDBC's DatabaseMetaData list what the principal may
describe: one database named after the warehouse, its namespaces as
schemas (never DuckDB's "main"), the tables and their columns with
PostgreSQL types; current_user is the principal, version() names Floe.

SQLAlchemy and pandas are not in the shared venv: run this file with a venv
made from requirements.txt. pgJDBC's jar comes from
scripts/fetch-pgjdbc.sh (into ~/.cache/floe-ci); Java 17 runs
tests/interop/java/PgJdbcMeta.java as a single-file program.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy
from conftest import WAREHOUSE
from pyiceberg.schema import Schema
from pyiceberg.types import BooleanType, DoubleType, LongType, NestedField, StringType, TimestampType

REPO = Path(__file__).resolve().parents[3]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
    NestedField(4, "placed_at", TimestampType(), required=False),
    NestedField(5, "paid", BooleanType(), required=False),
    NestedField(6, "secret", StringType(), required=False),
)
ROWS = pa.Table.from_pylist(
    [{"id": i, "name": f"n{i}", "amount": i * 1.5, "placed_at": None, "paid": i % 2 == 0, "secret": f"s{i}"}
     for i in range(1, 6)],
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                      pa.field("amount", pa.float64()), pa.field("placed_at", pa.timestamp("us")),
                      pa.field("paid", pa.bool_()), pa.field("secret", pa.string())]),
)


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


@pytest.fixture(scope="module")
def lake(floe):
    """Two namespaces: tools_sales (orders) and tools_hr (staff); a principal
    "pgt-analyst" that may read tools_sales.orders without its secret column."""
    cat = floe.catalog("admin")
    for ns in ("tools_sales", "tools_hr"):
        cat.create_namespace(ns)
    cat.create_table(("tools_sales", "orders"), schema=SCHEMA).append(ROWS)
    cat.create_table(("tools_hr", "staff"), schema=SCHEMA)
    out = _admin(floe, "POST", "/principals", {"name": "pgt-analyst"})
    _admin(floe, "POST", "/grants", {
        "grantee": {"kind": "principal", "name": "pgt-analyst"}, "privilege": "SELECT",
        "on": {"kind": "table", "warehouse": WAREHOUSE, "namespace": ["tools_sales"], "name": "orders"},
        "filter": {"exclude_columns": ["secret"]}})
    return {"admin": ("admin", floe.fetch_token()),
            "analyst": ("pgt-analyst", floe.fetch_token(out["client_id"], out["client_secret"]))}


def engine(floe, who):
    user, token = who
    url = sqlalchemy.URL.create("postgresql+psycopg", username=user, password=token, host="127.0.0.1",
                                port=floe.sql_port, database=WAREHOUSE, query={"sslmode": "disable"})
    return sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)


def test_sqlalchemy_connects_as_the_principal(floe, lake):
    for who, user in (("admin", "admin"), ("analyst", "pgt-analyst")):
        eng = engine(floe, lake[who])
        with eng.connect() as conn:
            got = conn.execute(sqlalchemy.text(
                "SELECT current_user, session_user, current_database(), version()")).one()
            assert got[0] == user and got[1] == user
            assert got[2] == WAREHOUSE
            assert got[3].startswith("PostgreSQL 16.") and "Floe" in got[3]
        assert eng.dialect.server_version_info[:1] == (16,)
        eng.dispose()


def test_sqlalchemy_inspector(floe, lake):
    eng = engine(floe, lake["admin"])
    insp = sqlalchemy.inspect(eng)
    schemas = insp.get_schema_names()
    assert {"tools_sales", "tools_hr"} <= set(schemas)
    assert "main" not in schemas
    assert insp.get_table_names(schema="tools_sales") == ["orders"]
    assert insp.get_view_names(schema="tools_sales") == []
    cols = insp.get_columns("orders", schema="tools_sales")
    assert [c["name"] for c in cols] == ["id", "name", "amount", "placed_at", "paid", "secret"]
    types = {c["name"]: c["type"] for c in cols}
    assert isinstance(types["id"], sqlalchemy.BigInteger)
    assert isinstance(types["name"], sqlalchemy.String)
    assert isinstance(types["amount"], sqlalchemy.Float)
    assert isinstance(types["placed_at"], sqlalchemy.DateTime)
    assert isinstance(types["paid"], sqlalchemy.Boolean)
    assert [c["nullable"] for c in cols] == [False, True, True, True, True, True]
    assert insp.get_pk_constraint("orders", schema="tools_sales")["constrained_columns"] == []
    assert insp.get_foreign_keys("orders", schema="tools_sales") == []
    assert insp.get_indexes("orders", schema="tools_sales") == []
    assert insp.has_table("orders", schema="tools_sales")
    assert not insp.has_table("nope", schema="tools_sales")
    eng.dispose()


def test_sqlalchemy_inspector_sees_what_the_principal_may_describe(floe, lake):
    eng = engine(floe, lake["analyst"])
    insp = sqlalchemy.inspect(eng)
    schemas = insp.get_schema_names()
    assert "tools_sales" in schemas and "tools_hr" not in schemas and "main" not in schemas
    assert insp.get_table_names(schema="tools_sales") == ["orders"]
    assert insp.get_table_names(schema="tools_hr") == []
    cols = [c["name"] for c in insp.get_columns("orders", schema="tools_sales")]
    assert cols == ["id", "name", "amount", "placed_at", "paid"]  # secret is excluded
    eng.dispose()


def test_pandas_read_sql(floe, lake):
    eng = engine(floe, lake["admin"])
    df = pd.read_sql("SELECT id, name, amount FROM tools_sales.orders ORDER BY id", eng)
    assert list(df.columns) == ["id", "name", "amount"]
    assert df["id"].tolist() == [1, 2, 3, 4, 5]
    assert df["amount"].tolist() == [1.5, 3.0, 4.5, 6.0, 7.5]
    df = pd.read_sql(sqlalchemy.text("SELECT name FROM tools_sales.orders WHERE id > :n ORDER BY id"), eng,
                     params={"n": 3})
    assert df["name"].tolist() == ["n4", "n5"]
    df = pd.read_sql_table("orders", eng, schema="tools_sales")
    assert sorted(df["id"].tolist()) == [1, 2, 3, 4, 5]
    eng.dispose()


def psql(floe, who, *args):
    user, token = who
    exe = shutil.which("psql")
    assert exe, "psql not found (apt-get install postgresql-client)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGPASSWORD"] = token
    dsn = f"host=127.0.0.1 port={floe.sql_port} dbname={WAREHOUSE} user={user} sslmode=disable connect_timeout=10"
    return subprocess.run([exe, "-X", "-v", "ON_ERROR_STOP=1", "-d", dsn, *args], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("cmd,who,want,unwanted", [
    (r"\l", "admin", [WAREHOUSE, "UTF8"], ["memory", "system", "temp"]),
    (r"\dn", "admin", ["tools_sales", "tools_hr"], ["main"]),
    (r"\dn", "analyst", ["tools_sales"], ["main", "tools_hr"]),
    (r"\dt tools_sales.*", "admin", ["orders"], ["staff"]),
    (r"\d tools_sales.orders", "admin", ["bigint", "double precision", "timestamp without time zone", "secret"], []),
    (r"\d+ tools_sales.orders", "analyst", ["bigint", "amount"], ["secret"]),
    (r"\df", "admin", ["List of functions"], []),
    (r"\dv", "admin", ["Did not find any relations"], []),
    (r"\du", "analyst", ["pgt-analyst"], []),
    (r"\conninfo", "analyst", [f'database "{WAREHOUSE}" as user "pgt-analyst"'], []),
])
def test_psql_meta_commands(floe, lake, cmd, who, want, unwanted):
    out = psql(floe, lake[who], "-c", cmd)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr  # psql says "Did not find any relations." on stderr
    for w in want:
        assert w in text, text
    for w in unwanted:
        assert w not in text, text


def pgjdbc_jar() -> Path:
    """The pgJDBC jar, fetched (once) by scripts/fetch-pgjdbc.sh."""
    out = subprocess.run(["bash", str(REPO / "scripts" / "fetch-pgjdbc.sh")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


def test_pgjdbc_database_metadata(floe, lake):
    jar = pgjdbc_jar()
    java = shutil.which("java")
    assert java, "java not found (apt-get install openjdk-17-jdk-headless)"
    res = {}
    for who in ("admin", "analyst"):
        user, token = lake[who]
        url = f"jdbc:postgresql://127.0.0.1:{floe.sql_port}/{WAREHOUSE}?sslmode=disable"
        out = subprocess.run([java, "-cp", str(jar), str(REPO / "tests" / "interop" / "java" / "PgJdbcMeta.java"),
                              url, user, "tools_%"], env={**os.environ, "FLOE_PGJDBC_PASSWORD": token},
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        res[who] = json.loads(out.stdout.strip().splitlines()[-1])
    admin = res["admin"]
    assert admin["catalogs"] == [WAREHOUSE]
    assert admin["user"] == "admin" and admin["catalog"] == WAREHOUSE
    assert admin["product"] == "PostgreSQL" and admin["major"] == 16
    assert admin["schemas"] == [[WAREHOUSE, "tools_hr"], [WAREHOUSE, "tools_sales"]]
    assert [WAREHOUSE, "tools_sales", "orders", "TABLE"] in admin["tables"]
    assert [WAREHOUSE, "tools_hr", "staff", "TABLE"] in admin["tables"]
    cols = [c for c in admin["columns"] if c[1] == "tools_sales" and c[2] == "orders"]
    assert [(c[3], c[4], c[5]) for c in cols] == [
        ("id", "int8", -5), ("name", "varchar", 12), ("amount", "float8", 8),
        ("placed_at", "timestamp", 93), ("paid", "bool", -7), ("secret", "varchar", 12)]
    assert all(c[0] == WAREHOUSE for c in cols)
    analyst = res["analyst"]
    assert analyst["user"] == "pgt-analyst"
    assert analyst["schemas"] == [[WAREHOUSE, "tools_sales"]]
    assert [t[2] for t in analyst["tables"]] == ["orders"]
    assert [c[3] for c in analyst["columns"]] == ["id", "name", "amount", "placed_at", "paid"]
