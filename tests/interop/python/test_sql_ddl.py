"""SQL DDL and transactions through psycopg, read back with PyIceberg (issue 17, part A).

psycopg creates a schema and tables through Floe's SQL endpoint (types, NOT
NULL, PARTITIONED BY with Iceberg transforms, table properties, CREATE TABLE
AS, ALTER TABLE); PyIceberg then loads them through the REST catalog as real
Iceberg tables with that schema, partition spec and properties, and reads
their rows. A transaction block (psycopg opens one by default) that fails
midway leaves nothing; one that commits changes every table at once. A
principal without CREATE_TABLE is refused, and the error names the privilege.
"""

from __future__ import annotations

import psycopg
import pytest
from conftest import WAREHOUSE
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import (BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType, LongType,
                             StringType, TimestampType, TimestamptzType)


def connect(floe, autocommit: bool = True, user: str = "admin", password: str | None = None) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=user,
                           password=password or floe.fetch_token(), sslmode="disable", connect_timeout=10,
                           autocommit=autocommit)


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


def test_create_schema_and_tables_then_pyiceberg(floe, catalog, unique: str) -> None:
    ns = f"ddl_{unique}"
    with connect(floe) as conn:
        assert conn.execute(f"CREATE SCHEMA {ns}").statusmessage == "CREATE SCHEMA"
        conn.execute(f"""CREATE TABLE {ns}.orders (
            id bigint NOT NULL, qty integer, price real, total double precision,
            amount numeric(12, 2), region text, ok boolean, day date, at timestamp, seen timestamptz)
            PARTITIONED BY (bucket(8, id), day(seen), truncate(2, region), ok)
            WITH ('write.parquet.compression-codec' = 'zstd', owner = 'sales')""")
        cur = conn.execute(f"INSERT INTO {ns}.orders (id, qty, region, ok, seen, amount) VALUES "
                           "(1, 5, 'eu-west', true, TIMESTAMPTZ '2026-03-01 10:00:00+00', 12.50), "
                           "(2, 7, 'us-east', false, TIMESTAMPTZ '2026-03-02 11:00:00+00', 3.25)")
        assert cur.statusmessage == "INSERT 0 2"
        cur = conn.execute(f"CREATE TABLE {ns}.big AS SELECT id, qty * 10 AS qty10, region FROM {ns}.orders WHERE qty > 6")
        assert cur.statusmessage == "SELECT 1"
        conn.execute(f"ALTER TABLE {ns}.orders ADD COLUMN note varchar")
        conn.execute(f"ALTER TABLE {ns}.orders ALTER COLUMN qty TYPE bigint")
        conn.execute(f"COMMENT ON TABLE {ns}.orders IS 'orders as SQL made them'")

    tbl = catalog.load_table((ns, "orders"))
    types = {f.name: (f.field_type, f.required) for f in tbl.schema().fields}
    assert types == {
        "id": (LongType(), True), "qty": (LongType(), False), "price": (FloatType(), False),
        "total": (DoubleType(), False), "amount": (DecimalType(12, 2), False), "region": (StringType(), False),
        "ok": (BooleanType(), False), "day": (DateType(), False), "at": (TimestampType(), False),
        "seen": (TimestamptzType(), False), "note": (StringType(), False),
    }
    transforms = [(tbl.schema().find_field(f.source_id).name, f.transform) for f in tbl.spec().fields]
    assert transforms == [("id", BucketTransform(8)), ("seen", DayTransform()), ("region", TruncateTransform(2)),
                          ("ok", IdentityTransform())]
    props = tbl.properties
    assert props["write.parquet.compression-codec"] == "zstd"
    assert props["owner"] == "sales"
    assert props["comment"] == "orders as SQL made them"
    rows = tbl.scan().to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["qty"], r["region"], r["note"]) for r in rows] == [(1, 5, "eu-west", None), (2, 7, "us-east", None)]

    big = catalog.load_table((ns, "big"))
    assert [f.name for f in big.schema().fields] == ["id", "qty10", "region"]
    assert big.schema().find_field("qty10").field_type == IntegerType()
    assert big.scan().to_arrow().to_pylist() == [{"id": 2, "qty10": 70, "region": "us-east"}]

    with connect(floe) as conn:
        conn.execute(f"DROP TABLE {ns}.big")
        conn.execute(f"DROP TABLE {ns}.orders")
        conn.execute(f"DROP SCHEMA {ns}")
    assert (ns,) not in catalog.list_namespaces()


