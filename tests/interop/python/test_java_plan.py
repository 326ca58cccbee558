"""Server-side scan planning with the Apache Iceberg Java client (issue 21).

iceberg-core 1.11.0's REST catalog with `scan-planning-mode=server` loads
tables as RESTTable, whose scans (RESTTableScan) are planned by Floe's
planTableScan (and fetchScanTasks for further pages); with
`scan-planning-mode=client` the same catalog plans by reading the manifests
itself. tests/interop/java/PlanScan.java reads every case both ways, each
time through the scan's own FileIO (for a server plan: the plan's storage
credentials) with iceberg-data's generic readers, and prints the rows.
Each case must give the same non-empty rows both ways, from a RESTTableScan
that made at least one plan request, while the client-planned read made
none; Floe's own request counter (/metrics) must agree with the number of
plan requests the proxy saw.

The tables are written with PyIceberg (appends, a partition evolution, a
tag), the SQL endpoint (a DELETE on a v3 table: deletion vectors) and the
Java client itself (v2 position and equality delete files, which PyIceberg
0.12 cannot write). The equality-delete table gets an append after its
delete, so that the deleted ids written again must survive (delete files
apply only to older data).

All the Java client's catalog traffic goes through a recording proxy, and
every exchange (config, token, loadTable, plan, tasks, cancel, metrics
reports) is validated against the Iceberg REST OpenAPI spec.

The server pages plans after three file scan tasks, so that the Java client
fetches plan tasks, and runs no maintenance (compaction would rewrite the
files the position deletes point at). The Java side needs Java 17+ and the
class path scripts/resolve-plan-java.sh resolves from Maven Central (once,
into ~/.m2); the two JVM runs take a few seconds each.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from conftest import WAREHOUSE, FloeServer, _finish, _start_server, floe_binary, table_path
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType
from spec_proxy import RecordingProxy, SpecValidator

REPO = Path(__file__).resolve().parents[3]
PAGE = 3
PLAN_ROUTE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "note", StringType(), required=False),
)
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string()),
                   pa.field("note", pa.string())])


def batch(lo: int, hi: int) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "region": ["eu", "us", "apac", "latam"][i % 4], "note": None if i % 7 == 0 else f"n{i}"}
         for i in range(lo, hi)], schema=ARROW)


class JavaPlanFloe(FloeServer):
    def extra_env(self) -> dict[str, str]:
        return {"FLOE_SCAN_PLANNING_PAGE_SIZE": str(PAGE), "FLOE_MAINTENANCE": "false"}


@pytest.fixture(scope="module")
def srv(request: pytest.FixtureRequest):
    s = _start_server(JavaPlanFloe(floe_binary(), "javaplan"))
    yield s
    _finish(s, request)


def classpath() -> str:
    out = subprocess.run(["bash", str(REPO / "scripts" / "resolve-plan-java.sh")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1]).read_text().strip()


def compile_java(cp: str, tmp: Path) -> str:
    """Compile PlanScan.java once into tmp; the class path to run it with."""
    javac = shutil.which("javac")
    assert javac, "javac not found (apt-get install openjdk-17-jdk-headless)"
    out = subprocess.run([javac, "-cp", cp, "-d", str(tmp / "classes"),
                          str(REPO / "tests" / "interop" / "java" / "PlanScan.java")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return f"{tmp / 'classes'}:{cp}"


def run_java(cp: str, spec: dict, tmp: Path, name: str) -> list[dict]:
    """Run PlanScan on spec; its JSON output lines (each with the run's stderr)."""
    java = shutil.which("java")
    assert java, "java not found (apt-get install openjdk-17-jdk-headless)"
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(spec))
    # C1 only and the serial collector: a short run on a small machine.
    out = subprocess.run([java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "PlanScan", str(path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        line["stderr"] = out.stderr
    return lines


def plan_requests(srv: FloeServer) -> float:
    """Floe's count of answered planTableScan requests (its /metrics)."""
    with urllib.request.urlopen(srv.admin_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(s.value for fam in text_string_to_metric_families(text) for s in fam.samples
               if s.name == "floe_http_requests_total" and s.labels.get("route") == PLAN_ROUTE
               and s.labels.get("method") == "POST")


def eq(col: str, value) -> dict:
    return {"type": "eq", "term": col, "value": value}


@pytest.fixture(scope="module")
def run(srv: FloeServer, tmp_path_factory: pytest.TempPathFactory):
    """The tables, the Java runs (setup, then every case) through a recording
    proxy, and what they printed: {"cases": {name: line}, "exchanges": [...],
    "plans": Floe's plan request count over the case run}."""
    tmp = tmp_path_factory.mktemp("javaplan")
    cp = compile_java(classpath(), tmp)
    cat = srv.catalog("local")
    cat.create_namespace("jp")

    # jp.events: partitioned by region; four appends of 50 rows; a tag on the second.
    events = cat.create_table(("jp", "events"), schema=SCHEMA,
                              partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")))
    snaps = []
    for i in range(4):
        events.append(batch(i * 50, i * 50 + 50))
        snaps.append(events.current_snapshot().snapshot_id)
    events.manage_snapshots().create_tag(snaps[1], "v2").commit()

    # jp.evolved: identity(region), then bucket(4, id) without region.
    evolved = cat.create_table(("jp", "evolved"), schema=SCHEMA,
                               partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region")))
    evolved.append(batch(0, 40))
    with evolved.update_spec() as u:
        u.remove_field("region")
        u.add_field("id", BucketTransform(4), "id_bucket")
    cat.load_table(("jp", "evolved")).append(batch(40, 80))

    # jp.posdel and jp.eqdel: v2, unpartitioned, two appends each (deletes come from Java).
    for t in ("posdel", "eqdel"):
        tbl = cat.create_table(("jp", t), schema=SCHEMA, properties={"format-version": "2"})
        tbl.append(batch(0, 60))
        tbl.append(batch(60, 120))
    posdel_before = cat.load_table(("jp", "posdel")).current_snapshot().snapshot_id

    # jp.dv: v3 merge-on-read; the SQL endpoint's DELETE writes deletion vectors.
    cat.create_table(("jp", "dv"), schema=SCHEMA,
                     properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    with psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname=WAREHOUSE, user="admin",
                         password=srv.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        conn.execute("INSERT INTO jp.dv VALUES " + ", ".join(f"({i}, 'eu', 'n{i}')" for i in range(100)))
        assert conn.execute("DELETE FROM jp.dv WHERE id % 10 = 0").rowcount == 10

    with RecordingProxy(srv.uri) as proxy:
        props = {"uri": proxy.url, "warehouse": WAREHOUSE, "rest.auth.type": "oauth2", "credential": srv.credential,
                 "oauth2-server-uri": proxy.url + "/v1/oauth/tokens"}
        setup = run_java(cp, {"catalog": props, "setup": [
            {"op": "position-delete", "table": "jp.posdel", "positions": [0, 1, 2, 10, 59]},
            {"op": "equality-delete", "table": "jp.eqdel", "column": "id", "values": [3, 50, 64, 119, 1000]},
        ]}, tmp, "setup")
        assert [s["setup"] for s in setup] == ["position-delete", "equality-delete"]
        # Written again after the delete: these rows must survive it.
        cat.load_table(("jp", "eqdel")).append(batch(0, 4))

        cases = [
            {"name": "full", "table": "jp.events"},
            {"name": "filter-eq", "table": "jp.events", "filter": eq("region", "eu")},
            {"name": "filter-and-select", "table": "jp.events", "select": ["id", "note"],
             "filter": {"type": "and", "left": {"type": "gt", "term": "id", "value": 120},
                        "right": {"type": "not-null", "term": "note"}}},
            {"name": "filter-or-in", "table": "jp.events",
             "filter": {"type": "or", "left": {"type": "in", "term": "region", "values": ["us", "apac"]},
                        "right": {"type": "lt", "term": "id", "value": 5}}},
            {"name": "filter-none-match", "table": "jp.events", "filter": eq("region", "nowhere")},
            {"name": "evolved", "table": "jp.evolved"},
            {"name": "evolved-filter", "table": "jp.evolved", "filter": {"type": "gt-eq", "term": "id", "value": 30}},
            {"name": "evolved-old-partition", "table": "jp.evolved", "filter": eq("region", "us")},
            {"name": "position-deletes", "table": "jp.posdel"},
            {"name": "position-deletes-filter", "table": "jp.posdel", "filter": {"type": "lt", "term": "id", "value": 30}},
            {"name": "position-deletes-before", "table": "jp.posdel", "snapshot-id": posdel_before},
            {"name": "equality-deletes", "table": "jp.eqdel"},
            {"name": "deletion-vectors", "table": "jp.dv"},
            {"name": "time-travel", "table": "jp.events", "snapshot-id": snaps[0]},
            {"name": "time-travel-filter", "table": "jp.events", "snapshot-id": snaps[2], "filter": eq("region", "latam")},
            {"name": "tag", "table": "jp.events", "ref": "v2"},
            {"name": "incremental", "table": "jp.events", "incremental": {"from": snaps[0], "to": snaps[2]}},
            {"name": "incremental-filter", "table": "jp.events", "incremental": {"from": snaps[1], "to": snaps[3]},
             "filter": eq("region", "apac")},
        ]
        before = plan_requests(srv)
        n = len(proxy.exchanges)
        lines = run_java(cp, {"catalog": props, "cases": cases}, tmp, "cases")
        plans = plan_requests(srv) - before
        exchanges = list(proxy.exchanges)
    return {"cases": {line["name"]: line for line in lines}, "names": [c["name"] for c in cases], "case_specs": cases,
            "exchanges": exchanges, "case_exchanges": exchanges[n:], "plans": plans, "snaps": snaps}


def side(run, name: str, mode: str) -> list:
    """The exchanges of one case's server or client catalog."""
    return [ex for ex in run["case_exchanges"] if ex.header("X-Floe-Plan-Case") == f"{name}/{mode}"]


def is_plan(ex) -> bool:
    return ex.method == "POST" and ex.path.split("?")[0].endswith("/plan")


# Floe sends residual-filter on every file scan task (the task's residual,
# else the scan's filter, else true): Iceberg Java 1.11.0 reads a missing
# one as null (RESTFileScanTaskParser.fromJson), so FileScanTask.residual()
# would throw NullPointerException on a partitioned spec and filter nothing
# on an unpartitioned one. Every server case below covers that.

# The ids each case must read (independently of either planner).
EXPECTED = {
    "full": list(range(200)),
    "filter-eq": list(range(0, 200, 4)),
    "filter-and-select": [i for i in range(121, 200) if i % 7],
    "filter-or-in": sorted({i for i in range(200) if i % 4 in (1, 2)} | set(range(5))),
    "filter-none-match": [],
    "evolved": list(range(80)),
    "evolved-filter": list(range(30, 80)),
    "evolved-old-partition": list(range(1, 80, 4)),
    "position-deletes": [i for i in range(120) if i not in (0, 1, 2, 10, 59)],
    "position-deletes-filter": [i for i in range(30) if i not in (0, 1, 2, 10)],
    "position-deletes-before": list(range(120)),
    "equality-deletes": sorted([i for i in range(120) if i not in (3, 50, 64, 119)] + [0, 1, 2, 3]),
    "deletion-vectors": [i for i in range(100) if i % 10],
    "time-travel": list(range(50)),
    "time-travel-filter": [i for i in range(150) if i % 4 == 3],
    "tag": list(range(100)),
    "incremental": list(range(50, 150)),
    "incremental-filter": [i for i in range(100, 200) if i % 4 == 2],
}
CASES = list(EXPECTED)
SERVER_CASES = [n for n in CASES if not n.startswith("incremental")]


def trace(line: dict, mode: str) -> str:
    """PlanScan's stack trace for one side of a case (it prints each after
    "case NAME, MODE planning:")."""
    text = line["stderr"]
    start = text.find(f"case {line['name']}, {mode} planning:")
    if start < 0:
        return ""
    end = text.find("\ncase ", start + 1)
    return text[start:end if end > 0 else None][:3000]


def ids(rows: list[dict]) -> list[int]:
    return sorted(r["id"] for r in rows)


def test_every_case_ran(run) -> None:
    assert run["names"] == CASES and sorted(run["cases"]) == sorted(CASES)


@pytest.mark.parametrize("name", CASES)
def test_client_planning_reads_the_expected_rows(run, name: str) -> None:
    """The reference: the Java client planning locally reads what the case must."""
    client = run["cases"][name]["client"]
    assert "error" not in client, trace(run["cases"][name], "client")
    assert client["table-class"] == "BaseTable" and client["scan-class"] != "RESTTableScan"
    assert ids(client["rows"]) == EXPECTED[name]
    assert not any(is_plan(ex) for ex in side(run, name, "client"))


@pytest.mark.parametrize("name", SERVER_CASES)
def test_same_rows_as_client_planning(run, name: str) -> None:
    line = run["cases"][name]
    server, client = line["server"], line["client"]
    plans = [ex for ex in side(run, name, "server") if is_plan(ex)]
    assert len(plans) >= 1 and all(ex.status == 200 for ex in plans)
    # With storage-credentials in the plan, Scan.fileIO() (what PlanScan
    # reads with) is a FileIO of those credentials, not the table's.
    assert all(json.loads(ex.resp_body).get("storage-credentials") for ex in plans)
    assert "error" not in server, trace(line, "server")
    assert (server["table-class"], server["scan-class"]) == ("RESTTable", "RESTTableScan")
    assert server["rows"] == client["rows"]
    assert ids(server["rows"]) == EXPECTED[name]
    assert (server["paths"], server["delete-files"]) == (client["paths"], client["delete-files"])
    if name.startswith(("position-deletes", "equality-deletes", "deletion-vectors")) and name != "position-deletes-before":
        assert server["delete-files"] >= 1


@pytest.mark.parametrize("name", ["incremental", "incremental-filter"])
def test_incremental_scans_plan_on_the_client(run, name: str) -> None:
    """Iceberg Java 1.11.0 has no server-planned incremental scan:
    RESTTable does not override newIncrementalAppendScan, and
    RESTTableScan.appendsBetween returns DataTableScan's client-side
    IncrementalDataTableScan, so with scan-planning-mode=server it still
    reads the manifests itself and sends no plan request. (RESTTableScan
    would send start-snapshot-id and end-snapshot-id, if anything made one
    with them.) Floe's incremental plan is compared with it below."""
    server = run["cases"][name]["server"]
    assert (server["table-class"], server["scan-class"]) == ("RESTTable", "IncrementalDataTableScan")
    assert not any(is_plan(ex) for ex in side(run, name, "server"))
    assert ids(server["rows"]) == EXPECTED[name]


def plan_paths(srv: FloeServer, table: str, body: dict) -> list[str]:
    """The data files of Floe's plan for body, across its plan tasks."""
    tok = srv.fetch_token()
    path = table_path(("jp",), table)
    res = srv.request("POST", path + "/plan", body=body, token=tok)
    assert res["status"] == "completed", res
    paths = [t["data-file"]["file-path"] for t in res.get("file-scan-tasks", [])]
    for pt in res.get("plan-tasks", []):
        page = srv.request("POST", path + "/tasks", body={"plan-task": pt}, token=tok)
        paths += [t["data-file"]["file-path"] for t in page.get("file-scan-tasks", [])]
    return sorted(paths)


@pytest.mark.parametrize("name", ["incremental", "incremental-filter"])
def test_incremental_plan_lists_the_files_java_plans(srv: FloeServer, run, name: str) -> None:
    """Floe's plan for start-snapshot-id/end-snapshot-id (what RESTTableScan
    would send) lists exactly the data files of the Java client's
    IncrementalAppendScan."""
    case = next(c for c in run["case_specs"] if c["name"] == name)
    body = {"start-snapshot-id": case["incremental"]["from"], "end-snapshot-id": case["incremental"]["to"],
            "use-snapshot-schema": True}
    if "filter" in case:
        body["filter"] = case["filter"]
    want = run["cases"][name]["client"]["paths"]
    assert want and plan_paths(srv, "events", body) == want


def test_plan_tasks_fetched(run) -> None:
    """The full scan of jp.events (16 files) is more than a page of three:
    the Java client fetched its five plan tasks."""
    tasks = [ex for ex in side(run, "full", "server") if ex.method == "POST" and ex.path.endswith("/tasks")]
    assert len(tasks) == 5 and all(ex.status == 200 for ex in tasks)
    assert len(run["cases"]["full"]["client"]["paths"]) == 16


def test_floe_counted_the_plans(run) -> None:
    """Floe's /metrics agrees with the plan requests the proxy saw."""
    seen = sum(1 for ex in run["case_exchanges"] if is_plan(ex))
    assert seen == len(SERVER_CASES) and run["plans"] == seen


def test_exchanges_conform_to_the_spec(run) -> None:
    """Every exchange of the Java client (setup and cases) conforms."""
    v = SpecValidator()
    errors, ops = [], set()
    for ex in run["exchanges"]:
        errors += v.validate(ex)
        ops.add(v.operation_id(ex))
    assert not errors, "\n".join(errors[:20])
    plans = [ex for ex in run["exchanges"] if is_plan(ex)]
    assert plans and v.requests_checked >= len(plans)  # the Java client's plan requests were checked too
    assert {"getConfig", "getToken", "loadTable", "updateTable", "planTableScan", "fetchScanTasks",
            "reportMetrics"} <= ops, ops


def test_validator_rejects_a_broken_plan(run) -> None:
    """The validator can fail: a recorded plan exchange conforms; the same
    with a task's data file taken out of the response, or a snapshot-id
    that is not a number in the request, does not."""
    v = SpecValidator()
    ex = next(ex for ex in run["case_exchanges"] if is_plan(ex) and b'"file-scan-tasks":[{' in ex.resp_body)
    assert v.validate(ex) == []
    body = json.loads(ex.resp_body)
    del body["file-scan-tasks"][0]["data-file"]
    broken = dataclasses.replace(ex, resp_body=json.dumps(body).encode())
    assert any("data-file" in e for e in v.validate(broken))
    req = json.loads(ex.req_body)
    req["snapshot-id"] = "latest"
    broken = dataclasses.replace(ex, req_body=json.dumps(req).encode())
    assert any("request" in e and "snapshot-id" in e for e in v.validate(broken)), v.validate(broken)
