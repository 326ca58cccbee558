"""Policy-filtered scan plans (issue 21): a principal whose SELECT carries a
row filter Floe can decide per file gets a plan of exactly the files whose
rows all pass, and a credential for exactly those files.

db.sales is partitioned by identity(region); `eu-reader` holds SELECT with
the row filter `region = 'eu'`. PyIceberg 0.12 in `scan-planning-mode:
server` plans through Floe; it reads files with the FileIO of loadTable's
answer (for a filtered principal, a notice credential that reads nothing)
and does not use a plan's `storage-credentials` (its plan_scan drops them),
so the test gives the table a FileIO built from the plan's credential, as a
client honouring the spec's plan credentials would. The scan then returns
exactly the EU rows, with no read of a manifest or metadata file. boto3
with that credential reads a planned file, and gets 403 AccessDenied on a
data file of another region, on the table's metadata JSON, on a manifest
list and on a file of another table; once the grant is revoked, the
credential is refused like every vended credential.

The Iceberg Java client 1.11.0 does read with a plan's credentials
(Scan.fileIO()): as a principal whose filter `id >= 100` the files'
statistics decide (an unpartitioned table, so that Java's handling of an
absent residual-filter, see test_java_plan.py, does not come in), its
server-planned scan reads exactly the admitted rows with no FileIO swap.
"""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from conftest import WAREHOUSE, FloeServer, RestError, _finish, _start_server, floe_binary, s3_client, table_path
from pyiceberg.catalog.rest.scan_planning import PlanCompleted, PlanTableScanRequest
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string())])
REGIONS = ["eu", "us", "apac"]


class PolicyFloe(FloeServer):
    def extra_env(self) -> dict[str, str]:
        # Small pages, so that the EU files span plan tasks; no compaction.
        return {"FLOE_SCAN_PLANNING_PAGE_SIZE": "2", "FLOE_MAINTENANCE": "false"}


@pytest.fixture(scope="module")
def srv(request: pytest.FixtureRequest):
    s = _start_server(PolicyFloe(floe_binary(), "plan-policy"))
    yield s
    _finish(s, request)


def _admin(srv, method, path, body=None):
    return srv.request(method, "/api/v1" + path, body=body, token=srv.fetch_token())


def _principal(srv, name):
    out = _admin(srv, "POST", "/principals", {"name": name})
    return f"{out['client_id']}:{out['client_secret']}"


def _grant(srv, name, table, **extra):
    body = {"grantee": {"kind": "principal", "name": name}, "privilege": "SELECT",
            "on": {"kind": "table", "warehouse": WAREHOUSE, "namespace": ["db"], "name": table}}
    body.update(extra)
    return _admin(srv, "POST", "/grants", body)


@pytest.fixture(scope="module")
def sales(srv: FloeServer):
    """db.sales: four appends of 30 rows, one file per region each (12 files);
    db.other: one file."""
    admin = srv.catalog("admin")
    admin.create_namespace("db")
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    tbl = admin.create_table(("db", "sales"), schema=SCHEMA, partition_spec=spec)
    for a in range(4):
        tbl.append(pa.Table.from_pylist([{"id": a * 30 + i, "region": REGIONS[i % 3]} for i in range(30)], schema=ARROW))
    other = admin.create_table(("db", "other"), schema=SCHEMA)
    other.append(pa.Table.from_pylist([{"id": 1, "region": "eu"}], schema=ARROW))
    return admin.load_table(("db", "sales")), admin.load_table(("db", "other"))


def _key(path: str) -> tuple[str, str]:
    bucket, _, key = path.removeprefix("s3://").partition("/")
    return bucket, key


def _status(s3, bucket: str, key: str) -> tuple[int, str]:
    try:
        s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return 200, ""
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code", "")


