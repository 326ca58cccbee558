"""Spark reads what DML through Floe's SQL endpoint committed.

Spark creates a table partitioned by region and fills it with two INSERTs.
Then psycopg, connected to Floe's SQL endpoint (PostgreSQL wire) with an
access token, runs an INSERT, an UPDATE (one that also moves a row to another
partition), a DELETE and a MERGE. After each statement:

* the row count psycopg reports is the number of rows the statement changed
  in an independent Python model of the table;
* Spark (REFRESH TABLE, then a new read through the REST catalog) sees
  exactly the model's rows;
* the table has one new snapshot, committed by Floe's SQL endpoint (its
  summary names the statement), whose parent is the snapshot before.

At the end Spark time-travels (VERSION AS OF) to the snapshot before each
statement and finds the model's rows of that moment.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import psycopg
from conftest import CATALOG, FloeServer

NS = "sqldml_ns"
TABLE = f"{NS}.items"
FQ = f"{CATALOG}.{TABLE}"

Row = tuple[int, str, Optional[int], Optional[float], str]  # id, name, qty, price, region
Model = dict[int, Row]


def spark_rows(spark: Any, version: Optional[int] = None) -> list[Row]:
    """The table's rows as Spark reads them now (or at snapshot version), by id."""
    at = f" VERSION AS OF {version}" if version is not None else ""
    rows = spark.sql(f"SELECT id, name, qty, price, region FROM {FQ}{at}").collect()
    return sorted((r.id, r.name, r.qty, r.price, r.region) for r in rows)


def current_snapshot(spark: Any) -> tuple[int, Optional[int], str, dict[str, str]]:
    """(snapshot id, parent id, operation, summary) of the snapshot the table's main branch points at."""
    r = spark.sql(f"SELECT s.snapshot_id, s.parent_id, s.operation, s.summary FROM {FQ}.refs r "
                  f"JOIN {FQ}.snapshots s ON s.snapshot_id = r.snapshot_id WHERE r.name = 'main'").collect()
    assert len(r) == 1, r
    return r[0].snapshot_id, r[0].parent_id, r[0].operation, dict(r[0].summary)


def initial_model() -> Model:
    m: Model = {}
    for i in range(1, 25):
        region = ("eu", "us", "apac")[i % 3]
        qty = None if i % 7 == 0 else i * 2
        m[i] = (i, f"item-{i}", qty, float(i) + 0.25, region)
    return m


