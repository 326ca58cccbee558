"""Spark writes the sources, dbt-postgres builds the models on Floe's SQL endpoint, Spark reads them (issue 17).

Spark creates three crm-shaped source tables through the REST catalog. The
dbt project of tests/interop/dbt/crm (its sources pointed at them) is built
by dbt-postgres through Floe's PostgreSQL-wire endpoint. Spark then reads
the table and incremental models as Iceberg tables, and the staging models
as Iceberg views (through their spark representation), and finds what it
computes itself from the sources.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/interop, for dbt_project

import dbt_project
from conftest import CATALOG, FloeServer

SRC = "dbt_src_spark"
OUT = "dbt_out_spark"


def make_sources(spark: Any) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{SRC}")
    spark.sql(f"CREATE TABLE {CATALOG}.{SRC}.accounts (account_id BIGINT NOT NULL, name STRING NOT NULL, industry STRING,"
              " country STRING, annual_revenue DOUBLE, region STRING, email STRING, phone STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {CATALOG}.{SRC}.opportunities (opportunity_id BIGINT NOT NULL, account_id BIGINT NOT NULL,"
              " stage STRING, close_date DATE, amount DOUBLE) USING iceberg")
    spark.sql(f"CREATE TABLE {CATALOG}.{SRC}.activities (activity_id BIGINT NOT NULL, account_id BIGINT NOT NULL,"
              " kind STRING, occurred_at TIMESTAMP, notes STRING) USING iceberg")
    regions = ["EMEA", "AMER", "APAC"]
    stages = ["Prospecting", "Proposal", "Closed Won", "Closed Lost"]
    accounts = [(i, f"acct-{i}", "tech", "NL", float(i * 1000) if i % 5 else None, regions[i % 3], None, None)
                for i in range(1, 31)]
    opps = [(100 + i, 1 + i % 30, stages[i % 4], dt.date(2026, 1, 1) + dt.timedelta(days=i),
             None if i % 11 == 0 else float(i * 10)) for i in range(120)]
    base = dt.datetime(2026, 1, 1)
    acts = [(1000 + i, 1 + i % 30, "call" if i % 2 else "mail", base + dt.timedelta(hours=i), None) for i in range(200)]
    spark.createDataFrame(accounts, spark.table(f"{CATALOG}.{SRC}.accounts").schema).writeTo(f"{CATALOG}.{SRC}.accounts").append()
    spark.createDataFrame(opps, spark.table(f"{CATALOG}.{SRC}.opportunities").schema).writeTo(f"{CATALOG}.{SRC}.opportunities").append()
    spark.createDataFrame(acts, spark.table(f"{CATALOG}.{SRC}.activities").schema).writeTo(f"{CATALOG}.{SRC}.activities").append()


def test_spark_reads_dbt_models(spark: Any, floe: FloeServer, tmp_path: Path) -> None:
    make_sources(spark)
    project = dbt_project.copy_project(tmp_path)
    os.environ["FLOE_DBT_SOURCE_SCHEMA"] = SRC
    try:
        results = dbt_project.run(project, floe.sql_port, floe.fetch_token(), OUT)
    finally:
        del os.environ["FLOE_DBT_SOURCE_SCHEMA"]
    st = dbt_project.statuses(results)
    assert len(st) == 21 and set(st.values()) <= {"success", "pass"}, st

    got = sorted(tuple(r) for r in spark.sql(
        f"SELECT account_id, account_name, region, opportunities, won_amount, open_amount FROM {CATALOG}.{OUT}.account_pipeline").collect())
    want = sorted(tuple(r) for r in spark.sql(f"""
        SELECT a.account_id, a.name, a.region, count(o.opportunity_id),
               coalesce(sum(CASE WHEN lower(o.stage) = 'closed won' THEN o.amount END), 0),
               coalesce(sum(CASE WHEN lower(o.stage) NOT IN ('closed won', 'closed lost') THEN o.amount END), 0)
        FROM {CATALOG}.{SRC}.accounts a
        LEFT JOIN (SELECT * FROM {CATALOG}.{SRC}.opportunities WHERE amount IS NOT NULL) o ON o.account_id = a.account_id
        GROUP BY a.account_id, a.name, a.region""").collect())
    assert len(got) == 30
    assert got == want

    log = spark.sql(f"SELECT activity_id, account_id, kind, occurred_at FROM {CATALOG}.{OUT}.activity_log")
    src = spark.sql(f"SELECT activity_id, account_id, kind, occurred_at FROM {CATALOG}.{SRC}.activities")
    assert log.count() == 200
    assert log.exceptAll(src).count() == 0 and src.exceptAll(log).count() == 0

    views = {r.viewName for r in spark.sql(f"SHOW VIEWS IN {CATALOG}.{OUT}").collect()}
    assert views == {"stg_accounts", "stg_opportunities"}
    # The view models carry a spark representation: Spark expands them.
    got = sorted(tuple(r) for r in spark.sql(
        f"SELECT account_id, account_name, region, annual_revenue FROM {CATALOG}.{OUT}.stg_accounts").collect())
    want = sorted(tuple(r) for r in spark.sql(
        f"SELECT account_id, name, region, coalesce(annual_revenue, 0) FROM {CATALOG}.{SRC}.accounts").collect())
    assert len(got) == 30 and got == want
    got = sorted(tuple(r) for r in spark.sql(f"SELECT opportunity_id, stage, amount FROM {CATALOG}.{OUT}.stg_opportunities").collect())
    want = sorted(tuple(r) for r in spark.sql(
        f"SELECT opportunity_id, lower(stage), amount FROM {CATALOG}.{SRC}.opportunities WHERE amount IS NOT NULL").collect())
    assert len(got) == 120 - 11 and got == want
    tables = {r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{OUT}").collect()}
    assert {"account_pipeline", "activity_log"} <= tables and not any("__dbt" in t for t in tables)
