"""A real `floe serve` process for the Python interop suites.

Shared by the PyIceberg suite (tests/interop/python) and the Spark suite
(tests/interop/spark): each conftest.py puts this directory on sys.path and
subclasses FloeServer with what only it needs. Standard library only, because
the two suites run in different virtualenvs (the Spark one has no requests).

Nothing is built here: the binary comes from $FLOE_BIN (default bin/floe in the
repository root; `make build` makes it). Each server runs on a free loopback
port with a fresh temporary data directory and a random bootstrap credential
(FLOE_BOOTSTRAP_CREDENTIAL), with every other FLOE_* setting that would change
how it serves taken out of its environment (a subclass adds its own with
extra_env). Its embedded S3 endpoint listens on a loopback port the kernel
picks (--s3-listen 127.0.0.1:0); s3_url is the URL Floe prints for it. It is
ready once it has printed "Floe is running." (and its S3 endpoint, unless
expect_s3 is off) and answers an authenticated GET /v1/config; stop()
terminates it, then kills it.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
WAREHOUSE = "floe"
START_TIMEOUT = 60.0  # seconds for "Floe is running." and a working /v1/config

# Settings a developer's shell may carry that would change how the test
# servers serve; the flags and FLOE_BOOTSTRAP_CREDENTIAL say all of it.
SCRUBBED_ENV = (
    "FLOE_DEMO",
    "FLOE_STORE",
    "FLOE_LISTEN",
    "FLOE_DATA_DIR",
    "FLOE_WAREHOUSE",
    "FLOE_WAREHOUSE_LOCATION",
    "FLOE_INSECURE_NO_AUTH",
    "FLOE_PUBLIC_URL",
    "FLOE_STORAGE",
    "FLOE_WAREHOUSE_DIR",
    "FLOE_S3_LISTEN",
    "FLOE_S3_PUBLIC_URL",
    "FLOE_REGION",
    "FLOE_CREDENTIAL_TTL",
    "FLOE_ENCRYPTION",
    "FLOE_ENCRYPTION_KEY_FILE",
    "FLOE_ENCRYPTION_KEY",
    "FLOE_S3_ENDPOINT",
    "FLOE_S3_PATH_STYLE",
    "FLOE_S3_ROLE_ARN",
    "FLOE_S3_EXTERNAL_ID",
    "FLOE_STS_ENDPOINT",
    "FLOE_AUDIT_EXPORT_INTERVAL",
    "FLOE_ADMIN_LISTEN",
)

# The line `floe serve` prints for its embedded S3 endpoint:
#   S3 endpoint:          http://127.0.0.1:NNNNN   (bucket "floe" = ...)
_S3_LINE = re.compile(r"^\s*S3 endpoint:\s+(\S+)", re.MULTILINE)

# Servers started and not yet finished with; the suites attach their stderr to
# failure reports, and whatever is left is stopped at exit.
servers: list["FloeServer"] = []


@atexit.register
def _kill_leftovers() -> None:  # e.g. after Ctrl-C in the middle of a fixture
    for srv in list(servers):
        srv.stop()


def floe_binary() -> Path:
    """$FLOE_BIN (relative to the current directory), else bin/floe in the repository."""
    raw = os.environ.get("FLOE_BIN", "").strip()
    return Path(raw).resolve() if raw else REPO_ROOT / "bin" / "floe"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RestError(Exception):
    """A non-2xx answer from Floe."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


def send(req: urllib.request.Request, timeout: float = 10) -> Any:
    """The decoded JSON body of req's answer (None when empty); RestError unless 2xx."""
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raise RestError(e.code, e.read().decode(errors="replace")) from None


class _PortTaken(Exception):
    pass


