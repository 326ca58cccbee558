"""The `delta-sharing` Python connector (PyPI) reads Floe's shares.

Until the sharing service is merged, the shares and recipients come from a
JSON file read by tests/interop/dsfixture: a real Floe node (REST catalog, S3
endpoint, Delta Sharing server under /delta-sharing) whose only stand-in is
the sharing.Resolver. The tables are made with PyIceberg through the REST
catalog; the recipient reads them with delta_sharing.load_as_pandas, whose
rows must match PyIceberg's.

The fixture is built from the repository with `go build` (or taken from
$FLOE_DS_FIXTURE). Once the service exists, the same checks run against
`floe serve` by creating the share and recipient with `floe share` /
`floe recipient` instead of writing the JSON file.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import delta_sharing
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

REPO = Path(__file__).resolve().parents[3]
TOKEN = "alice-bearer-token-0123456789"


class Fixture:
    """A running dsfixture with its shares file."""

    def __init__(self, tmp: Path) -> None:
        binary = os.environ.get("FLOE_DS_FIXTURE")
        if not binary:
            binary = str(tmp / "dsfixture")
            subprocess.run(["go", "build", "-o", binary, "./tests/interop/dsfixture"], cwd=REPO, check=True)
        self.shares_path = tmp / "shares.json"
        self.shares = {
            "recipients": {TOKEN: {"id": "r-alice", "name": "alice", "token_id": "tok-alice-1", "revoked": False}},
            "grants": {"alice": ["sales"]},
            "tables": [],
        }
        self.write()
        self.proc = subprocess.Popen([binary, "-dir", str(tmp / "data"), "-shares", str(self.shares_path)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.url, self.s3_url = info["url"], info["s3_url"]
        self.credential = info["credential"]
        self.profile = tmp / "floe.share"
        self.profile.write_text(json.dumps({"shareCredentialsVersion": 1, "endpoint": self.url + "/delta-sharing/",
                                            "bearerToken": TOKEN}))

    def write(self) -> None:
        tmp = self.shares_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.shares))
        tmp.replace(self.shares_path)

    def share(self, name: str, table: str, history: bool = True, partition_filter: str = "") -> str:
        self.shares["tables"].append({"id": "obj-" + name, "share": "sales", "schema": "retail", "name": name,
                                      "namespace": "crm", "table": table, "history": history,
                                      "partition_filter": partition_filter})
        self.write()
        return f"{self.profile}#sales.retail.{name}"

    def catalog(self) -> RestCatalog:
        return RestCatalog("floe", uri=self.url, warehouse="floe", credential=self.credential,
                           **{"oauth2-server-uri": self.url + "/v1/oauth/tokens"})

    def query(self, name: str, body: dict | None = None) -> tuple[int, list[dict]]:
        req = urllib.request.Request(f"{self.url}/delta-sharing/shares/sales/schemas/retail/tables/{name}/query",
                                     data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as res:
                return res.status, [json.loads(line) for line in res.read().splitlines()]
        except urllib.error.HTTPError as e:
            return e.code, [json.loads(e.read())]

    def stop(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def fx():
    with tempfile.TemporaryDirectory(prefix="floe-ds-") as d:
        f = Fixture(Path(d))
        yield f
        f.stop()


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType()),
    NestedField(3, "amount", DoubleType()),
    NestedField(4, "at", TimestamptzType()),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
REGIONS = ["eu", "us", "apac"]


def rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array([REGIONS[i % 3] for i in ids], pa.string()),
        "amount": pa.array([i * 1.5 for i in ids], pa.float64()),
        "at": pa.array([datetime(2026, 3, 1, i % 24, tzinfo=timezone.utc) for i in ids], pa.timestamp("us", tz="UTC")),
    }, schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string()),
                         pa.field("amount", pa.float64()), pa.field("at", pa.timestamp("us", tz="UTC"))]))


@pytest.fixture(scope="module")
def orders(fx):
    cat = fx.catalog()
    cat.create_namespace("crm")
    tbl = cat.create_table("crm.orders", schema=SCHEMA, partition_spec=SPEC)
    tbl.append(rows(0, 30))
    tbl.append(rows(30, 60))
    return tbl


def sorted_frame(df):
    return df.sort_values("id").reset_index(drop=True)


def test_load_as_pandas_matches_pyiceberg(fx, orders):
    url = fx.share("orders", "orders")
    got = sorted_frame(delta_sharing.load_as_pandas(url))
    want = sorted_frame(orders.scan().to_pandas())
    assert list(got.columns) == ["id", "region", "amount", "at"]
    assert len(got) == 60
    assert got["id"].tolist() == want["id"].tolist()
    assert got["region"].tolist() == want["region"].tolist()
    assert got["amount"].tolist() == want["amount"].tolist()
    assert [t.value for t in got["at"]] == [t.value for t in want["at"]]
    tables = delta_sharing.SharingClient(str(fx.profile)).list_all_tables()
    assert [(t.share, t.schema, t.name) for t in tables if t.name == "orders"] == [("sales", "retail", "orders")]


def test_after_schema_change(fx):
    cat = fx.catalog()
    tbl = cat.create_table("crm.evolving", schema=SCHEMA, partition_spec=SPEC)
    tbl.append(rows(0, 9))
    with tbl.update_schema() as u:
        u.add_column("note", StringType())
    tbl = cat.load_table("crm.evolving")
    more = rows(9, 18).append_column("note", pa.array([f"n{i}" for i in range(9, 18)], pa.string()))
    tbl.append(more)
    url = fx.share("evolving", "evolving")
    got = sorted_frame(delta_sharing.load_as_pandas(url))
    want = sorted_frame(tbl.scan().to_pandas())
    assert list(got.columns) == ["id", "region", "amount", "at", "note"]
    assert got["id"].tolist() == want["id"].tolist() == list(range(18))
    assert got["note"].tolist()[:9] == [None] * 9
    assert got["note"].tolist()[9:] == [f"n{i}" for i in range(9, 18)]


def test_time_travel_and_history_off(fx, orders):
    url = fx.share("orders_hist", "orders")
    v1 = delta_sharing.load_as_pandas(url, version=1)
    assert sorted(v1["id"].tolist()) == list(range(30))
    off = fx.share("orders_now", "orders", history=False)
    assert len(delta_sharing.load_as_pandas(off)) == 60
    with pytest.raises(Exception, match="without history"):
        delta_sharing.load_as_pandas(off, version=1)


def test_partition_filter(fx, orders):
    url = fx.share("orders_eu", "orders", partition_filter="region = 'eu'")
    df = delta_sharing.load_as_pandas(url)
    assert set(df["region"]) == {"eu"}
    assert sorted(df["id"].tolist()) == [i for i in range(60) if i % 3 == 0]


def test_json_predicate_hints_skip_files(fx, orders):
    fx.share("orders_hints", "orders")
    hint = json.dumps({"op": "equal", "children": [{"op": "column", "name": "region", "valueType": "string"},
                                                   {"op": "literal", "value": "us", "valueType": "string"}]})
    status, lines = fx.query("orders_hints", {"jsonPredicateHints": hint})
    assert status == 200
    files = [l["file"] for l in lines if "file" in l]
    assert files and all(f["partitionValues"]["region"] == "us" for f in files)


def test_bad_input_is_4xx(fx, orders):
    fx.share("orders_bad", "orders")
    for body, code in [({"version": "x"}, "INVALID_PARAMETER_VALUE"), ({"limitHint": -1}, "INVALID_PARAMETER_VALUE"),
                       ({"startingVersion": 1}, "UNSUPPORTED_OPERATION")]:
        status, lines = fx.query("orders_bad", body)
        assert status == 400 and lines[0]["errorCode"] == code, (body, status, lines)
    status, lines = fx.query("no_such_table")
    assert status == 404 and lines[0]["errorCode"] == "RESOURCE_DOES_NOT_EXIST"
    bad = Path(fx.profile).with_name("bad.share")
    bad.write_text(json.dumps({"shareCredentialsVersion": 1, "endpoint": fx.url + "/delta-sharing/", "bearerToken": "wrong"}))
    with pytest.raises(Exception, match="401"):
        delta_sharing.SharingClient(str(bad)).list_shares()


def test_revocation_stops_urls_already_handed_out(fx, orders):
    fx.share("orders_rev", "orders")
    status, lines = fx.query("orders_rev")
    assert status == 200
    url = next(l["file"]["url"] for l in lines if "file" in l)
    with urllib.request.urlopen(url) as res:
        assert res.status == 200 and res.read(4) == b"PAR1"
    fx.shares["recipients"][TOKEN]["revoked"] = True
    fx.write()
    revoked = time.monotonic()
    status, _ = fx.query("orders_rev")  # the resolver sees the revocation
    assert status == 401
    while True:
        try:
            with urllib.request.urlopen(url) as res:
                res.read()
        except urllib.error.HTTPError as e:
            assert e.code == 403
            break
        assert time.monotonic() - revoked < 1.0, "a URL handed out still works a second after revocation"
        time.sleep(0.02)
    with pytest.raises(Exception):
        delta_sharing.load_as_pandas(f"{fx.profile}#sales.retail.orders_rev")
