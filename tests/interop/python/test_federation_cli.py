"""Issue 19, Data In: a foreign catalog created at run time with the built
binary's `floe catalog federate`, then read with PyIceberg.

- The remote (the suite's shared server) holds a table written by PyIceberg.
- A second Floe starts with no foreign catalog configured. The operator runs
  `floe catalog federate ... --auth oauth2 --client-secret-stdin` against
  it, the remote's client secret on stdin (never on the command line); the
  secret is printed nowhere and `floe catalog show` says only `secret: set`.
- PyIceberg, with only a credential of the second Floe, reads the remote
  table through the new warehouse row for row, in place (the metadata is
  the remote's own file).
- An ordinary principal is refused by the management API (administrators
  only); after `floe catalog drop` the warehouse answers 404.
"""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pytest
from conftest import FloeServer, RestError, _finish, _start_server, floe_binary
from floe_server import SCRUBBED_ENV


@pytest.fixture(scope="module")
def local(request):
    srv = FloeServer(floe_binary(), "federating-cli")
    _start_server(srv)
    yield srv
    _finish(srv, request)


def _cli(srv: FloeServer, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for k in ("FLOE_TOKEN", "FLOE_CREDENTIAL", "FLOE_URL"):
        env.pop(k, None)
    env["FLOE_URL"] = srv.uri
    env["FLOE_CREDENTIAL"] = srv.credential
    return subprocess.run([str(floe_binary()), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)


def _ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def remote_table(floe):
    cat = floe.catalog()
    ns = "fedcli_remote"
    cat.create_namespace_if_not_exists(ns)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    tbl = cat.create_table_if_not_exists(f"{ns}.customers", schema=schema)
    tbl.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    return ns, cat.load_table(f"{ns}.customers").scan().to_arrow().sort_by("id")


def test_federate_with_the_cli_and_read_with_pyiceberg(floe, local, remote_table):
    ns, want = remote_table
    secret = floe.client_secret
    args = ["catalog", "federate", "acme_cli", "--uri", floe.uri, "--warehouse", "floe", "--auth", "oauth2",
            "--client-id", floe.client_id, "--client-secret-stdin"]
    assert secret not in " ".join(args)

    # Administrators only: an ordinary principal is refused, nothing is made.
    admin = local.fetch_token()
    p = local.request("POST", "/api/v1/principals", body={"name": "fedcli_bob"}, token=admin)
    bob = local.fetch_token(p["client_id"], p["client_secret"])
    with pytest.raises(RestError) as e:
        local.request("POST", "/api/v1/catalogs", token=bob, body={"name": "acme_cli", "uri": floe.uri})
    assert e.value.status == 403
    assert "is not an administrator" in json.loads(e.value.body)["error"]["message"]

    r = _cli(local, *args, stdin=secret + "\n")
    out = _ok(r)
    assert 'created foreign catalog "acme_cli"' in out and "secret: set" in out
    assert secret not in r.stdout + r.stderr

    shown = _ok(_cli(local, "catalog", "show", "acme_cli"))
    assert "secret:" in shown and "set" in shown and secret not in shown
    listed = _ok(_cli(local, "catalog", "list", "--json"))
    assert secret not in listed
    entry = next(c for c in json.loads(listed)["catalogs"] if c["name"] == "acme_cli")
    assert entry["source"] == "api" and entry["secret"] == "set" and entry["client_id"] == floe.client_id

    # PyIceberg with only the local Floe's credential reads the remote table.
    cat = local.catalog(warehouse="acme_cli")
    assert (ns,) in cat.list_namespaces()
    got = cat.load_table(f"{ns}.customers").scan().to_arrow().sort_by("id")
    assert got.equals(want)
    assert cat.load_table(f"{ns}.customers").metadata_location == floe.catalog().load_table(f"{ns}.customers").metadata_location

    # Drop: the warehouse is gone.
    assert 'dropped foreign catalog "acme_cli"' in _ok(_cli(local, "catalog", "drop", "acme_cli"))
    with pytest.raises(RestError) as e:
        local.request("GET", f"/v1/acme_cli/namespaces/{ns}/tables/customers", token=admin)
    assert e.value.status == 404
    r = _cli(local, "catalog", "show", "acme_cli")
    assert r.returncode != 0 and "does not exist" in r.stderr
