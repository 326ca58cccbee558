"""Purge that frees every file (issue 16, part C), with PyIceberg and a real
`floe serve` process.

A table whose location the client chose (`create_table(location=...)`) used
to lose only its metadata JSON files on `purge_table`: data files, manifests
and manifest lists stayed forever. Now every file under the table's
location goes, and nothing outside it: a neighbour table in the same parent
directory and a stray file next to the table stay. A server killed with
SIGKILL in the middle of a purge finishes it after a restart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FloeServer, _finish, _servers
from floe_server import floe_binary
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

WAIT = 30.0  # seconds a purge may take in the background


def files_under(path: Path) -> list[Path]:
    """The regular files under path; directories that vanish during the walk
    (a purge running) are skipped."""
    out: list[Path] = []
    for root, _, names in os.walk(path):
        out += [Path(root) / n for n in names if (Path(root) / n).is_file()]
    return sorted(out)


def wait_empty(path: Path, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while True:
        left = files_under(path)
        if not left:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{len(left)} files left under {path} after the purge, e.g. {left[:3]}")
        time.sleep(0.1)


SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "who", StringType()))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="who"))


def rows(start: int, n: int, groups: int = 5) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "who": pa.array([f"g{i % groups}" for i in ids], pa.string())},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("who", pa.string())]))


def make_table(cat: RestCatalog, ident: tuple[str, ...], location: str | None, appends: int = 3, groups: int = 5):
    tbl = cat.create_table(ident, SCHEMA, partition_spec=SPEC, location=location) if location else \
        cat.create_table(ident, SCHEMA, partition_spec=SPEC)
    n = max(100, groups)  # at least one row per partition
    for i in range(appends):
        tbl.append(rows(i * n, n, groups))
    tbl.delete(LessThan("id", 10))  # rewritten or delete files too
    return cat.load_table(ident)


@pytest.mark.parametrize("chosen", [True, False], ids=["client-chosen", "floe-assigned"])
def test_purge_table_frees_every_file(floe: FloeServer, catalog: RestCatalog, unique: str, chosen: bool) -> None:
    ns = (f"purge_{unique}",)
    catalog.create_namespace(ns)
    parent = f"s3://floe/purge_{unique}/custom"
    tbl = make_table(catalog, ns + ("events",), f"{parent}/events" if chosen else None)
    loc = tbl.metadata.location
    if chosen:
        assert loc == f"{parent}/events"
    else:
        parent = loc.rsplit("/", 1)[0]
    neighbour = make_table(catalog, ns + ("neighbour",), f"{parent}/neighbour", appends=1)
    table_dir = floe.local_path(loc)
    before = files_under(table_dir)
    assert any("/data/" in str(p) for p in before) and any(p.name.startswith("snap-") for p in before), before
    stray = floe.local_path(f"{parent}/stray.txt")
    stray.write_bytes(b"keep me")
    sibling = floe.local_path(f"{loc}-sibling/file.parquet")
    sibling.parent.mkdir(parents=True, exist_ok=True)
    sibling.write_bytes(b"keep me too")
    keep = files_under(floe.local_path(neighbour.metadata.location))

    catalog.purge_table(ns + ("events",))

    wait_empty(table_dir)
    assert files_under(floe.local_path(neighbour.metadata.location)) == keep
    assert stray.read_bytes() == b"keep me"
    assert sibling.read_bytes() == b"keep me too"
    assert catalog.load_table(ns + ("neighbour",)).scan().to_arrow().num_rows == 90
    # The location is free again once the purge is done: a new table there works.
    again = make_table(catalog, ns + ("again",), loc, appends=1)
    assert again.scan().to_arrow().num_rows == 90


class PurgeServer(FloeServer):
    """A server whose purges all run in the background, retried quickly, with
    a short lease so that a restarted node resumes a killed node's job soon."""

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_PURGE_INLINE_FILES": "0", "FLOE_PURGE_INTERVAL": "100ms", "FLOE_PURGE_LEASE_TTL": "2s",
                "FLOE_PURGE_BATCH": "1"}


def pending_purges(srv: FloeServer) -> list[dict]:
    out = subprocess.run([str(srv.binary), "table", "purges", "--json", "--data-dir", str(srv.data_dir)],
                         capture_output=True, text=True, timeout=60, cwd=srv.dir)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["purges"]


def test_purge_survives_kill_9(request: pytest.FixtureRequest, unique: str) -> None:
    """SIGKILL a server as soon as its background purge of a 400-data-file
    table has deleted some files, restart it on the same data directory, and
    every file of the table goes (the neighbour's stay)."""
    srv = PurgeServer(floe_binary(), "purge-kill", demo=False)
    _servers.append(srv)
    try:
        srv.start()
        cat = srv.catalog()
        ns = (f"kill_{unique}",)
        cat.create_namespace(ns)
        loc = f"s3://floe/kill_{unique}/custom/big"
        tbl = make_table(cat, ns + ("big",), loc, appends=2, groups=200)
        neighbour = make_table(cat, ns + ("neighbour",), f"s3://floe/kill_{unique}/custom/neighbour", appends=1)
        keep = files_under(srv.local_path(neighbour.metadata.location))
        table_dir = srv.local_path(tbl.metadata.location)
        total = len(files_under(table_dir))
        assert total >= 400, total

        cat.purge_table(ns + ("big",))
        deadline = time.monotonic() + WAIT
        while len(files_under(table_dir)) == total:
            if time.monotonic() > deadline:
                pytest.fail("the purge did not start\n" + srv.stderr_tail(30))
            time.sleep(0.005)
        assert srv.proc is not None
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(timeout=15)
        srv.proc = None
        left = len(files_under(table_dir))
        assert 0 < left < total, f"{left} of {total} files left at the kill: not in the middle of the purge"

        jobs = pending_purges(srv)
        assert [j["location"] for j in jobs] == [loc], jobs

        srv.start()  # the killed run's lease expires (2s), the restarted node resumes the job
        cat = srv.catalog()  # a new port
        wait_empty(table_dir)
        deadline = time.monotonic() + WAIT
        while pending_purges_api_free(srv, cat, ns, loc) is False:
            if time.monotonic() > deadline:
                pytest.fail("the purge job is still pending")
            time.sleep(0.2)
        assert files_under(srv.local_path(neighbour.metadata.location)) == keep
        assert cat.load_table(ns + ("neighbour",)).scan().to_arrow().num_rows == 90
    finally:
        _finish(srv, request)


def pending_purges_api_free(srv: FloeServer, cat: RestCatalog, ns: tuple[str, ...], loc: str) -> bool:
    """Whether the location is free again (the purge job is done): a create there succeeds."""
    try:
        cat.create_table(ns + ("again",), SCHEMA, location=loc)
        return True
    except Exception as e:  # noqa: BLE001  (refused while the purge is pending)
        assert "being deleted" in str(e), e
        return False
