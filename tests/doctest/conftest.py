"""A `floe serve --demo` per document for the doc tests (see test_docs.py).

The server is tests/interop/floe_server.py's (binary from $FLOE_BIN, free
loopback ports, a temporary directory, a random bootstrap credential); its
directory is the snippets' working directory, with the data directory also
reachable as floe-data and the binary as bin/floe.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))  # for floe_server

import floe_server  # noqa: E402

FILES = Path(__file__).resolve().parent / "files"  # copied into every document's working directory

DEMO_TIMEOUT = 180.0


class DocServer(floe_server.FloeServer):
    """A demo server whose directory the snippets of one document run in."""

    def __init__(self, binary: Path, doc: str) -> None:
        super().__init__(binary, "doc", client_prefix="doctest-", dir_prefix="floe-doctest-")
        self.doc = doc
        self._env: dict[str, str] | None = None

    def serve_args(self) -> list[str]:
        return ["--demo"]

    def extra_env(self) -> dict[str, str]:
        # system.audit, which the audit docs read, exists within a second.
        return {"FLOE_AUDIT_EXPORT_INTERVAL": "1s"}

    def wait_ready(self) -> None:
        self.wait_for_stdout("Demo dataset ready", DEMO_TIMEOUT)
        deadline = time.monotonic() + 60
        while "created the audit export table" not in self.stderr_tail(400):
            if time.monotonic() > deadline:
                raise RuntimeError(f"floe (doc {self.doc}): system.audit was not created:\n{self.stderr_tail()}")
            time.sleep(0.2)

    def snippet_env(self) -> dict[str, str]:
        """The environment a snippet runs in (a fresh copy each time)."""
        if self._env is None:
            (self.dir / "floe-data").symlink_to(self.data_dir)
            bindir = self.dir / "bin"
            bindir.mkdir()
            (bindir / "floe").symlink_to(self.binary)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "AWS_", "PG"))}
            token = self.fetch_token()
            cid, secret = self.credential.split(":", 1)
            env.update({
                "PATH": f"{bindir}:{env.get('PATH', '')}",
                "FLOE": self.uri, "FLOE_URL": self.uri, "FLOE_CREDENTIAL": self.credential,
                "FLOE_DATA_DIR": str(self.data_dir), "FLOE_LOG_LEVEL": "warn",
                "CLIENT_ID": cid, "CLIENT_SECRET": secret, "ID": cid, "SECRET": secret,
                "PASSWORD": "doctest-" + secret[:16],  # for set-password examples
                "TOKEN": token, "H": f"Authorization: Bearer {token}", "J": "Content-Type: application/json",
                "DOCTEST_S3_URL": self.s3_url, "DOCTEST_SQL_PORT": str(self.sql_port),
                "DOCTEST_ADMIN_PORT": str(self.admin_port),
                "DOCTEST_STATE": str(self.dir / "shell-state.sh"),
                "DOCTEST_BASELINE": str(self.dir / "shell-baseline.txt"),
            })
            base = subprocess.run(["bash", "-c", "compgen -v"], env=env, capture_output=True, text=True, check=True)
            (self.dir / "shell-baseline.txt").write_text(base.stdout)
            self._env = env
        return dict(self._env)


@pytest.fixture(scope="session")
def doc_server(request: pytest.FixtureRequest):
    """doc_server(doc) returns the running server of document doc, starting it
    (and stopping the previous document's) when the document changes."""
    binary = floe_server.floe_binary()
    if not binary.is_file():
        pytest.exit(f"Floe binary not found at {binary}: run `make build` or set FLOE_BIN", returncode=2)
    cur: dict[str, DocServer] = {}

    def get(doc: str) -> DocServer:
        srv = cur.get("srv")
        if srv is not None and srv.doc == doc:
            return srv
        if srv is not None:
            srv.stop()
            floe_server.servers.remove(srv)
            srv.cleanup()
        srv = DocServer(binary, doc)
        floe_server.servers.append(srv)
        cur["srv"] = srv
        srv.start()
        # The sample files the docs load (orders.csv, ...), as a reader
        # would have them in their working directory.
        for f in FILES.iterdir():
            shutil.copy(f, srv.dir / f.name)
        return srv

    yield get
    srv = cur.get("srv")
    if srv is not None:
        srv.stop()
        if request.session.testsfailed:
            print(f"\n--- floe (doc {srv.doc}) stderr (tail), data in {srv.dir} ---\n{srv.stderr_tail()}")
        else:
            srv.cleanup()