def test_filtered_principal_reads_exactly_eu(srv: FloeServer, sales) -> None:
    tbl_admin, other = sales
    cred = _principal(srv, "eu-reader")
    grant = _grant(srv, "eu-reader", "sales", filter={"row_filter": "region = 'eu'"})
    cat = srv.catalog("eu", credential=cred, **{"scan-planning-mode": "server"})
    assert cat.supports_server_side_planning()
    tbl = cat.load_table(("db", "sales"))

    # Floe's plan: only EU files, over several pages, with one credential.
    resp = cat._plan_table_scan(("db", "sales"), PlanTableScanRequest())
    assert isinstance(resp, PlanCompleted) and resp.plan_tasks
    tasks = cat.plan_scan(("db", "sales"), PlanTableScanRequest())
    assert len(tasks) == 4 and {t.file.partition[0] for t in tasks} == {"eu"}
    assert len(resp.storage_credentials) == 1
    plan_cfg = cat._resolve_storage_credentials(resp.storage_credentials, tbl.metadata_location)
    assert plan_cfg["s3.access-key-id"].startswith("FLOE")

    # PyIceberg, planning on the server and reading with the plan's
    # credential, reads exactly the EU rows.
    io = load_file_io({**tbl.io.properties, **plan_cfg}, tbl.metadata_location)
    planned = Table(tbl._identifier, tbl.metadata, tbl.metadata_location, io, cat)
    got = sorted(planned.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    want = sorted((r for r in tbl_admin.scan().to_arrow().to_pylist() if r["region"] == "eu"), key=lambda r: r["id"])
    assert got == want and len(want) == 40

    # boto3 with the plan's credential: the planned files and nothing else.
    s3 = s3_client(plan_cfg)
    eu_file = tasks[0].file.file_path
    us_file = next(t.file.file_path for t in tbl_admin.scan().plan_files() if t.file.partition[0] == "us")
    assert _status(s3, *_key(eu_file)) == (200, "")
    for name, path in [("another region's data file", us_file), ("the metadata JSON", tbl_admin.metadata_location),
                       ("the manifest list", tbl_admin.current_snapshot().manifest_list),
                       ("a file of another table", next(iter(other.scan().plan_files())).file.file_path)]:
        assert _status(s3, *_key(path)) == (403, "AccessDenied"), name
    with pytest.raises(ClientError, match="AccessDenied"):
        s3.list_objects_v2(Bucket=_key(eu_file)[0], Prefix=_key(eu_file)[1].rsplit("/", 1)[0] + "/")

    # Revoking the grant ends the credential, as for every vended one.
    _admin(srv, "DELETE", f"/grants/{grant['id']}")
    deadline = time.monotonic() + 3
    while _status(s3, *_key(eu_file))[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _status(s3, *_key(eu_file)) == (403, "AccessDenied")


def test_undecidable_filter_refused(srv: FloeServer, sales) -> None:
    """A filter on a non-partition column without exact statistics per file
    is refused, pointing to the SQL endpoint; the raw answer is the REST
    ErrorModel."""
    cred = _principal(srv, "odd-reader")
    _grant(srv, "odd-reader", "sales", filter={"row_filter": "id % 2 = 0"})
    cat = srv.catalog("odd", credential=cred, **{"scan-planning-mode": "server"})
    tbl = cat.load_table(("db", "sales"))
    with pytest.raises(ForbiddenError, match="only through a data filter.*SQL endpoint at 127.0.0.1"):
        tbl.scan().to_arrow()
    cid, secret = cred.split(":")
    with pytest.raises(RestError) as e:
        srv.request("POST", table_path(("db",), "sales") + "/plan", body={}, token=srv.fetch_token(cid, secret))
    err = json.loads(e.value.body)["error"]
    assert e.value.status == 403 and err["type"] == "ForbiddenException" and err["code"] == 403
    assert "the row filter cannot be decided per file" in err["message"], err
    assert "SQL endpoint at 127.0.0.1" in err["message"]


def test_java_client_reads_exactly_the_admitted_rows(srv: FloeServer, tmp_path) -> None:
    """The Iceberg Java client 1.11.0 (scan-planning-mode=server) reads with
    the plan's storage credentials (Scan.fileIO()), so as a principal whose
    row filter `id >= 100` the statistics decide on every file of an
    unpartitioned table, it reads exactly ids 100..199 from the two files
    the plan lists. Planning on the client instead fails: the principal's
    loadTable credential reads no manifest."""
    from test_java_plan import classpath, compile_java, run_java

    admin = srv.catalog("admin")
    tbl = admin.create_table(("db", "stats"), schema=SCHEMA)
    for a in range(4):  # one file per append: ids [50a, 50a+49]
        tbl.append(pa.Table.from_pylist([{"id": a * 50 + i, "region": REGIONS[i % 3]} for i in range(50)], schema=ARROW))
    cred = _principal(srv, "high-ids")
    _grant(srv, "high-ids", "stats", filter={"row_filter": "id >= 100"})
    cp = compile_java(classpath(), tmp_path)
    props = {"uri": srv.uri, "warehouse": WAREHOUSE, "rest.auth.type": "oauth2", "credential": cred,
             "oauth2-server-uri": srv.token_url}
    [line] = run_java(cp, {"catalog": props, "cases": [{"name": "policy", "table": "db.stats"}]}, tmp_path, "policy")
    server, client = line["server"], line["client"]
    assert "error" not in server, line["stderr"][-3000:]
    assert (server["table-class"], server["scan-class"]) == ("RESTTable", "RESTTableScan")
    assert sorted(r["id"] for r in server["rows"]) == list(range(100, 200))
    assert len(server["paths"]) == 2
    assert "error" in client, client
