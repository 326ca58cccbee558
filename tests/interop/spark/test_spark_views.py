"""Views across Spark and Floe's SQL endpoint (issue 20, "views everywhere").

Spark creates an Iceberg view through Floe's REST catalog; Floe's SQL endpoint
(psycopg) reads it from its `spark` representation and gets the rows Spark
gets. A Spark view outside the subset Floe runs is refused with the dialect
and the reason. Floe's SQL endpoint creates a view; Spark reads it (from the
`spark` representation Floe wrote) and gets the rows the endpoint gets.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from conftest import CATALOG, FloeServer

NS = "xviews"


def endpoint(floe: FloeServer) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)


def test_views_across_spark_and_floe(spark: Any, floe: FloeServer) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    t = f"{CATALOG}.{NS}.deals"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, region STRING, stage STRING, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'EMEA', 'open', 10.0), (2, 'EMEA', 'won', 20.0), "
              "(3, 'AMER', 'open', 30.0), (4, 'APAC', 'open', NULL), (5, 'AMER', 'lost', 5.0)")

    # Spark creates a view within the shared subset (unqualified and
    # catalog-qualified names, backticks, a CASE, an aggregate); the
    # unqualified name resolves in the session's current namespace.
    before = (spark.catalog.currentCatalog(), spark.catalog.currentDatabase())
    spark.sql(f"USE {CATALOG}.{NS}")
    try:
        spark.sql(f"CREATE VIEW {CATALOG}.{NS}.open_by_region AS "
                  "SELECT `region`, count(*) AS deals, sum(CASE WHEN stage = 'open' THEN amount END) AS open_value "
                  "FROM deals WHERE amount IS NOT NULL GROUP BY region")
    finally:
        spark.catalog.setCurrentCatalog(before[0])
        spark.catalog.setCurrentDatabase(before[1])
    spark.sql(f"CREATE VIEW {CATALOG}.{NS}.emea AS SELECT id, amount FROM {t} WHERE region = 'EMEA'")
    spark_rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {CATALOG}.{NS}.open_by_region").collect())
    spark_emea = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {CATALOG}.{NS}.emea").collect())
    with endpoint(floe) as conn:
        got = sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {NS}.open_by_region").fetchall())
        assert got == spark_rows
        got = sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {NS}.emea").fetchall())
        assert got == spark_emea == [(1, 10.0), (2, 20.0)]

        # Outside the subset: refused, naming the dialect and why.
        spark.sql(f"CREATE VIEW {CATALOG}.{NS}.formatted AS SELECT id, format_number(amount, 2) AS a FROM {t}")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as exc:
            conn.execute(f"SELECT * FROM {NS}.formatted").fetchall()
        assert "spark (uses function format_number, outside the subset Floe runs)" in str(exc.value), exc.value

        # Floe creates a view; Spark reads it from the spark representation.
        conn.execute(f"CREATE VIEW {NS}.big AS SELECT id, region, amount FROM {NS}.deals "
                     "WHERE amount >= 10 AND stage IN ('open', 'won')")
        floe_big = sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {NS}.big").fetchall())
    view = floe.rest("GET", f"/v1/floe/namespaces/{NS}/views/big")
    dialects = [r["dialect"] for r in view["metadata"]["versions"][-1]["representations"]]
    assert dialects == ["duckdb", "trino", "spark"], dialects
    spark_big = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {CATALOG}.{NS}.big").collect())
    assert spark_big == floe_big == [(1, "EMEA", 10.0), (2, "EMEA", 20.0), (3, "AMER", 30.0)]

    for v in ("open_by_region", "emea", "formatted", "big"):
        spark.sql(f"DROP VIEW {CATALOG}.{NS}.{v}")
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.{NS}")
