"""psycopg (PostgreSQL's Python driver) against Floe's SQL endpoint.

PyIceberg writes a table through the REST catalog; psycopg logs in to the
PostgreSQL-wire endpoint with a Floe access token as its password, queries
the table (simple and extended protocol, server-side prepared statements,
parameters), is refused what the endpoint does not allow, cancels a long
query, and changes rows with INSERT, UPDATE, DELETE and MERGE, which
PyIceberg then reads.
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
        ]:
            with pytest.raises(err):
                conn.execute(sql)
            conn.rollback()


def test_dml_then_pyiceberg(floe, catalog: RestCatalog, table: str) -> None:
    """Erasing one customer is one DELETE; PyIceberg then reads the table
    without the row, and time travel still shows it."""
    ident = tuple(table.split("."))
    before = catalog.load_table(ident).current_snapshot().snapshot_id
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                         password=floe.fetch_token(), sslmode="disable", connect_timeout=10,
                         autocommit=True) as conn:
        cur = conn.execute(f"DELETE FROM {table} WHERE id = %s", (42,))
        assert cur.statusmessage == "DELETE 1" and cur.rowcount == 1
        cur = conn.execute(f"UPDATE {table} SET amount = amount * 10, name = NULL WHERE id <= 3")
        assert cur.statusmessage == "UPDATE 3"
        cur = conn.execute(f"INSERT INTO {table} (id, name, amount) VALUES (%s, %s, %s), (5001, 'b', '2.5')",
                           (5000, "a", 1.5))
        assert cur.statusmessage == "INSERT 0 2"
        cur = conn.execute(
            f"MERGE INTO {table} t USING (SELECT * FROM (VALUES (4, 'four'), (6000, 'six')) v(id, name)) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
            "WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, s.name, 0)")
        assert cur.statusmessage == "MERGE 2"
        cur = conn.execute(f"DELETE FROM {table} WHERE id = -1")
        assert cur.statusmessage == "DELETE 0"
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (2002,)

    tbl = catalog.load_table(ident)
    rows = {r["id"]: r for r in tbl.scan().to_arrow().to_pylist()}
    expected = {i: {"id": i, "name": f"n{i}", "amount": float(i)} for i in range(1, 2001)}
    del expected[42]
    for i in (1, 2, 3):
        expected[i] = {"id": i, "name": None, "amount": float(i) * 10}
    expected[5000] = {"id": 5000, "name": "a", "amount": 1.5}
    expected[5001] = {"id": 5001, "name": "b", "amount": 2.5}
    expected[4] = {"id": 4, "name": "four", "amount": 4.0}
    expected[6000] = {"id": 6000, "name": "six", "amount": 0.0}
    assert rows == expected
    # Time travel: the snapshot before the DML still has the customer.
    old = {r["id"]: r for r in tbl.scan(snapshot_id=before).to_arrow().to_pylist()}
    assert len(old) == 2000 and old[42] == {"id": 42, "name": "n42", "amount": 42.0}


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
