"""A soak of mixed load against one real `floe serve` (issue 14, item 5).

For FLOE_SOAK_SECONDS (default 600; developers may use 120) one client loop
runs, round after round: loadTable with vended credentials (raw REST), a
one-row append through the ingest HTTP API (every tenth round through
PyIceberg instead), SQL queries through psycopg on the PostgreSQL-wire
endpoint (an aggregate over the growing table and point queries), and S3
reads with boto3 using the credentials the loadTable vended (a data file
and the table's metadata file). Before the fix a 10-minute soak went from
266 MiB to 1.1 GiB (peak 1.5 GiB).

The server's RSS (VmRSS) and open descriptors (/proc/PID/fd) are sampled
every 5 s. The reference is the sample at minute 2 (at half the run when it
is shorter than 4 minutes). Criteria: every later RSS sample is at most 1.3
times the reference, and every later descriptor count at most the
reference + 50.

Uses the fixtures of tests/interop/python (conftest.py and floe_server.py).
"""

from __future__ import annotations

import http.client
import os
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop" / "python"))

import psycopg  # noqa: E402
import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402
from conftest import WAREHOUSE, FloeServer, _finish, _start, s3_client, table_path  # noqa: E402

SECONDS = float(os.environ.get("FLOE_SOAK_SECONDS", "600"))
REFERENCE_AT = 120.0 if SECONDS >= 240 else SECONDS / 2
SAMPLE_EVERY = 5.0
RSS_FACTOR = 1.3
FD_SLACK = 50
NS = "soak"

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("amount", pa.float64())])


def rss_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_kinds(pid: int) -> dict[str, int]:
    """Open descriptors by kind (socket, pipe, anon_inode, or a file's directory), for the report."""
    kinds: dict[str, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = target.split(":")[0] if ":" in target and not target.startswith("/") else os.path.dirname(target)
        kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:8])


@pytest.fixture(scope="module")
def soak_floe(request: pytest.FixtureRequest):
    srv = _start("soak")
    yield srv
    _finish(srv, request)


class Load:
    """The client side of the soak: one of each client, reused."""

    def __init__(self, srv: FloeServer) -> None:
        self.srv = srv
        self.cat = srv.catalog()
        self.cat.create_namespace(NS)
        events = self.cat.create_table(f"{NS}.events", schema=ROWS)
        events.append(pa.Table.from_pylist([{"id": i, "name": f"n{i}", "amount": i * 0.5} for i in range(5000)], schema=ROWS))
        self.hot = self.cat.create_table(f"{NS}.hot", schema=ROWS)
        self.http = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        self.token, self.token_at = srv.fetch_token(), time.monotonic()
        self.sql = self.connect()
        self.s3 = None
        self.n = 0

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.srv.sql_port, dbname=WAREHOUSE, user="admin",
                               password=self.srv.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)

    def fresh_token(self) -> str:
        if time.monotonic() - self.token_at > 300:
            self.token, self.token_at = self.srv.fetch_token(), time.monotonic()
        return self.token

    def load_table(self) -> dict:
        return self.srv.load_table_raw((NS,), "events", token=self.fresh_token(), delegation="vended-credentials")

    def append(self) -> None:
        self.n += 1
        i = 100_000 + self.n
        if self.n % 10 == 0:
            self.hot = self.cat.load_table(f"{NS}.hot")
            self.hot.append(pa.Table.from_pylist([{"id": i, "name": f"p{i}", "amount": 1.0}], schema=ROWS))
            return
        self.http.request("POST", f"/api/v1/tables/{WAREHOUSE}/{NS}/hot/ingest?format=csv&mode=append",
                          body=f"id,name,amount\n{i},i{i},1.0\n".encode(),
                          headers={"Authorization": f"Bearer {self.fresh_token()}", "Content-Type": "text/csv"})
        r = self.http.getresponse()
        body = r.read()
        assert r.status == 200, (r.status, body)

    def query(self) -> None:
        if self.n % 50 == 0:  # sessions come and go too
            self.sql.close()
            self.sql = self.connect()
        (count,) = self.sql.execute(f"SELECT count(*) FROM {NS}.hot").fetchone()
        assert count == self.n, (count, self.n)
        row = self.sql.execute(f"SELECT name FROM {NS}.events WHERE id = %s", (self.n % 5000,)).fetchone()
        assert row == (f"n{self.n % 5000}",)

    def s3_read(self, loaded: dict) -> None:
        # One boto3 client (and its connection pool) at a time, renewed with
        # fresh vended credentials every 50 rounds; a client per round would
        # leave a keep-alive connection per round open on the server.
        if self.s3 is None or self.n % 50 == 0:
            if self.s3 is not None:
                self.s3.close()
            self.s3 = s3_client(loaded["config"])
        s3 = self.s3
        loc = loaded["metadata-location"]
        bucket, _, key = loc.removeprefix("s3://").partition("/")
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        prefix = urllib.parse.urlparse(loaded["metadata"]["location"]).path.lstrip("/") + "/data/"
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=5).get("Contents", [])
        assert listed, prefix
        assert s3.get_object(Bucket=bucket, Key=listed[0]["Key"])["Body"].read(4) == b"PAR1"

    def round(self) -> None:
        loaded = self.load_table()
        for _ in range(4):
            self.load_table()
        self.append()
        self.query()
        self.s3_read(loaded)


def test_soak_rss_and_descriptors_steady(soak_floe: FloeServer) -> None:
    pid = soak_floe.proc.pid
    load = Load(soak_floe)
    start = time.monotonic()
    next_sample = start
    samples: list[tuple[float, int, int]] = []
    rounds = 0
    while (now := time.monotonic()) - start < SECONDS:
        load.round()
        rounds += 1
        if now >= next_sample:
            samples.append((now - start, rss_mib(pid), fds(pid)))
            next_sample += SAMPLE_EVERY
    load.sql.close()
    samples.append((time.monotonic() - start, rss_mib(pid), fds(pid)))
    print(f"{rounds} rounds, {load.n} appends in {SECONDS:.0f}s")
    for t, rss, fd in samples:
        print(f"  {t:6.0f}s  RSS {rss:5d} MiB  fds {fd}")
    ref = next(s for s in samples if s[0] >= REFERENCE_AT)
    later = [s for s in samples if s[0] > ref[0]]
    assert later, "no samples after the reference"
    worst_rss = max(s[1] for s in later)
    worst_fd = max(s[2] for s in later)
    print(f"descriptors by kind at the end: {fd_kinds(pid)}")
    print(f"reference at {ref[0]:.0f}s: RSS {ref[1]} MiB, {ref[2]} fds; later max RSS {worst_rss} MiB, fds {worst_fd}")
    assert worst_rss <= RSS_FACTOR * ref[1], f"RSS grew from {ref[1]} MiB to {worst_rss} MiB (> {RSS_FACTOR}x)"
    assert worst_fd <= ref[2] + FD_SLACK, f"descriptors grew from {ref[2]} to {worst_fd} (> +{FD_SLACK})"
