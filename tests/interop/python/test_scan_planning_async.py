"""Asynchronous server-side scan planning with PyIceberg 0.12 (issue 21).

The server plans in the background any snapshot of more than five files
(`scan_planning.async_threshold_files`) and pages after three tasks.

PyIceberg 0.12 does not poll a submitted plan: its `plan_scan` raises
`NotImplementedError("Async scan planning not yet supported ...")`, which
the first test pins (so that this file says so when a release adds it).
The second completes what PyIceberg lacks with a shim of a few lines: when
planTableScan answers "submitted", it polls fetchPlanningResult
(`GET .../plan/{plan-id}`) with the catalog's own session until the plan is
no longer submitted, and hands the answer to PyIceberg, which then fetches
the plan tasks, decodes the file scan tasks and reads the rows as it does
for a synchronous plan. The rows equal those of client-side planning.
Floe's own Go client test (restcat.TestAsyncPlan50000Files) does the same
with iceberg-go, which polls by itself.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from conftest import FloeServer, _finish, _start_server, floe_binary
from pyiceberg.catalog.rest import _PLANNING_RESPONSE_ADAPTER, Endpoints, RestCatalog
from pyiceberg.catalog.rest.scan_planning import PlanSubmitted
from pyiceberg.expressions import EqualTo, GreaterThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string())])


class AsyncPlanningFloe(FloeServer):
    """A server that plans snapshots of more than five files in the background."""

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_SCAN_PLANNING_ASYNC_THRESHOLD_FILES": "5", "FLOE_SCAN_PLANNING_PAGE_SIZE": "3",
                "FLOE_MAINTENANCE": "false"}


@pytest.fixture(scope="module")
def srv(request: pytest.FixtureRequest):
    s = _start_server(AsyncPlanningFloe(floe_binary(), "planning-async"))
    yield s
    _finish(s, request)


@pytest.fixture(scope="module")
def events(srv: FloeServer):
    """db.events: six appends of 20 rows, partitioned by region (24 files)."""
    local = srv.catalog("local")
    local.create_namespace("db")
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    tbl = local.create_table(("db", "events"), schema=SCHEMA, partition_spec=spec)
    for a in range(6):
        tbl.append(pa.Table.from_pylist([{"id": i, "region": ["eu", "us", "apac", "latam"][i % 4]}
                                         for i in range(a * 20, a * 20 + 20)], schema=ARROW))
    return ("db", "events")


def server_catalog(srv: FloeServer) -> RestCatalog:
    return srv.catalog("server", **{"scan-planning-mode": "server"})


def rows(tbl, **scan) -> list[dict]:
    return sorted(tbl.scan(**scan).to_arrow().to_pylist(), key=lambda r: r["id"])


def test_pyiceberg_012_does_not_poll(srv: FloeServer, events) -> None:
    tbl = server_catalog(srv).load_table(events)
    # A filter of its own: a plan already made is answered from the plan
    # cache at once ("completed"), and the next test's must be new.
    with pytest.raises(NotImplementedError, match="Async scan planning not yet supported"):
        tbl.scan(row_filter=GreaterThan("id", -1)).to_arrow()


def polling(cat: RestCatalog) -> dict[str, int]:
    """Make cat poll a submitted plan until it is no longer submitted;
    return counters of the plans submitted and the polls made."""
    seen = {"submitted": 0, "polls": 0}
    plan = cat._plan_table_scan

    def plan_and_poll(identifier, request):
        resp = plan(identifier, request)
        if not isinstance(resp, PlanSubmitted):
            return resp
        seen["submitted"] += 1
        url = cat.url(Endpoints.plan_table_scan, prefixed=True, **cat._split_identifier_for_path(identifier))
        deadline = time.monotonic() + 60
        while True:
            seen["polls"] += 1
            r = cat._session.get(f"{url}/{resp.plan_id}")
            r.raise_for_status()
            body = r.json()
            if body["status"] != "submitted":
                # fetchPlanningResult's completed answer, as planTableScan's.
                body.setdefault("plan-id", resp.plan_id)
                return _PLANNING_RESPONSE_ADAPTER.validate_python(body)
            assert time.monotonic() < deadline, "plan still submitted after a minute"
            time.sleep(0.05)

    cat._plan_table_scan = plan_and_poll
    return seen


@pytest.mark.parametrize("row_filter", [None, EqualTo("region", "eu"), GreaterThan("id", 70)], ids=["full", "eq", "gt"])
def test_async_plan_same_rows_as_client_planning(srv: FloeServer, events, row_filter) -> None:
    scan = {} if row_filter is None else {"row_filter": row_filter}
    want = rows(srv.catalog("local").load_table(events), **scan)
    cat = server_catalog(srv)
    seen = polling(cat)
    got = rows(cat.load_table(events), **scan)
    assert got == want and len(want) > 0
    assert seen["submitted"] == 1 and seen["polls"] >= 1
