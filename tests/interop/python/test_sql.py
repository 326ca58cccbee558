"""psycopg (PostgreSQL's Python driver) against Floe's SQL endpoint.

PyIceberg writes a table through the REST catalog; psycopg logs in to the
PostgreSQL-wire endpoint with a Floe access token as its password, queries
the table (simple and extended protocol, server-side prepared statements,
parameters), is refused what the endpoint does not allow, and cancels a
long query.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

ROWS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("amount", pa.float64()),
])


@pytest.fixture
def table(catalog: RestCatalog, unique: str):
    ns = (f"sql_{unique}",)
    catalog.create_namespace(ns)
    tbl = catalog.create_table(ns + ("orders",), schema=ROWS)
    tbl.append(pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "amount": float(i)} for i in range(1, 2001)], schema=ROWS))
    yield f"{ns[0]}.orders"
    catalog.drop_table(ns + ("orders",))
    catalog.drop_namespace(ns)


def connect(floe) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10)


def test_query_and_parameters(floe, table: str) -> None:
    with connect(floe) as conn:
        cur = conn.execute(f"SELECT count(*), sum(amount) FROM {table}")
        assert cur.fetchone() == (2000, 2001000.0)
        # Parameters go to the server ($1) with the extended protocol.
        cur = conn.execute(f"SELECT id, name FROM {table} WHERE id = %s", (42,))
        assert cur.fetchall() == [(42, "n42")]
        # A server-side prepared statement, run several times.
        for i in (7, 8, 9):
            cur = conn.execute(f"SELECT name FROM {table} WHERE id = %s", (i,), prepare=True)
            assert cur.fetchone() == (f"n{i}",)
        assert [d.name for d in cur.description] == ["name"]


def test_refused(floe, table: str) -> None:
    with connect(floe) as conn:
        for sql, err in [
            ("SELECT * FROM read_csv('/etc/passwd')", psycopg.errors.InsufficientPrivilege),
            ("COPY (SELECT 1) TO '/tmp/x.csv'", psycopg.errors.InsufficientPrivilege),
            ("SET threads = 1", psycopg.errors.InsufficientPrivilege),
            (f"DELETE FROM {table}", psycopg.errors.FeatureNotSupported),
        ]:
            with pytest.raises(err):
                conn.execute(sql)
            conn.rollback()


def test_wrong_token(floe) -> None:
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                        password="not-a-token", sslmode="disable", connect_timeout=10)


def test_cancel(floe, table: str) -> None:
    with connect(floe) as conn:
        timer = threading.Timer(0.5, conn.cancel)
        timer.start()
        start = time.monotonic()
        try:
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute(f"SELECT count(*) FROM {table} a, {table} b, {table} c WHERE a.amount + b.amount > c.amount")
        finally:
            timer.cancel()
        assert time.monotonic() - start < 30
        conn.rollback()
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (2000,)
