"""The `delta-sharing` Python connector (PyPI) reads Floe's shares.

The provider makes the tables with PyIceberg through the REST catalog of the
shared test server and shares them with the built binary's CLI (`floe share
create|add|grant`, `floe recipient create --profile-out`); the recipient
reads them with delta_sharing.load_as_pandas through the profile file the
CLI wrote, and its rows must match PyIceberg's. Revocation is
`floe recipient revoke`: URLs already handed out stop working within a
second.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path

import delta_sharing
import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType
from conftest import floe_binary
from test_sharing_admin import _cli


class Sharing:
    """One share ("sales_<u>") granted to one recipient, on the shared server."""

    def __init__(self, floe, tmp: Path, unique: str) -> None:
        self.floe, self.url = floe, floe.uri
        self.ns, self.share_name, self.recipient = f"ds_{unique}", f"sales_{unique}", f"alice_{unique}"
        self.profile = tmp / "floe.share"
        _cli(floe, "share", "create", self.share_name)
        _cli(floe, "recipient", "create", self.recipient, "--profile-out", str(self.profile))
        _cli(floe, "share", "grant", self.share_name, "TO", self.recipient)
        self.token = json.loads(self.profile.read_text())["bearerToken"]
        self.tables: set[str] = set()
        self.shares: dict[str, str] = {}  # shared name -> its share

    def share(self, name: str, table: str, history: bool = True, partition_filter: str = "") -> str:
        """Shares table as retail.<name>: in the first share, or in a share
        of its own when the first already holds the table (a share holds a
        table once)."""
        share = self.share_name
        if table in self.tables:
            share = f"{name}_{self.share_name}"
            _cli(self.floe, "share", "create", share)
            _cli(self.floe, "share", "grant", share, "TO", self.recipient)
        self.tables.add(table)
        self.shares[name] = share
        args = ["share", "add", share, "table", f"{self.ns}.{table}", "--as", f"retail.{name}"]
        if history:
            args.append("--history")
        if partition_filter:
            args += ["--partition-filter", partition_filter]
        _cli(self.floe, *args)
        return f"{self.profile}#{share}.retail.{name}"

    def catalog(self):
        return self.floe.catalog()

    def query(self, name: str, body: dict | None = None) -> tuple[int, list[dict]]:
        req = urllib.request.Request(
            f"{self.url}/delta-sharing/shares/{self.shares.get(name, self.share_name)}/schemas/retail/tables/{name}/query",
            data=json.dumps(body or {}).encode(), method="POST",
            headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as res:
                return res.status, [json.loads(line) for line in res.read().splitlines()]
        except urllib.error.HTTPError as e:
            return e.code, [json.loads(e.read())]

    def revoke(self) -> None:
        _cli(self.floe, "recipient", "revoke", self.recipient)


@pytest.fixture(scope="module")
def fx(floe, tmp_path_factory):
    return Sharing(floe, tmp_path_factory.mktemp("ds"), uuid.uuid4().hex[:8])


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
    cat.create_namespace(fx.ns)
    tbl = cat.create_table(f"{fx.ns}.orders", schema=SCHEMA, partition_spec=SPEC)
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
    assert [(t.share, t.schema, t.name) for t in tables if t.name == "orders"] == [(fx.share_name, "retail", "orders")]


def test_after_schema_change(fx):
    cat = fx.catalog()
    tbl = cat.create_table(f"{fx.ns}.evolving", schema=SCHEMA, partition_spec=SPEC)
    tbl.append(rows(0, 9))
    with tbl.update_schema() as u:
        u.add_column("note", StringType())
    tbl = cat.load_table(f"{fx.ns}.evolving")
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


def test_what_did_the_recipient_read(fx, orders):
    """One `floe audit query --principal recipient:<name>` answers it: the
    query, the URLs issued (with the credential that signed them) and every
    object read through them, tied together by token and credential id."""
    url = fx.share("orders_audit", "orders")
    assert len(delta_sharing.load_as_pandas(url)) == 60
    want_files = {t.file.file_path for t in orders.scan().plan_files()}
    deadline = time.monotonic() + 10
    while True:
        out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(fx.floe.data_dir),
                              "--principal", f"recipient:{fx.recipient}", "--json", "--limit", "100000"],
                             capture_output=True, text=True, timeout=60, check=True)
        recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        queries = [r for r in recs if r["action"] == "deltasharing.table.query"
                   and r["resource"] == f"delta-sharing:{fx.shares['orders_audit']}.retail.orders_audit"]
        issued = [r for r in recs if r["action"] == "deltasharing.urls.issue" and r["detail"].get("share") == fx.shares["orders_audit"]]
        creds = {r["detail"]["credential_id"] for r in issued}
        reads = {r["resource"] for r in recs if r["action"] == "s3.GetObject" and r["detail"].get("credential_id") in creds}
        if (queries and issued and reads >= want_files) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert queries and issued, [r["action"] for r in recs]
    token_id = queries[-1]["detail"]["token_id"]
    assert all(r["detail"]["token_id"] == token_id and r["detail"]["recipient"] == fx.recipient for r in issued)
    assert reads >= want_files, (sorted(want_files - reads), sorted(reads))
    for r in recs:
        if r["action"] == "s3.GetObject" and r["detail"].get("credential_id") in creds:
            assert r["detail"]["token_id"] == token_id and r["outcome"] == "success"


def test_rotation_keeps_the_old_token_for_its_grace(fx, orders, tmp_path):
    url = fx.share("orders_rot", "orders")
    table = url.split("#", 1)[1]
    first = tmp_path / "first.share"
    first.write_text(fx.profile.read_text())
    _cli(fx.floe, "recipient", "rotate", fx.recipient, "--grace", "1h", "--profile-out", str(fx.profile))
    second = tmp_path / "second.share"
    second.write_text(fx.profile.read_text())
    assert json.loads(first.read_text())["bearerToken"] != json.loads(second.read_text())["bearerToken"]
    # Within the grace both tokens read.
    assert len(delta_sharing.load_as_pandas(f"{first}#{table}")) == 60
    assert len(delta_sharing.load_as_pandas(f"{second}#{table}")) == 60
    # Rotated with no grace, every older token stops at once (the one in
    # its grace too); the newest reads.
    _cli(fx.floe, "recipient", "rotate", fx.recipient, "--grace", "0", "--profile-out", str(fx.profile))
    fx.token = json.loads(fx.profile.read_text())["bearerToken"]
    for old in (first, second):
        with pytest.raises(Exception, match="401"):
            delta_sharing.SharingClient(str(old)).list_shares()
    assert len(delta_sharing.load_as_pandas(url)) == 60


def test_revocation_stops_urls_already_handed_out(fx, orders):
    fx.share("orders_rev", "orders")
    status, lines = fx.query("orders_rev")
    assert status == 200
    url = next(l["file"]["url"] for l in lines if "file" in l)
    with urllib.request.urlopen(url) as res:
        assert res.status == 200 and res.read(4) == b"PAR1"
    fx.revoke()
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
        delta_sharing.load_as_pandas(f"{fx.profile}#{fx.shares['orders_rev']}.retail.orders_rev")
