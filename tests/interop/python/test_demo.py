"""`floe serve --demo`: the CRM dataset as PyIceberg sees it."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, LessThan

from conftest import FloeServer

EXPECTED_ROWS = {"accounts": 500, "opportunities": 2000, "activities": 10000}
KEYS = {"accounts": "account_id", "opportunities": "opportunity_id", "activities": "activity_id"}


@pytest.fixture(scope="module")
def demo(floe_demo: FloeServer) -> RestCatalog:
    return floe_demo.catalog()


@pytest.fixture(scope="module")
def full(demo: RestCatalog) -> dict[str, pa.Table]:
    return {name: demo.load_table(("crm", name)).scan().to_arrow() for name in EXPECTED_ROWS}


def test_demo_tables(demo: RestCatalog, full: dict[str, pa.Table]) -> None:
    assert ("crm",) in demo.list_namespaces()
    assert sorted(demo.list_tables("crm")) == [("crm", n) for n in sorted(EXPECTED_ROWS)]
    for name, n in EXPECTED_ROWS.items():
        t = full[name]
        assert t.num_rows == n, name
        key = KEYS[name]
        ids = t[key]
        assert ids.null_count == 0
        assert pc.count_distinct(ids).as_py() == n, f"{name}.{key} not unique"
        assert (pc.min(ids).as_py(), pc.max(ids).as_py()) == (1, n)
        tbl = demo.load_table(("crm", name))
        summary = tbl.current_snapshot().summary
        assert int(summary["total-records"]) == n, summary

    acc_ids = set(full["accounts"]["account_id"].to_pylist())
    for child in ("opportunities", "activities"):
        assert set(full[child]["account_id"].to_pylist()) <= acc_ids, f"{child} refers to unknown accounts"

    spec = {n: [(f.name, str(f.transform)) for f in demo.load_table(("crm", n)).spec().fields] for n in EXPECTED_ROWS}
    assert spec == {"accounts": [], "opportunities": [("close_month", "month")], "activities": [("occurred_day", "day")]}


def ids(t: pa.Table, col: str) -> list[int]:
    return sorted(t[col].to_pylist())


def test_filtered_scans(demo: RestCatalog, full: dict[str, pa.Table]) -> None:
    # accounts: a string equality and a numeric bound
    acc = full["accounts"]
    want = acc.filter(pc.and_(pc.equal(acc["industry"], "Finance"), pc.greater_equal(acc["annual_revenue"], 1_000_000.0)))
    got = demo.load_table(("crm", "accounts")).scan(
        row_filter=And(EqualTo("industry", "Finance"), GreaterThanOrEqual("annual_revenue", 1_000_000.0))
    ).to_arrow()
    assert 0 < want.num_rows < acc.num_rows
    assert ids(got, "account_id") == ids(want, "account_id")

    # opportunities: on the month-partitioned date column (prunes partitions) plus a set
    opp = full["opportunities"]
    lo, hi = date(2025, 4, 1), date(2025, 7, 1)
    stages = ["Closed Won", "Negotiation"]
    want = opp.filter(
        pc.and_(
            pc.and_(pc.greater_equal(opp["close_date"], pa.scalar(lo)), pc.less(opp["close_date"], pa.scalar(hi))),
            pc.is_in(opp["stage"], value_set=pa.array(stages)),
        )
    )
    got = demo.load_table(("crm", "opportunities")).scan(
        row_filter=And(And(GreaterThanOrEqual("close_date", lo.isoformat()), LessThan("close_date", hi.isoformat())), In("stage", stages)),
        selected_fields=("opportunity_id", "stage", "close_date"),
    ).to_arrow()
    assert 0 < want.num_rows < opp.num_rows
    assert ids(got, "opportunity_id") == ids(want, "opportunity_id")
    assert got.column_names == ["opportunity_id", "stage", "close_date"]

    # activities: a string filter expression on the day-partitioned timestamp
    act = full["activities"]
    since = datetime(2025, 3, 1, tzinfo=timezone.utc)
    want = act.filter(pc.and_(pc.equal(act["kind"], "call"), pc.greater_equal(act["occurred_at"], pa.scalar(since, act["occurred_at"].type))))
    tbl = demo.load_table(("crm", "activities"))
    got = tbl.scan(row_filter="kind = 'call' and occurred_at >= '2025-03-01T00:00:00+00:00'").to_arrow()
    assert 0 < want.num_rows < act.num_rows
    assert ids(got, "activity_id") == ids(want, "activity_id")
    # the filter prunes whole day partitions: fewer files planned than in a full scan
    assert len(list(tbl.scan(row_filter="occurred_at >= '2025-03-01T00:00:00+00:00'").plan_files())) < len(list(tbl.scan().plan_files()))
