"""Apache Spark (pyspark 3.5 + Iceberg's Spark runtime) against Floe.

Spark talks to Floe as the Iceberg REST catalog `floe` (OAuth2 client
credentials, nothing else configured) and reads and writes the table files
itself, with Iceberg's S3FileIO, through Floe's embedded S3 endpoint and the
short-lived credentials Floe vends with each table (s3://floe/... locations;
the files sit encrypted in Floe's warehouse directory). Every result is
compared with values computed here in Python from the rows the test wrote, and
where it matters with Floe's own view of the table over the REST API.

TestEventsTable is one ordered scenario on one partitioned table: each step
builds on the previous one, so after a failure the later steps are reported as
xfail ("an earlier step failed") instead of failing for the wrong reason.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import CATALOG, FloeServer, RestError, catalog_conf

NS = "interop"
EVENTS = f"{CATALOG}.{NS}.events"
COLS = "id, CAST(ts AS STRING) AS ts, category, qty, amount"


class Ev(NamedTuple):
    id: int
    ts: str  # 'YYYY-MM-DD HH:MM:SS', UTC (the session time zone)
    category: str
    qty: int
    amount: Decimal


def make_events(ids: range, first_day: datetime, days: int, seed: int) -> list[Ev]:
    rnd = random.Random(seed)
    out = []
    for i in ids:
        ts = first_day + timedelta(days=rnd.randrange(days), seconds=rnd.randrange(86400))
        amount = Decimal(rnd.randrange(100, 100000)) / 100
        out.append(Ev(i, ts.strftime("%Y-%m-%d %H:%M:%S"), rnd.choice("abc"), rnd.randint(1, 10), amount))
    return out


# Two batches over overlapping days: 2024-03-01..03 and 2024-03-03..06.
BATCH1 = make_events(range(1, 31), datetime(2024, 3, 1), 3, seed=1)
BATCH2 = make_events(range(31, 61), datetime(2024, 3, 3), 4, seed=2)


def values(rows: list[Ev]) -> str:
    return ", ".join(f"({r.id}, TIMESTAMP '{r.ts}', '{r.category}', {r.qty}, {r.amount})" for r in rows)


def read_events(spark: Any, table: str = EVENTS, suffix: str = "") -> list[Ev]:
    return [Ev(*r) for r in spark.sql(f"SELECT {COLS} FROM {table} {suffix} ORDER BY id").collect()]


def aggregates(rows: list[Ev]) -> tuple[int, int, Decimal, int]:
    return (len(rows), sum(r.qty for r in rows), sum((r.amount for r in rows), Decimal("0.00")),
            len({r.ts[:10] for r in rows}))


def spark_aggregates(spark: Any, table: str = EVENTS) -> tuple[int, int, Decimal, int]:
    r = spark.sql(f"SELECT count(*), sum(qty), sum(amount), count(DISTINCT CAST(ts AS DATE)) FROM {table}").first()
    return (r[0], r[1], r[2], r[3])


def snapshots(spark: Any, table: str = EVENTS) -> list[Any]:
    return spark.sql(
        f"SELECT snapshot_id, parent_id, operation, summary FROM {table}.snapshots ORDER BY committed_at"
    ).collect()


def data_files(spark: Any, floe: FloeServer, table: str = EVENTS) -> list[Path]:
    """The files on disk (in Floe's warehouse directory) behind the table's data and delete files."""
    return [floe.local_path(r[0]) for r in spark.sql(f"SELECT file_path FROM {table}.all_files").collect()]


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class State:
    """What the scenario has done so far: the rows Floe's table should hold."""

    model: dict[int, Ev] = {}
    s1: int = 0  # snapshot id after the first insert
    s2: int = 0  # after the second


def expected() -> list[Ev]:
    return [State.model[k] for k in sorted(State.model)]


@pytest.mark.incremental
class TestEventsTable:
    def test_create_namespace(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"CREATE NAMESPACE {CATALOG}.{NS} COMMENT 'spark interop' WITH DBPROPERTIES ('purpose' = 'interop')")
        names = [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {CATALOG}").collect()]
        assert NS in names
        props = floe.rest("GET", f"/v1/floe/namespaces/{NS}")["properties"]
        assert props.get("purpose") == "interop"
        assert props.get("comment") == "spark interop"
        desc = {r[0]: r[1] for r in spark.sql(f"DESCRIBE NAMESPACE EXTENDED {CATALOG}.{NS}").collect()}
        assert "purpose" in desc.get("Properties", ""), desc

    def test_create_partitioned_table(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"""
            CREATE TABLE {EVENTS} (
                id BIGINT NOT NULL, ts TIMESTAMP NOT NULL, category STRING, qty INT, amount DECIMAL(10,2))
            USING iceberg
            PARTITIONED BY (days(ts))
            TBLPROPERTIES (
                'format-version' = '2',
                'write.delete.mode' = 'merge-on-read',
                'write.update.mode' = 'merge-on-read',
                'write.merge.mode' = 'merge-on-read')
        """)
        assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{NS}").collect()] == ["events"]
        desc = [(r[0], r[1]) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {EVENTS}").collect()]
        assert ("Part 0", "days(ts)") in desc, desc
        assert read_events(spark) == []

        # Floe's view: a v2 table with a day(ts) spec, in its own warehouse.
        meta = floe.load_table(NS, "events")["metadata"]
        assert meta["format-version"] == 2
        schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
        ts_id = next(f["id"] for f in schema["fields"] if f["name"] == "ts")
        spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])
        assert [(f["source-id"], f["transform"]) for f in spec["fields"]] == [(ts_id, "day")]
        assert meta["properties"]["write.delete.mode"] == "merge-on-read"
        assert meta["location"].startswith("s3://floe/"), meta["location"]

    def test_insert_first_batch(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"INSERT INTO {EVENTS} VALUES {values(BATCH1)}")
        State.model = {r.id: r for r in BATCH1}
        assert read_events(spark) == expected()
        assert spark_aggregates(spark) == aggregates(BATCH1)
        snaps = snapshots(spark)
        assert len(snaps) == 1 and snaps[0].operation == "append" and snaps[0].parent_id is None
        State.s1 = snaps[0].snapshot_id
        assert floe.load_table(NS, "events")["metadata"]["current-snapshot-id"] == State.s1

    def test_insert_second_batch(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"INSERT INTO {EVENTS} VALUES {values(BATCH2)}")
        State.model.update({r.id: r for r in BATCH2})
        assert read_events(spark) == expected()
        assert spark_aggregates(spark) == aggregates(BATCH1 + BATCH2)
        # One partition per UTC day, with the right number of rows in each.
        per_day = {str(r[0]): r[1] for r in spark.sql(f"SELECT partition.ts_day, record_count FROM {EVENTS}.partitions").collect()}
        assert per_day == dict(Counter(r.ts[:10] for r in BATCH1 + BATCH2))
        snaps = snapshots(spark)
        assert [s.operation for s in snaps] == ["append", "append"]
        assert snaps[1].parent_id == State.s1
        State.s2 = snaps[1].snapshot_id
        table = floe.load_table(NS, "events")
        assert table["metadata"]["current-snapshot-id"] == State.s2
        assert floe.local_path(table["metadata-location"]).is_file()
        files = data_files(spark, floe)
        assert len(files) >= len(per_day)
        for f in files:
            assert f.is_file() and f.is_relative_to(floe.warehouse_dir), f

    def test_time_travel_to_first_snapshot(self, spark: Any) -> None:
        first = spark.sql(f"SELECT snapshot_id FROM {EVENTS}.snapshots WHERE parent_id IS NULL").collect()
        assert [r[0] for r in first] == [State.s1]
        assert read_events(spark, suffix=f"VERSION AS OF {State.s1}") == sorted(BATCH1)
        assert spark.sql(f"SELECT count(*) FROM {EVENTS} VERSION AS OF {State.s2}").first()[0] == len(BATCH1) + len(BATCH2)

    def test_delete_rows(self, spark: Any) -> None:
        doomed = [r.id for r in State.model.values() if r.qty >= 8]
        assert 0 < len(doomed) < len(State.model)
        spark.sql(f"DELETE FROM {EVENTS} WHERE qty >= 8")
        for i in doomed:
            del State.model[i]
        assert read_events(spark) == expected()
        assert spark_aggregates(spark) == aggregates(expected())
        # A real row-level delete (merge-on-read): position deletes, not rewritten data files.
        last = snapshots(spark)[-1]
        assert int(last.summary.get("added-position-deletes", "0")) == len(doomed), last.summary
        assert last.parent_id == State.s2

    def test_update_rows(self, spark: Any) -> None:
        changed = [k for k, r in State.model.items() if r.category == "b"]
        assert changed
        spark.sql(f"UPDATE {EVENTS} SET amount = amount * 2, qty = qty + 100 WHERE category = 'b'")
        for k in changed:
            r = State.model[k]
            State.model[k] = r._replace(amount=r.amount * 2, qty=r.qty + 100)
        assert read_events(spark) == expected()
        assert spark_aggregates(spark) == aggregates(expected())
        # Merge-on-read: the old rows are deleted by position, the new ones appended.
        # (Iceberg folds the earlier position deletes of a data file into the new
        # delete file, so count the net number of position deletes.)
        last = snapshots(spark)[-1]
        net = int(last.summary.get("added-position-deletes", "0")) - int(last.summary.get("removed-position-deletes", "0"))
        assert net == len(changed), last.summary
        assert int(last.summary.get("added-records", "0")) == len(changed), last.summary

    def test_merge_into(self, spark: Any) -> None:
        live = sorted(State.model)
        to_update, to_delete = live[:4], live[4:7]
        new = make_events(range(1001, 1006), datetime(2024, 3, 10), 2, seed=3)
        src = [State.model[i]._replace(qty=7, amount=Decimal("1.25")) for i in to_update]
        rows = [f"({r.id}, TIMESTAMP '{r.ts}', '{r.category}', {r.qty}, CAST({r.amount} AS DECIMAL(10,2)), 'U')" for r in src]
        rows += [f"({i}, TIMESTAMP '2000-01-01 00:00:00', 'x', 0, CAST(0 AS DECIMAL(10,2)), 'D')" for i in to_delete]
        rows += [f"({r.id}, TIMESTAMP '{r.ts}', '{r.category}', {r.qty}, CAST({r.amount} AS DECIMAL(10,2)), 'I')" for r in new]
        spark.sql(f"""
            MERGE INTO {EVENTS} t
            USING (SELECT * FROM VALUES {', '.join(rows)} AS s(id, ts, category, qty, amount, op)) s
            ON t.id = s.id
            WHEN MATCHED AND s.op = 'D' THEN DELETE
            WHEN MATCHED THEN UPDATE SET t.qty = s.qty, t.amount = s.amount
            WHEN NOT MATCHED THEN INSERT (id, ts, category, qty, amount) VALUES (s.id, s.ts, s.category, s.qty, s.amount)
        """)
        for r in src:
            State.model[r.id] = r
        for i in to_delete:
            del State.model[i]
        State.model.update({r.id: r for r in new})
        assert read_events(spark) == expected()
        assert spark_aggregates(spark) == aggregates(expected())

    def test_add_column(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"ALTER TABLE {EVENTS} ADD COLUMN note STRING COMMENT 'added by spark'")
        cols = [r.col_name for r in spark.sql(f"DESCRIBE TABLE {EVENTS}").collect()]
        assert cols[:6] == ["id", "ts", "category", "qty", "amount", "note"]
        spark.sql(f"INSERT INTO {EVENTS} VALUES (2001, TIMESTAMP '2024-03-02 12:00:00', 'c', 1, 9.99, 'hello')")
        State.model[2001] = Ev(2001, "2024-03-02 12:00:00", "c", 1, Decimal("9.99"))
        assert read_events(spark) == expected()
        notes = {r.id: r.note for r in spark.sql(f"SELECT id, note FROM {EVENTS}").collect()}
        assert notes == {i: ("hello" if i == 2001 else None) for i in State.model}
        meta = floe.load_table(NS, "events")["metadata"]
        schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
        note = [f for f in schema["fields"] if f["name"] == "note"]
        assert note and note[0]["type"] == "string" and not note[0]["required"] and note[0].get("doc") == "added by spark"
        assert len(meta["schemas"]) == 2
        # Time travel still reads the first snapshot, with the schema it was written with.
        old = spark.sql(f"SELECT * FROM {EVENTS} VERSION AS OF {State.s1}")
        assert old.columns == ["id", "ts", "category", "qty", "amount"]
        assert read_events(spark, suffix=f"VERSION AS OF {State.s1}") == sorted(BATCH1)

    def test_show_and_drop_tables(self, spark: Any, floe: FloeServer) -> None:
        spark.sql(f"CREATE TABLE {CATALOG}.{NS}.scratch (id INT) USING iceberg")
        spark.sql(f"INSERT INTO {CATALOG}.{NS}.scratch VALUES (1), (2)")
        names = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{NS}").collect())
        assert names == ["events", "scratch"]

        events_meta = floe.local_path(floe.load_table(NS, "events")["metadata-location"])
        spark.sql(f"DROP TABLE {EVENTS}")
        names = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{NS}").collect())
        assert names == ["scratch"]
        with pytest.raises(Exception) as exc:
            spark.sql(f"SELECT * FROM {EVENTS}").collect()
        assert "TABLE_OR_VIEW_NOT_FOUND" in error_text(exc.value)
        with pytest.raises(RestError) as rexc:
            floe.load_table(NS, "events")
        assert rexc.value.status == 404 and "NoSuchTableException" in rexc.value.body
        assert events_meta.is_file(), "DROP TABLE without PURGE must keep the table's files"

        scratch_files = data_files(spark, floe, f"{CATALOG}.{NS}.scratch")
        assert scratch_files and all(f.is_file() for f in scratch_files)
        spark.sql(f"DROP TABLE {CATALOG}.{NS}.scratch PURGE")
        assert spark.sql(f"SHOW TABLES IN {CATALOG}.{NS}").collect() == []
        assert not any(f.exists() for f in scratch_files), "DROP TABLE ... PURGE left data files behind"

        spark.sql(f"DROP NAMESPACE {CATALOG}.{NS}")
        assert NS not in [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {CATALOG}").collect()]


def test_ctas_rename_and_replace(spark: Any, floe: FloeServer) -> None:
    """CREATE TABLE AS SELECT and REPLACE TABLE AS SELECT (staged creates) and RENAME."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.ctas")
    spark.sql(f"""CREATE TABLE {CATALOG}.ctas.t USING iceberg PARTITIONED BY (category)
                  AS SELECT * FROM VALUES {values(BATCH1)} AS v(id, ts, category, qty, amount)""")
    assert read_events(spark, f"{CATALOG}.ctas.t") == sorted(BATCH1)
    spark.sql(f"ALTER TABLE {CATALOG}.ctas.t RENAME TO ctas.t2")
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.ctas").collect()] == ["t2"]
    assert read_events(spark, f"{CATALOG}.ctas.t2") == sorted(BATCH1)
    spark.sql(f"""REPLACE TABLE {CATALOG}.ctas.t2 USING iceberg
                  AS SELECT * FROM VALUES {values(BATCH2)} AS v(id, ts, category, qty, amount)""")
    assert read_events(spark, f"{CATALOG}.ctas.t2") == sorted(BATCH2)
    meta = floe.load_table("ctas", "t2")["metadata"]
    assert len(meta["snapshots"]) == 2  # the replace keeps the table's history
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])
    assert spec["fields"] == []  # the replacement is not partitioned
    spark.sql(f"DROP TABLE {CATALOG}.ctas.t2 PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.ctas")


def test_rollback_and_expire_snapshots(spark: Any, floe: FloeServer) -> None:
    """Iceberg's stored procedures commit ref changes and snapshot removals through Floe."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.procs")
    t = f"{CATALOG}.procs.t"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING iceberg")
    for i in range(3):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'v{i}')")
    ids = [s.snapshot_id for s in snapshots(spark, t)]
    assert len(ids) == 3
    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('procs.t', {ids[0]})")
    assert [r.id for r in spark.sql(f"SELECT id FROM {t}").collect()] == [0]
    assert floe.load_table("procs", "t")["metadata"]["current-snapshot-id"] == ids[0]
    spark.sql(f"INSERT INTO {t} VALUES (9, 'v9')")
    head = floe.load_table("procs", "t")["metadata"]["current-snapshot-id"]
    res = spark.sql(f"CALL {CATALOG}.system.expire_snapshots(table => 'procs.t', "
                    f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)").first()
    assert res.deleted_data_files_count == 2, res  # the rolled-back inserts' files
    meta = floe.load_table("procs", "t")["metadata"]
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [head]
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {t}").collect()) == [0, 9]
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.procs")


def test_views(spark: Any, floe: FloeServer) -> None:
    """Iceberg views (Spark SQL extensions) are stored in Floe."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.views")
    t = f"{CATALOG}.views.base"
    spark.sql(f"CREATE TABLE {t} (id INT, category STRING) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    spark.sql(f"CREATE VIEW {CATALOG}.views.per_cat AS SELECT category, count(*) AS n FROM {t} GROUP BY category")
    assert [r.viewName for r in spark.sql(f"SHOW VIEWS IN {CATALOG}.views").collect()] == ["per_cat"]
    got = {r.category: r.n for r in spark.sql(f"SELECT * FROM {CATALOG}.views.per_cat").collect()}
    assert got == {"a": 2, "b": 1}
    view = floe.rest("GET", "/v1/floe/namespaces/views/views/per_cat")
    reps = view["metadata"]["versions"][-1]["representations"]
    assert any(r["dialect"] == "spark" and "GROUP BY" in r["sql"] for r in reps), reps
    spark.sql(f"DROP VIEW {CATALOG}.views.per_cat")
    assert spark.sql(f"SHOW VIEWS IN {CATALOG}.views").collect() == []
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.views")


@pytest.mark.parametrize(
    "name, extra",
    [
        ("wrong_secret", {"credential": "WRONG"}),
        ("unknown_client", {"credential": "no-such-client:whatever"}),
        ("bad_token", {"token": "not-a-valid-token"}),
        ("no_credentials", {}),
    ],
)
def test_bad_credentials_are_refused(spark: Any, floe: FloeServer, name: str, extra: dict[str, str]) -> None:
    if extra.get("credential") == "WRONG":
        extra = {"credential": f"{floe.client_id}:not-the-secret"}
    cat = f"floe_{name}"
    for k, v in catalog_conf(cat, floe, **extra).items():
        spark.conf.set(k, v)
    with pytest.raises(Exception) as exc:
        spark.sql(f"SHOW NAMESPACES IN {cat}").collect()
    text = error_text(exc.value)
    assert "org.apache.iceberg.exceptions.NotAuthorizedException" in text, text
    if "credential" in extra:  # refused at the token endpoint, with the OAuth2 error code
        assert "invalid_client" in text, text
    # The catalog with the right credential still works.
    assert spark.sql(f"SHOW NAMESPACES IN {CATALOG}").collect() is not None


def test_format_version_3(spark: Any, floe: FloeServer) -> None:
    """A v3 table: row lineage (next-row-id) and deletion vectors for row-level deletes."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.v3")
    t = f"{CATALOG}.v3.t"
    spark.sql(f"""CREATE TABLE {t} (id BIGINT, ts TIMESTAMP, category STRING, qty INT, amount DECIMAL(10,2))
                  USING iceberg PARTITIONED BY (days(ts))
                  TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')""")
    spark.sql(f"INSERT INTO {t} VALUES {values(BATCH1)}")
    spark.sql(f"INSERT INTO {t} VALUES {values(BATCH2)}")
    meta = floe.load_table("v3", "t")["metadata"]
    assert meta["format-version"] == 3
    assert meta["next-row-id"] == len(BATCH1) + len(BATCH2)
    spark.sql(f"DELETE FROM {t} WHERE qty >= 8")
    want = sorted(r for r in BATCH1 + BATCH2 if r.qty < 8)
    assert read_events(spark, t) == want
    assert spark_aggregates(spark, t) == aggregates(want)
    dvs = spark.sql(f"SELECT count(*) FROM {t}.delete_files WHERE file_format = 'PUFFIN'").first()[0]
    assert dvs > 0  # deletion vectors, not position delete files
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.v3")