def spark_values(rows: list[Row]) -> str:
    def lit(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, str):
            return "'" + v + "'"
        if isinstance(v, float):
            return f"CAST({v!r} AS DOUBLE)"
        return str(v)
    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def test_spark_reads_sql_endpoint_dml(floe: FloeServer, spark: Any) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    spark.sql(f"CREATE TABLE {FQ} (id BIGINT, name STRING, qty INT, price DOUBLE, region STRING) "
              "USING iceberg PARTITIONED BY (region)")
    model = initial_model()
    first = [model[i] for i in sorted(model) if i <= 12]
    second = [model[i] for i in sorted(model) if i > 12]
    spark.sql(f"INSERT INTO {FQ} VALUES {spark_values(first)}")
    spark.sql(f"INSERT INTO {FQ} VALUES {spark_values(second)}")
    assert spark_rows(spark) == sorted(model.values())

    history: list[tuple[str, int, list[Row]]] = []  # (statement, snapshot before it, rows before it)

    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                         password=floe.fetch_token(), sslmode="disable", connect_timeout=10,
                         autocommit=True) as conn:

        def step(kind: str, sql: str, change: Callable[[Model], int]) -> None:
            """Run sql through the endpoint, apply change to the model (it
            returns the rows it changed) and compare Spark's view with it."""
            before_id, _, _, _ = current_snapshot(spark)
            history.append((kind, before_id, sorted(model.values())))
            cur = conn.execute(sql)
            changed = change(model)
            assert changed > 0, f"{kind}: the model says the statement changes nothing"
            assert cur.rowcount == changed, f"{kind}: endpoint reports {cur.rowcount} rows, model {changed}"
            assert (cur.statusmessage or "").split()[0] == kind
            spark.sql(f"REFRESH TABLE {FQ}")
            assert spark_rows(spark) == sorted(model.values()), f"Spark after {kind}"
            snap_id, parent, op, summary = current_snapshot(spark)
            assert snap_id != before_id and parent == before_id, f"{kind}: one new snapshot on top of {before_id}"
            assert summary.get("floe.sql.statement") == kind, summary
            assert summary.get("floe.sql.principal") == "admin", summary
            assert op in ("append", "overwrite"), op

        # INSERT: new rows in existing and new partitions, one with columns left NULL.
        def insert(m: Model) -> int:
            for r in [(100, "new-100", 5, 1.5, "eu"), (101, "new-101", 6, 2.5, "us"),
                      (102, "new-102", None, None, "latam")]:
                m[r[0]] = r
            return 3
        step("INSERT", f"INSERT INTO {TABLE} VALUES (100, 'new-100', 5, 1.5, 'eu'), (101, 'new-101', 6, 2.5, 'us'), "
             "(102, 'new-102', NULL, NULL, 'latam')", insert)

        # UPDATE: arithmetic on eu rows, and one row moves from eu to us.
        def update(m: Model) -> int:
            n = 0
            for k, (i, name, qty, price, region) in list(m.items()):
                if region == "eu":
                    m[k] = (i, name.upper(), None if qty is None else qty + 10,
                            None if price is None else price * 2, "us" if i == 3 else region)
                    n += 1
            return n
        step("UPDATE", f"UPDATE {TABLE} SET name = upper(name), qty = qty + 10, price = price * 2, "
             "region = CASE WHEN id = 3 THEN 'us' ELSE region END WHERE region = 'eu'", update)

        # DELETE: a condition over several partitions (NULL qty rows stay).
        def delete(m: Model) -> int:
            gone = [k for k, r in m.items() if (r[2] is not None and r[2] % 4 == 0) or r[0] == 102]
            for k in gone:
                del m[k]
            return len(gone)
        step("DELETE", f"DELETE FROM {TABLE} WHERE qty % 4 = 0 OR id = 102", delete)

        # MERGE: matched rows deleted or updated, unmatched ones inserted.
        source = [(1, "m-1", 70), (5, "m-5", 3), (7, "m-7", 90), (200, "m-200", 1), (201, "m-201", 95)]
        assert 1 in model and 5 in model and 7 in model, sorted(model)  # the MERGE matches rows that exist

        def merge(m: Model) -> int:
            n = 0
            for i, name, qty in source:
                if i in m:
                    if qty > 80:
                        del m[i]
                    else:
                        _, _, _, price, region = m[i]
                        m[i] = (i, name, qty, price, region)
                else:
                    m[i] = (i, name, qty, 0.5, "us")
                n += 1
            return n
        values = ", ".join(f"({i}, '{name}', {qty})" for i, name, qty in source)
        step("MERGE", f"MERGE INTO {TABLE} AS t USING (SELECT * FROM (VALUES {values}) AS v(id, name, qty)) AS s "
             "ON t.id = s.id "
             "WHEN MATCHED AND s.qty > 80 THEN DELETE "
             "WHEN MATCHED THEN UPDATE SET name = s.name, qty = s.qty "
             "WHEN NOT MATCHED THEN INSERT (id, name, qty, price, region) VALUES (s.id, s.name, s.qty, 0.5, 'us')",
             merge)

        # The endpoint itself reads what Spark reads.
        got = sorted(tuple(r) for r in conn.execute(f"SELECT id, name, qty, price, region FROM {TABLE}").fetchall())
        assert got == sorted(model.values())

    # Time travel: the snapshot before each statement still shows its rows.
    assert [h[0] for h in history] == ["INSERT", "UPDATE", "DELETE", "MERGE"]
    for kind, snap, rows in history:
        assert spark_rows(spark, snap) == rows, f"VERSION AS OF the snapshot before {kind}"
    # And the rows of the very first snapshot are the first Spark INSERT's.
    first_snap = spark.sql(f"SELECT snapshot_id FROM {FQ}.snapshots ORDER BY committed_at, snapshot_id LIMIT 1").collect()[0][0]
    assert spark_rows(spark, first_snap) == sorted(first)
