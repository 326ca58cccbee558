"""Audit retention (issue 14): the store prunes, the chain still verifies,
and system.audit keeps serving PyIceberg.

A dedicated server keeps audit records for 4 seconds
(FLOE_AUDIT_RETENTION=4s), prunes every 250 ms and exports every 500 ms.
After a few seconds of PyIceberg activity, `floe audit verify` reports a
pruned, intact log that starts at a signed checkpoint, and PyIceberg still
reads system.audit, which keeps the exported rows of pruned records (the
export is the long-term archive): seq runs from 1 without a gap.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time

import pyarrow as pa
import pytest

import floe_server
from conftest import FloeServer, _finish, floe_binary

TIMEOUT = 60.0


class RetentionFloe(FloeServer):
    """A server with a retention of seconds."""

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_AUDIT_RETENTION": "4s", "FLOE_AUDIT_PRUNE_INTERVAL": "250ms",
                "FLOE_AUDIT_EXPORT_INTERVAL": "500ms"}


@pytest.fixture(scope="module")
def retention_floe(request: pytest.FixtureRequest):
    binary = floe_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    srv = RetentionFloe(binary, "audit-retention")
    floe_server.servers.append(srv)
    try:
        srv.start()
    except Exception:
        srv.stop()
        raise
    yield srv
    _finish(srv, request)


def verify(srv: FloeServer) -> subprocess.CompletedProcess:
    return subprocess.run([str(srv.binary), "audit", "verify", "--data-dir", str(srv.data_dir), "--log-level", "error"],
                          capture_output=True, text=True, timeout=60)


def test_pruned_log_verifies_and_system_audit_reads(retention_floe: FloeServer) -> None:
    srv = retention_floe
    cat = srv.catalog()
    ns = (f"ret_{secrets.token_hex(4)}",)
    cat.create_namespace(ns)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    cat.create_table(ns + ("t",), schema=schema).append(pa.Table.from_pylist([{"id": 1}], schema=schema))

    deadline = time.monotonic() + TIMEOUT
    out = ""
    while time.monotonic() < deadline:
        for _ in range(20):
            cat.load_table(ns + ("t",))
        res = verify(srv)
        assert res.returncode == 0, f"verify failed: {res.stdout} {res.stderr}"
        out = res.stdout
        m = re.search(r"pruned: (\d+) records", out)
        if m and int(m.group(1)) > 40:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"nothing was pruned within {TIMEOUT:.0f}s: {out}")
    assert "audit log intact" in out and "signature valid" in out, out
    pruned = int(re.search(r"pruned: (\d+) records", out).group(1))

    # system.audit still reads with PyIceberg, pruned records included.
    admin = srv.catalog()
    deadline = time.monotonic() + TIMEOUT
    while True:
        rows = admin.load_table("system.audit").scan(selected_fields=("seq", "action", "prev_hash", "hash")).to_arrow()
        seqs = sorted(rows.column("seq").to_pylist())
        if seqs and seqs[-1] > pruned:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"system.audit did not catch up past the cut at {pruned}: {len(seqs)} rows")
        time.sleep(0.5)
    assert seqs == list(range(1, len(seqs) + 1)), f"seq is not 1..{len(seqs)}"
    assert "catalog.loadTable" in set(rows.column("action").to_pylist())
