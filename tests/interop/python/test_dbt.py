"""dbt-postgres builds a dbt project on Floe's SQL endpoint; PyIceberg reads the models (issue 17).

The project (tests/interop/dbt/crm) has sources on the demo's crm tables with
tests, two staging views, a table model and an incremental model
(delete+insert on a unique key), and a singular test. `dbt build` runs twice:
the first run creates everything, the second replaces the views and the
table and loads only the new activities. After each run PyIceberg reads the
models through the REST catalog and they must hold what the sources say.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import dbt_project
import psycopg
import pytest
from conftest import WAREHOUSE

MODELS = {"account_pipeline", "activity_log"}
VIEWS = {"stg_accounts", "stg_opportunities"}


def sql(floe, token: str) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname=WAREHOUSE, user="admin", password=token,
                           sslmode="disable", connect_timeout=10, autocommit=True)


def expected_pipeline(catalog) -> dict[int, tuple]:
    """account_pipeline computed here from the sources, read with PyIceberg."""
    accounts = catalog.load_table(("crm", "accounts")).scan().to_arrow().to_pylist()
    opps = catalog.load_table(("crm", "opportunities")).scan().to_arrow().to_pylist()
    count: dict[int, int] = defaultdict(int)
    won: dict[int, float] = defaultdict(float)
    open_: dict[int, float] = defaultdict(float)
    for o in opps:
        if o["amount"] is None:
            continue
        a, stage = o["account_id"], (o["stage"] or "").lower()
        count[a] += 1
        if stage == "closed won":
            won[a] += o["amount"]
        elif o["stage"] is not None and stage != "closed lost":
            open_[a] += o["amount"]
    return {a["account_id"]: (a["name"], a["region"], count[a["account_id"]], won[a["account_id"]], open_[a["account_id"]])
            for a in accounts}


def check_models(catalog, schema: str) -> None:
    assert {t[-1] for t in catalog.list_tables(schema)} == MODELS  # no __dbt_tmp/__dbt_backup left
    assert {v[-1] for v in catalog.list_views(schema)} == VIEWS

    got = {r["account_id"]: r for r in catalog.load_table((schema, "account_pipeline")).scan().to_arrow().to_pylist()}
    want = expected_pipeline(catalog)
    assert got.keys() == want.keys()
    for a, (name, region, n, won, open_) in want.items():
        r = got[a]
        assert (r["account_name"], r["region"], r["opportunities"]) == (name, region, n), a
        assert r["won_amount"] == pytest.approx(won) and r["open_amount"] == pytest.approx(open_), a

    log = catalog.load_table((schema, "activity_log")).scan().to_arrow()
    src = catalog.load_table(("crm", "activities")).scan(selected_fields=("activity_id",)).to_arrow()
    ids = log.column("activity_id").to_pylist()
    assert len(ids) == len(set(ids))
    assert set(ids) == set(src.column("activity_id").to_pylist())
    assert log.schema.names == ["activity_id", "account_id", "kind", "occurred_at"]

    md = catalog.load_view((schema, "stg_accounts")).metadata
    cur = next(v for v in md.versions if v.version_id == md.current_version_id)
    assert [f.name for f in next(s for s in md.schemas if s.schema_id == cur.schema_id).fields] == [
        "account_id", "account_name", "industry", "country", "region", "annual_revenue"]
    reps = [r.root for r in cur.representations]
    assert [r.dialect for r in reps] == ["duckdb", "trino", "spark"]
    assert '"crm"."accounts"' in reps[0].sql and '"floe"."crm"."accounts"' in reps[1].sql and "`crm`.`accounts`" in reps[2].sql


def test_dbt_build_twice_and_pyiceberg_reads_the_models(floe_demo, tmp_path, unique: str) -> None:
    schema = f"dbt_{unique}"
    project = dbt_project.copy_project(tmp_path)
    token = floe_demo.fetch_token()
    catalog = floe_demo.catalog()

    first = dbt_project.statuses(dbt_project.run(project, floe_demo.sql_port, token, schema))
    assert len(first) == 21, first
    assert {s for s in first.values()} <= {"success", "pass"}, first
    assert sum(k.startswith("model.") for k in first) == 4 and sum(k.startswith("test.") for k in first) == 17
    check_models(catalog, schema)
    with sql(floe_demo, token) as conn:
        assert conn.execute(f"select count(*) from {schema}.stg_accounts").fetchone()[0] == 500
    first_table = catalog.load_table((schema, "account_pipeline")).metadata.table_uuid

    # New activities, later than every loaded one: the incremental model
    # loads only these on the next run.
    later = dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc)
    with sql(floe_demo, token) as conn:
        top = conn.execute("select max(activity_id) from crm.activities").fetchone()[0]
        new_ids = [top + 1, top + 2, top + 3]
        for i, aid in enumerate(new_ids):
            conn.execute("insert into crm.activities (activity_id, account_id, kind, occurred_at, notes) values (%s, 1, 'call', %s, 'dbt')",
                         (aid, later + dt.timedelta(hours=i)))

    second = dbt_project.run(project, floe_demo.sql_port, token, schema)
    st = dbt_project.statuses(second)
    assert {s for s in st.values()} <= {"success", "pass"}, st
    inc = next(r for r in second["results"] if r["unique_id"].endswith(".activity_log"))
    assert inc["adapter_response"].get("rows_affected") == 3, inc["adapter_response"]
    check_models(catalog, schema)
    # The table model was rebuilt (a new table swapped in), the incremental
    # one kept its table and gained the three rows.
    assert catalog.load_table((schema, "account_pipeline")).metadata.table_uuid != first_table
    log = catalog.load_table((schema, "activity_log")).scan(row_filter=f"activity_id >= {new_ids[0]}").to_arrow()
    assert sorted(log.column("activity_id").to_pylist()) == new_ids