class FloeServer:
    """One `floe serve` process on a temporary data directory.

    Subclasses add suite-specific flags (serve_args), environment
    (extra_env), readiness waits (wait_ready) and their own clients. A
    subclass whose server has no embedded S3 endpoint (storage on external
    S3) sets expect_s3 = False."""

    expect_s3 = True

    def __init__(self, binary: Path, name: str, client_prefix: str = "interop-", dir_prefix: str = "floe-interop-") -> None:
        self.binary = binary
        self.name = name
        self.client_id = client_prefix + secrets.token_hex(4)
        self.client_secret = secrets.token_urlsafe(24)
        self.dir = Path(tempfile.mkdtemp(prefix=dir_prefix))
        self.data_dir = self.dir / "data"  # floe creates it on first start
        self.stdout_path = self.dir / "stdout.log"
        self.stderr_path = self.dir / "stderr.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.sql_port = 0
        self.admin_port = 0
        self._s3_url = ""

    # --- addresses and credentials -------------------------------------

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """The admin listener: /metrics, /healthz, /readyz."""
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def token_url(self) -> str:
        return f"{self.uri}/v1/oauth/tokens"

    @property
    def credential(self) -> str:
        return f"{self.client_id}:{self.client_secret}"

    @property
    def warehouse_dir(self) -> Path:
        """Where the embedded store keeps the bucket's files (the default FLOE_WAREHOUSE_DIR)."""
        return self.data_dir / "warehouse"

    def local_path(self, location: str) -> Path:
        """The file on disk behind s3://<warehouse>/<key> (embedded storage): the
        bucket named after the warehouse is the directory warehouse_dir."""
        scheme, sep, rest = location.partition("://")
        bucket, _, key = rest.partition("/")
        assert scheme in ("s3", "s3a") and sep and bucket == WAREHOUSE and key, location
        path = self.warehouse_dir / key  # keys are stored as they are, not URL-decoded
        assert path.resolve().is_relative_to(self.warehouse_dir.resolve()), location
        return path

    @property
    def s3_url(self) -> str:
        """The embedded S3 endpoint as Floe printed it, e.g. http://127.0.0.1:40123."""
        if not self._s3_url:
            m = _S3_LINE.search(self.stdout_text())
            if m is None:
                raise RuntimeError(f"floe {self.name}: no S3 endpoint line on stdout\n{self.stdout_text()}")
            self._s3_url = m.group(1).rstrip("/")
        return self._s3_url

    # --- lifecycle -------------------------------------------------------

    def serve_args(self) -> list[str]:
        """Extra `floe serve` arguments."""
        return []

    def extra_env(self) -> dict[str, str]:
        """Environment variables to set for `floe serve` (after SCRUBBED_ENV is taken out)."""
        return {}

    def wait_ready(self) -> None:
        """Called once Floe runs and /v1/config works; waits for anything more."""

    def start(self) -> None:
        last = ""
        for _ in range(3):  # a free port can be taken between probe and bind
            self.port = free_port()
            try:
                self._start_once()
                return
            except _PortTaken as e:
                last = str(e)
                self.stop()
        raise RuntimeError(f"floe {self.name}: could not bind a port: {last}")

    def _start_once(self) -> None:
        env = dict(os.environ)
        env["FLOE_BOOTSTRAP_CREDENTIAL"] = self.credential
        for k in SCRUBBED_ENV:
            env.pop(k, None)
        # The SQL endpoint (PostgreSQL wire) on a port of its own, so that
        # servers running side by side do not race for the default 5433.
        self.sql_port = free_port()
        env["FLOE_SQL_LISTEN"] = f"127.0.0.1:{self.sql_port}"
        # The admin listener (/metrics) too, instead of the default 9090.
        self.admin_port = free_port()
        env["FLOE_ADMIN_LISTEN"] = f"127.0.0.1:{self.admin_port}"
        env.update(self.extra_env())
        args = [str(self.binary), "serve", "--data-dir", str(self.data_dir), "--listen", f"127.0.0.1:{self.port}",
                "--s3-listen", "127.0.0.1:0"]
        args += self.serve_args()
        self._s3_url = ""
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.dir, env=env)
        self.wait_for_stdout("Floe is running.", START_TIMEOUT)
        if self.expect_s3:
            self.wait_for_stdout("S3 endpoint:", START_TIMEOUT)
        self._wait_for_config(START_TIMEOUT)
        self.wait_ready()

    def _check_alive(self) -> None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            err = self.stderr_tail()
            if "address already in use" in err:
                raise _PortTaken(err)
            raise RuntimeError(
                f"floe {self.name} exited with code {rc} before it was ready\n"
                f"--- stdout ---\n{self.stdout_text()}\n--- stderr (tail) ---\n{err}"
            )

    def wait_for_stdout(self, text: str, timeout: float) -> None:
        """Wait until Floe prints text; fail if it exits first or takes longer than timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stdout_text():
                return
            self._check_alive()
            time.sleep(0.05)
        raise RuntimeError(
            f"floe {self.name}: no {text!r} on stdout within {timeout:.0f}s\n"
            f"--- stdout ---\n{self.stdout_text()}\n--- stderr (tail) ---\n{self.stderr_tail()}"
        )

    def _wait_for_config(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                self.request("GET", "/v1/config", query={"warehouse": WAREHOUSE}, token=self.fetch_token(), timeout=5)
                return
            except (OSError, http.client.HTTPException, ValueError, RestError, AssertionError) as e:
                last = repr(e)
            time.sleep(0.1)
        raise RuntimeError(f"floe {self.name}: /v1/config not ready within {timeout:.0f}s: {last}\n{self.stderr_tail()}")

    def stop(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
        self.proc = None

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- logs --------------------------------------------------------------

    def stdout_text(self) -> str:
        return _read(self.stdout_path)

    def stderr_tail(self, lines: int = 60) -> str:
        return "\n".join(_read(self.stderr_path).splitlines()[-lines:])

    # --- a minimal REST client ------------------------------------------

    def fetch_token(self, client_id: str | None = None, client_secret: str | None = None, scope: str = "catalog") -> str:
        """A bearer token for client_id (default: the bootstrap credential) with scope
        ("catalog:read" for a read-only token)."""
        form = urllib.parse.urlencode({
            "grant_type": "client_credentials",
            "client_id": client_id or self.client_id,
            "client_secret": client_secret or self.client_secret,
            "scope": scope,
        }).encode()
        req = urllib.request.Request(self.token_url, data=form, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        body = send(req)
        assert isinstance(body, dict), body
        assert str(body.get("token_type", "")).lower() == "bearer", body
        assert body.get("access_token"), body
        return body["access_token"]

    def request(self, method: str, path: str, query: dict[str, str] | None = None, body: Any = None,
                token: str | None = None, timeout: float = 10, headers: dict[str, str] | None = None) -> Any:
        """Send a JSON request to path on Floe with token; the decoded answer, or RestError."""
        url = self.uri + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if data is not None:
            headers["Content-Type"] = "application/json"
        return send(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=timeout)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
