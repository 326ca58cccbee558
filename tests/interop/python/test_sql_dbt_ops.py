"""dbt-postgres's statement sequences through psycopg, checked with PyIceberg (issue 17, part E).

The statements are those dbt-postgres sends for a table model (first run and
rerun: build m__dbt_tmp, swap the names inside one block, drop the backup),
for an incremental model with a unique_key (delete+insert through a session
temporary table) and for a view; PyIceberg then reads the tables through the
REST catalog. A block whose commit fails renames nothing.
"""

from __future__ import annotations

import psycopg
import pytest
from conftest import WAREHOUSE
from pyiceberg.exceptions import NoSuchTableError


def connect(floe) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname=WAREHOUSE, user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)


def q(ns: str, name: str) -> str:
    return f'"{WAREHOUSE}"."{ns}"."{name}"'


def table_model(conn: psycopg.Connection, ns: str, sql: str, exists: bool) -> None:
    """dbt's table materialization."""
    conn.execute("begin")
    conn.execute(f"create table {q(ns, 'm__dbt_tmp')}\n  as\n  (\n{sql}\n  );")
    if exists:
        conn.execute(f'alter table {q(ns, "m")} rename to "m__dbt_backup"')
    conn.execute(f'alter table {q(ns, "m__dbt_tmp")} rename to "m"')
    conn.execute("commit")
    conn.execute(f"drop table if exists {q(ns, 'm__dbt_backup')} cascade")


def test_table_model_first_run_and_rerun(floe, catalog, unique: str) -> None:
    ns = f"dbt_{unique}"
    with connect(floe) as conn:
        conn.execute(f'create schema if not exists "{WAREHOUSE}"."{ns}"')
        conn.execute(f"create table {ns}.src (id bigint, name text)")
        conn.execute(f"insert into {ns}.src values (1, 'a'), (2, 'b'), (3, 'c')")
        table_model(conn, ns, f"select id, name from {ns}.src", exists=False)
        first = catalog.load_table((ns, "m"))
        assert sorted(r["id"] for r in first.scan().to_arrow().to_pylist()) == [1, 2, 3]
        table_model(conn, ns, f"select id, upper(name) as name from {ns}.src where id > 1", exists=True)
    m = catalog.load_table((ns, "m"))
    assert m.metadata.table_uuid != first.metadata.table_uuid
    assert sorted((r["id"], r["name"]) for r in m.scan().to_arrow().to_pylist()) == [(2, "B"), (3, "C")]
    for gone in ("m__dbt_tmp", "m__dbt_backup"):
        with pytest.raises(NoSuchTableError):
            catalog.load_table((ns, gone))


def test_failed_commit_renames_nothing(floe, catalog, unique: str) -> None:
    ns = f"dbtf_{unique}"
    with connect(floe) as conn, connect(floe) as other:
        conn.execute(f"create schema {ns}")
        conn.execute(f"create table {ns}.m (id bigint)")
        conn.execute(f"create table {ns}.log (id bigint)")
        conn.execute("begin")
        conn.execute(f"insert into {ns}.log values (1)")
        conn.execute(f'alter table {q(ns, "m")} rename to "m__dbt_backup"')
        other.execute(f"insert into {ns}.log values (2)")  # a concurrent commit
        with pytest.raises(psycopg.errors.SerializationFailure):
            conn.execute("commit")
    catalog.load_table((ns, "m"))
    with pytest.raises(NoSuchTableError):
        catalog.load_table((ns, "m__dbt_backup"))


