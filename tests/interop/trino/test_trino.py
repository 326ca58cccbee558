"""Trino 476 creates and writes Iceberg tables through Floe (issue 16, part A).

Every step is a real Trino statement against the catalog `floe` (Floe's REST
catalog, OAuth2 client credentials, vended credentials, Floe's embedded S3
endpoint). The schema is created without a location, as every ordinary
namespace is; Trino places its tables under the location Floe answers for the
namespace. The test keeps a model of the rows of `orders` and compares what
Trino, PyIceberg and Floe's SQL endpoint (psycopg) read with it. The tests of
the class run in order and build on each other (one Trino, one Floe).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from conftest import WAREHOUSE, FloeServer, TrinoError, TrinoServer
from pyiceberg.catalog.rest import RestCatalog

SCHEMA = f"trino_{uuid.uuid4().hex[:8]}"
ORDERS = f"{SCHEMA}.orders"

Row = tuple[int, str, float]


class State:
    """What the tests of the class share: the rows orders should hold."""

    model: dict[int, Row] = {}
    snapshots: list[tuple[int, list[Row]]] = []  # (snapshot id, rows at it)
    dropped: list[str] = []  # locations of the tables dropped


def rows_of(raw: list[list[Any]]) -> list[Row]:
    return sorted((int(r[0]), str(r[1]), float(r[2])) for r in raw)


def expected() -> list[Row]:
    return sorted(State.model.values())


def current_snapshot(trino: TrinoServer, table: str) -> int:
    raw = trino.execute(f'SELECT snapshot_id FROM {SCHEMA}."{table}$snapshots" ORDER BY committed_at DESC LIMIT 1')
    return int(raw[0][0])


def pyiceberg_catalog(floe: FloeServer) -> RestCatalog:
    return RestCatalog("floe", uri=floe.uri, warehouse=WAREHOUSE, credential=floe.credential,
                       **{"oauth2-server-uri": floe.token_url})


def sql_endpoint(floe: FloeServer) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)


def files_under(floe: FloeServer, location: str) -> list[str]:
    root = floe.local_path(location)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.incremental
class TestTrinoWrites:
    def test_create_schema_without_location(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"CREATE SCHEMA {SCHEMA}")
        assert SCHEMA in [r[0] for r in trino.execute("SHOW SCHEMAS")]
        props = floe.namespace_json(SCHEMA)["properties"]
        assert props.get("location") == f"s3://{WAREHOUSE}/{SCHEMA}", props

    def test_create_table_and_insert(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"CREATE TABLE {ORDERS} (id bigint, name varchar, amount double)")
        assert floe.table_names(SCHEMA) == ["orders"]
        loc = floe.table_json(SCHEMA, "orders")["metadata"]["location"]
        assert loc.startswith(f"s3://{WAREHOUSE}/{SCHEMA}/orders-"), loc
        changed = trino.execute(f"INSERT INTO {ORDERS} VALUES (1, 'ada', 10.5), (2, 'bo', 20.0), (3, 'cy', 30.25)")
        assert changed == [[3]]
        State.model = {1: (1, "ada", 10.5), 2: (2, "bo", 20.0), 3: (3, "cy", 30.25)}
        trino.execute(f"INSERT INTO {ORDERS} VALUES (4, 'di', 40.0), (5, 'ed', 50.0)")
        State.model.update({4: (4, "di", 40.0), 5: (5, "ed", 50.0)})
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()
        State.snapshots.append((current_snapshot(trino, "orders"), expected()))

    def test_ctas(self, trino: TrinoServer, floe: FloeServer) -> None:
        assert trino.execute(f"CREATE TABLE {SCHEMA}.big_orders AS SELECT * FROM {ORDERS} WHERE amount >= 20") == [[4]]
        want = sorted(r for r in State.model.values() if r[2] >= 20)
        assert rows_of(trino.execute(f"SELECT * FROM {SCHEMA}.big_orders")) == want
        assert "big_orders" in floe.table_names(SCHEMA)

    def test_update(self, trino: TrinoServer) -> None:
        assert trino.execute(f"UPDATE {ORDERS} SET amount = amount * 2 WHERE id IN (1, 2)") == [[2]]
        for k in (1, 2):
            i, n, a = State.model[k]
            State.model[k] = (i, n, a * 2)
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()
        State.snapshots.append((current_snapshot(trino, "orders"), expected()))

    def test_delete(self, trino: TrinoServer) -> None:
        assert trino.execute(f"DELETE FROM {ORDERS} WHERE id = 3") == [[1]]
        del State.model[3]
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()

    def test_merge(self, trino: TrinoServer) -> None:
        changed = trino.execute(f"""
            MERGE INTO {ORDERS} t
            USING (VALUES (4, 'di', 44.0), (6, 'fa', 60.0)) AS s (id, name, amount)
            ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET amount = s.amount
            WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, s.name, s.amount)""")
        assert changed == [[2]]
        State.model[4] = (4, "di", 44.0)
        State.model[6] = (6, "fa", 60.0)
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()
        State.snapshots.append((current_snapshot(trino, "orders"), expected()))

    def test_time_travel(self, trino: TrinoServer) -> None:
        for snap, rows in State.snapshots:
            assert rows_of(trino.execute(f"SELECT * FROM {ORDERS} FOR VERSION AS OF {snap}")) == rows, snap
        first, rows = State.snapshots[0]
        committed = trino.execute(
            f'SELECT CAST(committed_at AS varchar) FROM {SCHEMA}."orders$snapshots" WHERE snapshot_id = {first}')[0][0]
        got = trino.execute(f"SELECT * FROM {ORDERS} FOR TIMESTAMP AS OF TIMESTAMP '{committed}'")
        assert rows_of(got) == rows

    def test_schema_evolution(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"ALTER TABLE {ORDERS} ADD COLUMN note varchar")
        trino.execute(f"UPDATE {ORDERS} SET note = 'n' || CAST(id AS varchar) WHERE id = 1")
        assert trino.execute(f"SELECT note FROM {ORDERS} WHERE id = 1") == [["n1"]]
        trino.execute(f"ALTER TABLE {ORDERS} RENAME COLUMN note TO remark")
        assert trino.execute(f"SELECT remark FROM {ORDERS} WHERE id = 1") == [["n1"]]
        trino.execute(f"ALTER TABLE {ORDERS} DROP COLUMN remark")
        cols = [r[0] for r in trino.execute(f"DESCRIBE {ORDERS}")]
        assert cols == ["id", "name", "amount"]
        md = floe.table_json(SCHEMA, "orders")["metadata"]
        current = [s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]][0]
        fields = [f["name"] for f in current["fields"]]
        assert fields == ["id", "name", "amount"]
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()
        State.snapshots.append((current_snapshot(trino, "orders"), expected()))

    def test_partition_evolution(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"ALTER TABLE {ORDERS} SET PROPERTIES partitioning = ARRAY['bucket(id, 4)']")
        md = floe.table_json(SCHEMA, "orders")["metadata"]
        spec = [s for s in md["partition-specs"] if s["spec-id"] == md["default-spec-id"]][0]
        assert [f["transform"] for f in spec["fields"]] == ["bucket[4]"], spec
        trino.execute(f"INSERT INTO {ORDERS} VALUES (7, 'gu', 70.0), (8, 'ha', 80.0)")
        State.model.update({7: (7, "gu", 70.0), 8: (8, "ha", 80.0)})
        specs = {int(r[0]) for r in trino.execute(f'SELECT DISTINCT spec_id FROM {SCHEMA}."orders$files"')}
        assert specs == {0, md["default-spec-id"]}, specs
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()

    def test_view(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"CREATE VIEW {SCHEMA}.rich AS SELECT id, name FROM {ORDERS} WHERE amount > 40")
        got = sorted(tuple(r) for r in trino.execute(f"SELECT * FROM {SCHEMA}.rich"))
        assert got == sorted((i, n) for i, n, a in State.model.values() if a > 40)
        views = floe.request("GET", f"/v1/{WAREHOUSE}/namespaces/{SCHEMA}/views", token=floe.fetch_token())
        assert [v["name"] for v in views["identifiers"]] == ["rich"]

    def test_optimize(self, trino: TrinoServer) -> None:
        before = trino.execute(f'SELECT count(*) FROM {SCHEMA}."orders$files"')[0][0]
        assert before > 1
        trino.execute(f"ALTER TABLE {ORDERS} EXECUTE optimize")
        after = trino.execute(f'SELECT count(*) FROM {SCHEMA}."orders$files"')[0][0]
        assert after < before, (before, after)
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()

    def test_pyiceberg_reads_the_same_rows(self, floe: FloeServer) -> None:
        tbl = pyiceberg_catalog(floe).load_table((SCHEMA, "orders"))
        got = sorted((r["id"], r["name"], r["amount"]) for r in tbl.scan().to_arrow().to_pylist())
        assert got == expected()
        big = pyiceberg_catalog(floe).load_table((SCHEMA, "big_orders")).scan().to_arrow()
        assert big.num_rows == 4

    def test_sql_endpoint_reads_the_same_rows(self, floe: FloeServer) -> None:
        with sql_endpoint(floe) as conn:
            got = conn.execute(f"SELECT id, name, amount FROM {ORDERS} ORDER BY id").fetchall()
        assert sorted((int(i), n, float(a) if isinstance(a, Decimal) else a) for i, n, a in got) == expected()

    def test_create_on_a_taken_location_leaves_no_table(self, trino: TrinoServer, floe: FloeServer) -> None:
        # Trino stages the create, finds files at the location and gives up: nothing was made.
        taken = floe.table_json(SCHEMA, "orders")["metadata"]["location"]
        with pytest.raises(TrinoError, match="non-empty location"):
            trino.execute(f"CREATE TABLE {SCHEMA}.clash (id bigint) WITH (location = '{taken}')")
        assert floe.table_names(SCHEMA) == ["big_orders", "orders"]

    def test_rename_and_expire_snapshots(self, trino: TrinoServer, floe: FloeServer) -> None:
        trino.execute(f"ALTER TABLE {SCHEMA}.big_orders RENAME TO {SCHEMA}.large_orders")
        assert floe.table_names(SCHEMA) == ["large_orders", "orders"]
        assert trino.execute(f"SELECT count(*) FROM {SCHEMA}.large_orders") == [[4]]
        snaps = trino.execute(f'SELECT count(*) FROM {SCHEMA}."orders$snapshots"')[0][0]
        assert snaps > 1
        trino.execute(f"ALTER TABLE {ORDERS} EXECUTE expire_snapshots(retention_threshold => '0s')")
        assert trino.execute(f'SELECT count(*) FROM {SCHEMA}."orders$snapshots"') == [[1]]
        assert len(floe.table_json(SCHEMA, "orders")["metadata"]["snapshots"]) == 1
        assert rows_of(trino.execute(f"SELECT * FROM {ORDERS}")) == expected()

    def test_drop(self, trino: TrinoServer, floe: FloeServer) -> None:
        for t in ("large_orders", "orders"):
            loc = floe.table_json(SCHEMA, t)["metadata"]["location"]
            assert files_under(floe, loc), f"{t} has no files to free"
            State.dropped.append(loc)
        trino.execute(f"DROP VIEW {SCHEMA}.rich")
        trino.execute(f"DROP TABLE {SCHEMA}.large_orders")
        trino.execute(f"DROP TABLE {ORDERS}")
        assert floe.table_names(SCHEMA) == []
        trino.execute(f"DROP SCHEMA {SCHEMA}")
        assert SCHEMA not in [r[0] for r in trino.execute("SHOW SCHEMAS")]

    def test_dropped_tables_files_are_gone(self, floe: FloeServer) -> None:
        for loc in State.dropped:
            assert files_under(floe, loc) == [], f"files left after DROP TABLE under {loc}"


def test_failed_ctas_leaves_no_table(trino: TrinoServer, floe: FloeServer) -> None:
    """A CTAS whose query fails while it runs, in a schema made without a
    location, leaves no table (before namespaces had a location, Trino created
    the table outright, failed, and left it behind)."""
    ns = f"fail_{uuid.uuid4().hex[:8]}"
    trino.execute(f"CREATE SCHEMA {ns}")
    with pytest.raises(TrinoError) as e:
        trino.execute(f"CREATE TABLE {ns}.broken AS SELECT x / (x - x) AS y FROM (VALUES 1, 2, 3) AS v (x)")
    assert floe.table_names(ns) == [], f"the failed CTAS ({e.value.message}) left a table"
    assert "Division by zero" in e.value.message
    trino.execute(f"DROP SCHEMA {ns}")


def test_demo_style_namespace_created_elsewhere(trino: TrinoServer, floe: FloeServer) -> None:
    """A namespace another client made without a location (as `floe serve
    --demo` makes crm) takes Trino's CREATE TABLE and CTAS too."""
    ns = f"crm_{uuid.uuid4().hex[:8]}"
    pyiceberg_catalog(floe).create_namespace(ns)
    trino.execute(f"CREATE TABLE {ns}.t (id bigint, at date)")
    trino.execute(f"INSERT INTO {ns}.t VALUES (1, DATE '2026-01-02')")
    assert trino.execute(f"CREATE TABLE {ns}.c AS SELECT * FROM {ns}.t") == [[1]]
    assert trino.execute(f"SELECT * FROM {ns}.c") == [[1, "2026-01-02"]]
    assert floe.table_names(ns) == ["c", "t"]
    rows = pyiceberg_catalog(floe).load_table((ns, "c")).scan().to_arrow().to_pylist()
    assert rows == [{"id": 1, "at": dt.date(2026, 1, 2)}]
    for t in ("c", "t"):
        trino.execute(f"DROP TABLE {ns}.{t}")
    trino.execute(f"DROP SCHEMA {ns}")
