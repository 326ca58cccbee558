"""floe backup and floe restore with the built binary (issue 23).

A server with two tables is backed up with `floe backup` while PyIceberg
keeps appending to one of them. The server is stopped, the backup restored
with `floe restore` into a new store (a new SQLite file; the data directory,
hence the warehouse and its key file, is reused), and a server started on the
restored store. PyIceberg then reads every table at the backup's consistent
point: the metadata pointer recorded in the backup, its snapshots, its rows.
`floe audit verify` passes on the restored store.

The backup file is read here with Python's gzip and json only, checking its
SHA-256 trailer: the format is documented in docs/operations.md.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
from conftest import FloeServer, _finish, _start_server, floe_binary

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False)])


class _Server(FloeServer):
    """A server whose store and credential can be set; no warehouse checkpoints
    (a checkpoint written after the backup would seal records the restored
    store does not have: see docs/operations.md)."""

    def __init__(self, name: str, store: Path | None = None, like: FloeServer | None = None) -> None:
        super().__init__(floe_binary(), name)
        self.store = store
        if like is not None:
            self.data_dir, self.client_id, self.client_secret = like.data_dir, like.client_id, like.client_secret

    def extra_env(self) -> dict[str, str]:
        env = {"FLOE_AUDIT_CHECKPOINT_INTERVAL": "0", "FLOE_MAINTENANCE": "false"}
        if self.store is not None:
            env["FLOE_STORE"] = str(self.store)
        return env


def _floe(*args: str) -> str:
    out = subprocess.run([str(floe_binary()), *args, "--log-level", "error"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"floe {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


def _read_backup(path: Path) -> tuple[dict, dict[str, list[dict]]]:
    """The header and every table's rows (as dicts) of a backup file, after
    checking its SHA-256 and row counts."""
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    assert lines[-1] == b""
    end = json.loads(lines[-2])["end"]
    assert hashlib.sha256(b"".join(ln + b"\n" for ln in lines[:-2])).hexdigest() == end["sha256"]
    header = json.loads(lines[0])["header"]
    tables: dict[str, list[dict]] = {}
    cols: list[str] = []
    name = ""
    for ln in lines[1:-2]:
        obj = json.loads(ln)
        if "table" in obj:
            name = obj["table"]["name"]
            cols = [c["name"] for c in obj["table"]["columns"]]
            tables[name] = []
        else:
            tables[name].append(dict(zip(cols, obj["row"])))
    assert {t: len(r) for t, r in tables.items()} == end["rows"]
    return header, tables


def test_backup_under_appends_restore_and_serve(request, tmp_path):
    src = _start_server(_Server("backup-src"))
    try:
        cat = src.catalog()
        cat.create_namespace("bk")
        busy = cat.create_table(("bk", "busy"), schema=ROWS)
        quiet = cat.create_table(("bk", "quiet"), schema=ROWS)
        quiet.append(pa.Table.from_pylist([{"id": i} for i in range(10)], schema=ROWS))
        busy.append(pa.Table.from_pylist([{"id": 0}], schema=ROWS))

        stop = threading.Event()
        appended = []
        errors: list[BaseException] = []

        def appender():
            try:
                t = src.catalog("appender").load_table(("bk", "busy"))
                i = 1
                while not stop.is_set():
                    t.append(pa.Table.from_pylist([{"id": i}], schema=ROWS))
                    appended.append(i)
                    i += 1
            except BaseException as e:  # reported below
                errors.append(e)

        th = threading.Thread(target=appender)
        th.start()
        try:
            deadline = time.time() + 60
            while len(appended) < 2 and time.time() < deadline and not errors:
                time.sleep(0.05)
            backup = tmp_path / "floe.backup"
            out = _floe("backup", "--data-dir", str(src.data_dir), "--out", str(backup))
            assert "backup written to" in out
            at_backup = len(appended)
            deadline = time.time() + 60
            while len(appended) < at_backup + 2 and time.time() < deadline and not errors:
                time.sleep(0.05)
        finally:
            stop.set()
            th.join(timeout=60)
        assert not errors, errors
        live_busy = cat.load_table(("bk", "busy"))
    finally:
        src.stop()  # the data directory stays: the restore reuses it
    request.addfinalizer(lambda: _finish(src, request))

    header, rows = _read_backup(backup)
    assert header["format"] == "floe-backup" and header["dialect"] == "sqlite"
    pointers = {f'{r["namespace"]}.{r["name"]}': r["metadata_location"] for r in rows["entities"]}
    assert set(pointers) == {"bk.busy", "bk.quiet"}
    # The live table went on after the backup: the backup has an older pointer.
    assert live_busy.metadata_location != pointers["bk.busy"]

    restored = tmp_path / "restored.db"
    out = _floe("restore", "--data-dir", str(src.data_dir), "--store", str(restored), "--in", str(backup))
    assert "audit log intact" in out and f'head {header["audit_head"]["seq"]} {header["audit_head"]["hash"]}' in out

    dst = _start_server(_Server("backup-dst", store=restored, like=src))
    try:
        cat2 = dst.catalog()
        for ident in (("bk", "busy"), ("bk", "quiet")):
            t = cat2.load_table(ident)
            assert t.metadata_location == pointers[".".join(ident)]
            snap = t.current_snapshot()
            assert snap is not None
            n = t.scan().to_arrow().num_rows
            assert n == int(snap.summary["total-records"])
        busy2 = cat2.load_table(("bk", "busy"))
        ids = sorted(busy2.scan().to_arrow().column("id").to_pylist())
        assert ids == list(range(len(ids))) and len(ids) >= 3
        assert [s.snapshot_id for s in busy2.snapshots()] == \
            [s.snapshot_id for s in live_busy.snapshots()][: len(busy2.snapshots())]
        assert len(busy2.snapshots()) < len(live_busy.snapshots())
        assert cat2.load_table(("bk", "quiet")).scan().to_arrow().num_rows == 10
        out = _floe("audit", "verify", "--data-dir", str(src.data_dir), "--store", str(restored))
        assert "audit log intact" in out
    finally:
        _finish(dst, request)