def test_transaction_fails_midway_and_leaves_nothing(floe, catalog, unique: str) -> None:
    ns = f"ddltx_{unique}"
    with connect(floe) as conn:
        conn.execute(f"CREATE SCHEMA {ns}")
        conn.execute(f"CREATE TABLE {ns}.a (id bigint NOT NULL, v text)")
        conn.execute(f"INSERT INTO {ns}.a VALUES (1, 'one')")
    before = catalog.load_table((ns, "a")).current_snapshot().snapshot_id

    # psycopg opens a transaction block by default.
    with connect(floe, autocommit=False) as conn:
        conn.execute(f"INSERT INTO {ns}.a VALUES (2, 'two')")
        conn.execute(f"CREATE TABLE {ns}.b AS SELECT id FROM {ns}.a")
        assert conn.execute(f"SELECT count(*) FROM {ns}.a").fetchone() == (2,)  # its own writes
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute(f"UPDATE {ns}.missing SET v = 'x'")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute(f"DELETE FROM {ns}.a")
        conn.rollback()
    assert catalog.load_table((ns, "a")).current_snapshot().snapshot_id == before
    with pytest.raises(NoSuchTableError):
        catalog.load_table((ns, "b"))

    # A block that commits changes both tables in one catalog commit.
    with connect(floe, autocommit=False) as conn:
        conn.execute(f"INSERT INTO {ns}.a VALUES (3, 'three')")
        conn.execute(f"CREATE TABLE {ns}.b AS SELECT id FROM {ns}.a")
        conn.execute(f"DELETE FROM {ns}.a WHERE id = 1")
        conn.commit()
    a = catalog.load_table((ns, "a"))
    assert sorted(a.scan().to_arrow().column("id").to_pylist()) == [3]
    assert sorted(catalog.load_table((ns, "b")).scan().to_arrow().column("id").to_pylist()) == [1, 3]
    ops = [s.summary.operation.value for s in a.snapshots()]
    assert len(ops) == 3, ops  # the insert before, then the block's insert and delete


def test_principal_without_create_table_is_refused(floe, catalog, unique: str) -> None:
    ns = f"ddlpriv_{unique}"
    catalog.create_namespace(ns)
    name = f"builder-{unique}"
    out = _admin(floe, "POST", "/principals", {"name": name})
    token = floe.fetch_token(out["client_id"], out["client_secret"])
    with connect(floe, user=name, password=token) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
            conn.execute(f"CREATE TABLE {ns}.t (id bigint)")
        assert "lacks CREATE_TABLE" in str(err.value)
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
            conn.execute(f"CREATE SCHEMA {ns}_child")
        assert "lacks CREATE_NAMESPACE" in str(err.value)
    with pytest.raises(NoSuchTableError):
        catalog.load_table((ns, "t"))

    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": name}, "privilege": "CREATE_TABLE",
                                     "on": {"kind": "namespace", "warehouse": WAREHOUSE, "namespace": [ns]}})
    token = floe.fetch_token(out["client_id"], out["client_secret"])
    with connect(floe, user=name, password=token) as conn:
        conn.execute(f"CREATE TABLE {ns}.t (id bigint)")
        conn.execute(f"INSERT INTO {ns}.t VALUES (42)")  # the creator owns it
    assert catalog.load_table((ns, "t")).scan().to_arrow().column("id").to_pylist() == [42]
