"""Issue 17 part C with the built binary: the first start and the CLI a newcomer
uses on day one.

- A first `floe serve` whose port is taken fails without leaving an admin
  behind; the second start on a free port prints an admin credential that
  works at the token endpoint and with PyIceberg.
- `floe namespace create`, `floe ingest --create-namespace` (the example of
  `floe ingest --help`) and `floe table list` against that fresh server.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import WAREHOUSE, floe_binary
from floe_server import SCRUBBED_ENV, free_port
from pyiceberg.catalog.rest import RestCatalog


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV and k != "FLOE_BOOTSTRAP_CREDENTIAL"}
    for k in ("FLOE_URL", "FLOE_TOKEN", "FLOE_CREDENTIAL", "FLOE_SQL_LISTEN"):
        env.pop(k, None)
    return env


class Serve:
    """A `floe serve` on data_dir with the given listen addresses."""

    def __init__(self, data_dir: Path, listen: str, s3: str, sql: str) -> None:
        self.out = data_dir.parent / f"out-{listen.replace(':', '_')}-{time.monotonic_ns()}.log"
        self.err = self.out.with_suffix(".err")
        args = [str(floe_binary()), "serve", "--data-dir", str(data_dir), "--listen", listen,
                "--s3-listen", s3, "--sql-listen", sql, "--admin-listen", "off", "--maintenance=false"]
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(args, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=_env(), cwd=data_dir.parent)

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def wait(self, timeout: float = 60) -> int | None:
        """The exit code if it exits, None once it runs ("Press Ctrl-C")."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                return rc
            if "Press Ctrl-C" in self.stdout():
                return None
            time.sleep(0.05)
        raise AssertionError(f"floe serve neither ran nor exited\n{self.stdout()}\n{self.stderr()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


@pytest.fixture
def workdir():
    d = Path(tempfile.mkdtemp(prefix="floe-day-one-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fresh_server(workdir):
    """A first start on free ports; yields (serve, uri, client_id, client_secret)."""
    port = free_port()
    srv = Serve(workdir / "data", f"127.0.0.1:{port}", "127.0.0.1:0", f"127.0.0.1:{free_port()}")
    try:
        assert srv.wait() is None, srv.stderr()
        out = srv.stdout()
        cid = re.search(r"client_id:\s+(\S+)", out)
        sec = re.search(r"client_secret:\s+(\S+)", out)
        assert cid and sec, out
        yield srv, f"http://127.0.0.1:{port}", cid.group(1), sec.group(1)
    finally:
        srv.stop()


def _token(uri: str, cid: str, secret: str) -> int:
    import urllib.error
    import urllib.parse
    import urllib.request

    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid,
                                   "client_secret": secret, "scope": "catalog"}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(uri + "/v1/oauth/tokens", data=form), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_first_start_with_port_taken_then_free(workdir):
    data = workdir / "data"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = f"127.0.0.1:{busy.getsockname()[1]}"
        first = Serve(data, taken, "127.0.0.1:0", f"127.0.0.1:{free_port()}")
        rc = first.wait()
        first.stop()
    assert rc not in (None, 0), first.stdout()
    assert "address already in use" in first.stderr(), first.stderr()
    assert "client_secret" not in first.stdout()

    port = free_port()
    second = Serve(data, f"127.0.0.1:{port}", "127.0.0.1:0", f"127.0.0.1:{free_port()}")
    try:
        assert second.wait() is None, second.stderr()
        out = second.stdout()
        cid = re.search(r"client_id:\s+(\S+)", out)
        sec = re.search(r"client_secret:\s+(\S+)", out)
        assert cid and sec, f"the second start printed no admin credential:\n{out}"
        uri = f"http://127.0.0.1:{port}"
        assert _token(uri, cid.group(1), sec.group(1)) == 200
        assert _token(uri, cid.group(1), sec.group(1) + "x") == 401
        cat = RestCatalog("floe", uri=uri, warehouse=WAREHOUSE, credential=f"{cid.group(1)}:{sec.group(1)}")
        cat.create_namespace("day_one")
        assert ("day_one",) in cat.list_namespaces()
    finally:
        second.stop()


def _cli(uri: str, cred: str, *args: str) -> subprocess.CompletedProcess:
    env = _env()
    env["FLOE_URL"] = uri
    env["FLOE_CREDENTIAL"] = cred
    return subprocess.run([str(floe_binary()), *args], capture_output=True, text=True, env=env, timeout=120)


def test_help_example_and_namespace_commands_on_a_fresh_server(fresh_server, workdir):
    _, uri, cid, secret = fresh_server
    cred = f"{cid}:{secret}"
    help_text = _cli(uri, cred, "ingest", "--help").stdout
    example = next(line.strip() for line in help_text.splitlines() if line.strip().startswith("floe ingest ") and "orders.csv" in line)
    csv = workdir / "orders.csv"
    csv.write_text("id,amount,day\n1,2.5,2026-01-01\n2,3.75,2026-01-02\n")
    args = example.split()[1:]
    args[-1] = str(csv)
    r = _cli(uri, cred, *args, "--quiet")
    assert r.returncode == 0, f"{example}: {r.stderr}"
    assert "create sales.orders: 2 rows" in r.stdout

    r = _cli(uri, cred, "namespace", "create", "hr", "--property", "owner=people")
    assert r.returncode == 0, r.stderr
    r = _cli(uri, cred, "namespace", "list")
    assert set(r.stdout.split()) == {"sales", "hr"}, r.stdout
    r = _cli(uri, cred, "table", "list", "sales")
    assert r.stdout.split() == ["sales.orders"], r.stdout

    # A bad value names the file, line, row and column, and commits nothing.
    bad = workdir / "bad.csv"
    bad.write_text("id,amount,day\n3,1.5,2026-01-03\n4,lots,2026-01-04\n")
    r = _cli(uri, cred, "ingest", "--quiet", "sales.orders", str(bad))
    assert r.returncode != 0
    assert 'bad.csv line 3 (row 2), column "amount": "lots" is not a valid double' in r.stderr, r.stderr

    # PyIceberg sees what the CLI made, and only the good rows.
    cat = RestCatalog("floe", uri=uri, warehouse=WAREHOUSE, credential=cred)
    assert cat.load_namespace_properties("hr")["owner"] == "people"
    assert cat.load_table("sales.orders").scan().to_arrow().num_rows == 2

    r = _cli(uri, cred, "table", "rename", "sales.orders", "hr.orders")
    assert r.returncode == 0, r.stderr
    r = _cli(uri, cred, "table", "drop", "--purge", "hr.orders")
    assert r.returncode == 0, r.stderr
    r = _cli(uri, cred, "namespace", "drop", "hr")
    assert r.returncode == 0, r.stderr
    assert ("hr",) not in cat.list_namespaces()
