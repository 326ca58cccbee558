"""Views across Trino and Floe's SQL endpoint (issue 20, "views everywhere").

Floe's SQL endpoint (psycopg) creates a view; Trino 476 reads it through its
Iceberg REST connector from the `trino` representation Floe wrote (tables
named in full in the Trino catalog `floe`, sql_view_trino_catalog's default:
the warehouse's name) and gets the rows the endpoint gets. Trino creates a
view through the REST catalog; Floe's SQL endpoint reads it from its `trino`
representation (Trino's catalog qualifier resolved through the version's
default-catalog) and gets the rows Trino gets.
"""

from __future__ import annotations

import uuid

import psycopg
from conftest import WAREHOUSE, FloeServer, TrinoServer

SCHEMA = f"tviews_{uuid.uuid4().hex[:8]}"


def endpoint(floe: FloeServer) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)


def rows(raw: list) -> list[tuple]:
    return sorted(tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in r) for r in raw)


def test_views_across_trino_and_floe(trino: TrinoServer, floe: FloeServer) -> None:
    trino.execute(f"CREATE SCHEMA {SCHEMA}")
    trino.execute(f"CREATE TABLE {SCHEMA}.deals (id BIGINT, region VARCHAR, stage VARCHAR, amount DOUBLE)")
    trino.execute(f"INSERT INTO {SCHEMA}.deals VALUES (1, 'EMEA', 'open', 10.0), (2, 'EMEA', 'won', 20.0), "
                  "(3, 'AMER', 'open', 30.0), (4, 'APAC', 'open', NULL)")
    with endpoint(floe) as conn:
        # Floe creates a view; Trino reads it.
        conn.execute(f"CREATE VIEW {SCHEMA}.open_by_region AS SELECT region, count(*) AS deals, "
                     f"sum(amount) AS value FROM {SCHEMA}.deals WHERE stage = 'open' GROUP BY region")
        floe_rows = rows(conn.execute(f"SELECT * FROM {SCHEMA}.open_by_region").fetchall())
        view = floe.request("GET", f"/v1/{WAREHOUSE}/namespaces/{SCHEMA}/views/open_by_region", token=floe.fetch_token())
        reps = {r["dialect"]: r["sql"] for r in view["metadata"]["versions"][-1]["representations"]}
        assert f'"floe"."{SCHEMA}"."deals"' in reps["trino"], reps
        trino_rows = rows(trino.execute(f"SELECT * FROM {SCHEMA}.open_by_region"))
        assert trino_rows == floe_rows == [("AMER", 1.0, 30.0), ("APAC", 1.0, None), ("EMEA", 1.0, 10.0)]

        # Trino creates a view; Floe reads it.
        trino.execute(f"CREATE VIEW {SCHEMA}.emea AS SELECT id, amount FROM {SCHEMA}.deals WHERE region = 'EMEA'")
        trino.execute(f"CREATE VIEW {SCHEMA}.qualified AS SELECT id FROM floe.{SCHEMA}.deals WHERE amount > 15")
        for v in ("emea", "qualified"):
            want = rows(trino.execute(f"SELECT * FROM {SCHEMA}.{v}"))
            got = rows(conn.execute(f"SELECT * FROM {SCHEMA}.{v}").fetchall())
            assert got == want, (v, got, want)
        assert rows(conn.execute(f"SELECT * FROM {SCHEMA}.emea").fetchall()) == [(1.0, 10.0), (2.0, 20.0)]
    for v in ("open_by_region", "emea", "qualified"):
        trino.execute(f"DROP VIEW {SCHEMA}.{v}")
    trino.execute(f"DROP TABLE {SCHEMA}.deals")
    trino.execute(f"DROP SCHEMA {SCHEMA}")
