"""Server memory stays bounded as one table's history grows (issue 14, item 5).

Before the fix, every commit's metadata (whose JSON grows with the snapshot
count) was cached and kept the previous version alive, so one-row appends to
one table grew the server quadratically: 1,000 appends took a real `floe
serve` to 3.3 GiB RSS and 2,400 to 18.6 GiB, and none of it was returned.

Here a dedicated `floe serve` (the built binary, default memory settings)
takes FLOE_MEMORY_APPENDS (default 3,000) one-row appends to one table, one
at a time: every 30th through PyIceberg (load_table + append, its files
written through Floe's S3 endpoint with vended credentials, committed through
the REST catalog), the others through the ingest HTTP API
(POST .../ingest?format=csv&mode=append, as `floe ingest` sends them).

Criteria:
* the server's peak RSS over the whole run (VmHWM in /proc/PID/status) is at
  most 512 MiB;
* after the load stops, RSS sampled once a second for 20 s does not grow:
  the mean of the last five samples is at most 1.05 x the mean of the first
  five (plus 4 MiB of slack for allocator noise).

The idle window starts SETTLE_SECONDS (two audit export intervals) after
the load: the load's last few thousand audit records (the final scan alone
reads every data file through the S3 endpoint) are exported to system.audit
by the background export on its next tick, and writing that Parquet file
is work of the load, not growth while idle. Without the wait the export
lands inside the window and shows as a one-off 15-25 MiB step.
"""

from __future__ import annotations

import http.client
import os
import time

import pyarrow as pa
import pytest
from conftest import WAREHOUSE, FloeServer, _finish, _start

APPENDS = int(os.environ.get("FLOE_MEMORY_APPENDS", "3000"))
PYICEBERG_EVERY = 30
PEAK_LIMIT_MIB = 512
IDLE_SECONDS = 20
SETTLE_SECONDS = 2 * 10 + 2  # audit_export_interval is 10 s by default
NS = "memory"
TABLE = "appends"


def proc_status(pid: int, field: str) -> int:
    """A kB field of /proc/PID/status (VmRSS, VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.fixture(scope="module")
def mem_floe(request: pytest.FixtureRequest):
    """A Floe server of its own, so no other test's load shows in its RSS."""
    srv = _start("memory")
    yield srv
    _finish(srv, request)


class Ingester:
    """One keep-alive HTTP connection to the ingest API, with a fresh token every few minutes."""

    def __init__(self, srv: FloeServer) -> None:
        self.srv = srv
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=180)
        self.token, self.at = srv.fetch_token(), time.monotonic()

    def append(self, i: int, mode: str = "append") -> None:
        if time.monotonic() - self.at > 300:
            self.token, self.at = self.srv.fetch_token(), time.monotonic()
        path = f"/api/v1/tables/{WAREHOUSE}/{NS}/{TABLE}/ingest?format=csv&mode={mode}"
        body = f"id,name\n{i},row-{i}\n".encode()
        self.conn.request("POST", path, body=body, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "text/csv"})
        r = self.conn.getresponse()
        data = r.read()
        assert r.status in (200, 201), (i, r.status, data)


def test_appends_keep_rss_bounded_and_flat(mem_floe: FloeServer) -> None:
    pid = mem_floe.proc.pid
    cat = mem_floe.catalog()
    cat.create_namespace(NS)
    ing = Ingester(mem_floe)
    ing.append(0, mode="create")
    schema = cat.load_table(f"{NS}.{TABLE}").schema().as_arrow()
    start = time.monotonic()
    rss_at = {}
    for i in range(1, APPENDS):
        if i % PYICEBERG_EVERY == 0:
            tbl = cat.load_table(f"{NS}.{TABLE}")
            tbl.append(pa.Table.from_pylist([{"id": i, "name": f"row-{i}"}], schema=schema))
        else:
            ing.append(i)
        if i % 500 == 0:
            rss_at[i] = proc_status(pid, "VmRSS")
            print(f"{i} appends in {time.monotonic() - start:.0f}s: RSS {rss_at[i]} MiB, peak {proc_status(pid, 'VmHWM')} MiB")
    load_s = time.monotonic() - start

    tbl = cat.load_table(f"{NS}.{TABLE}")
    # Continual compaction and manifest rewrite run during the load and may
    # add their own "replace" snapshots; every append is still one snapshot.
    ops = [s.summary.operation.value for s in tbl.metadata.snapshots]
    assert ops.count("append") == APPENDS, {o: ops.count(o) for o in set(ops)}
    assert set(ops) <= {"append", "replace"}, {o: ops.count(o) for o in set(ops)}
    assert tbl.scan().to_arrow().num_rows == APPENDS

    time.sleep(SETTLE_SECONDS)
    idle = []
    for _ in range(IDLE_SECONDS):
        time.sleep(1)
        idle.append(proc_status(pid, "VmRSS"))
    peak = proc_status(pid, "VmHWM")
    first, last = sum(idle[:5]) / 5, sum(idle[-5:]) / 5
    print(f"{APPENDS} appends in {load_s:.0f}s; RSS by appends {rss_at}; peak {peak} MiB; idle RSS {idle}")
    assert peak <= PEAK_LIMIT_MIB, f"peak RSS {peak} MiB > {PEAK_LIMIT_MIB} MiB after {APPENDS} appends"
    assert last <= first * 1.05 + 4, f"RSS grew after the load stopped: {idle}"