def test_incremental_delete_insert(floe, catalog, unique: str) -> None:
    ns = f"dbti_{unique}"
    with connect(floe) as conn:
        conn.execute(f"create schema {ns}")
        conn.execute(f"create table {ns}.src (id bigint, name text)")
        conn.execute(f"insert into {ns}.src values (1, 'a'), (2, 'b')")
        conn.execute(f"create table {ns}.inc as select id, name from {ns}.src")
        conn.execute(f"insert into {ns}.src values (3, 'c')")
        conn.execute(f"update {ns}.src set name = 'B' where id = 2")
        # dbt-postgres's incremental run with unique_key = 'id'.
        conn.execute("begin")
        cur = conn.execute(f'create temporary table "inc__dbt_tmp101530123456"\n  as\n  (\n'
                           f"select id, name from {ns}.src where id >= 2\n  );")
        assert cur.statusmessage == "SELECT 2"
        conn.execute(f'delete from {q(ns, "inc")}\n    where (id) in (\n        select (id)\n'
                     f'        from "inc__dbt_tmp101530123456"\n    );')
        conn.execute(f'insert into {q(ns, "inc")} ("id", "name")\n    (\n        select "id", "name"\n'
                     f'        from "inc__dbt_tmp101530123456"\n    )')
        conn.execute("commit")
        with connect(floe) as other:
            with pytest.raises(psycopg.errors.UndefinedTable):
                other.execute('select * from "inc__dbt_tmp101530123456"')
    rows = catalog.load_table((ns, "inc")).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"]) for r in rows) == [(1, "a"), (2, "B"), (3, "c")]
    with pytest.raises(NoSuchTableError):
        catalog.load_table((ns, "inc__dbt_tmp101530123456"))


def test_view_model(floe, catalog, unique: str) -> None:
    ns = f"dbtv_{unique}"
    with connect(floe) as conn:
        conn.execute(f"create schema {ns}")
        conn.execute(f"create table {ns}.src (id bigint, name text)")
        conn.execute(f"insert into {ns}.src values (1, 'a'), (2, 'b')")
        conn.execute(f"create view {q(ns, 'stg')} as (\n  select id, upper(name) as name from {ns}.src\n)")
        conn.execute(f"create or replace view {q(ns, 'stg')} as (\n  select id, name from {ns}.src where id > 1\n)")
        assert conn.execute(f"select id, name from {ns}.stg").fetchall() == [(2, "b")]
        # A table model over the view.
        conn.execute(f"create table {ns}.fct as (select * from {ns}.stg)")
    v = catalog.load_view((ns, "stg"))
    md = v.metadata
    cur = next(ver for ver in md.versions if ver.version_id == md.current_version_id)
    rep = cur.representations[0].root
    assert (rep.dialect, rep.sql) == ("duckdb", f"(\n  select id, name from {ns}.src where id > 1\n)")
    assert list(cur.default_namespace) == [ns]
    schema = next(s for s in md.schemas if s.schema_id == cur.schema_id)
    assert [f.name for f in schema.fields] == ["id", "name"]
    assert catalog.load_table((ns, "fct")).scan().to_arrow().to_pylist() == [{"id": 2, "name": "b"}]


def view_model(conn: psycopg.Connection, ns: str, sql: str, exists: bool) -> None:
    """dbt's view materialization."""
    conn.execute("begin")
    conn.execute(f"drop view if exists {q(ns, 'v__dbt_tmp')} cascade")
    conn.execute(f"drop view if exists {q(ns, 'v__dbt_backup')} cascade")
    conn.execute(f"create view {q(ns, 'v__dbt_tmp')}\n  \n  \n  as (\n    {sql}\n  );")
    if exists:
        conn.execute(f'alter table {q(ns, "v")} rename to "v__dbt_backup"')
    conn.execute(f'alter table {q(ns, "v__dbt_tmp")} rename to "v"')
    conn.execute("commit")
    conn.execute(f"drop view if exists {q(ns, 'v__dbt_backup')} cascade")


def test_view_model_first_run_and_rerun(floe, catalog, unique: str) -> None:
    ns = f"dbtw_{unique}"
    with connect(floe) as conn:
        conn.execute(f"create schema {ns}")
        conn.execute(f"create table {ns}.src (id bigint, name text)")
        conn.execute(f"insert into {ns}.src values (1, 'a'), (2, 'b'), (3, 'c')")
        view_model(conn, ns, f"select id from {ns}.src where id > 1", exists=False)
        assert sorted(conn.execute(f"select id from {ns}.v").fetchall()) == [(2,), (3,)]
        view_model(conn, ns, f"select id, name from {ns}.src where id > 2", exists=True)
        assert conn.execute(f"select id, name from {ns}.v").fetchall() == [(3, "c")]
    assert catalog.view_exists((ns, "v"))
    assert not catalog.view_exists((ns, "v__dbt_tmp"))
    assert not catalog.view_exists((ns, "v__dbt_backup"))
