"""Issue 19, resource links: a Floe mounts another Floe's share, with only the
recipient's token, as a foreign catalog of its own.

- The provider (the suite's shared server) shares a table made with PyIceberg
  through `floe share` and gives a recipient its token (`floe recipient`).
- The consumer Floe is started with FLOE_FEDERATED_CATALOGS naming the
  share's Iceberg REST catalog (<provider>/shares/<share>/iceberg) with the
  recipient's token as a bearer token, read from an environment variable.
- PyIceberg with only a consumer credential reads the shared table in place,
  under its alias, with the credential the provider vended to the recipient.
- The consumer's own grants govern its principals (nothing: 403; SELECT:
  rows), and each side audits its part: the provider the recipient's
  loads, the consumer its calls to the provider with its local principal.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FloeServer, RestError, _finish, _start_server, floe_binary
from floe_server import SCRUBBED_ENV


def _cli(srv, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for k in ("FLOE_TOKEN", "FLOE_CREDENTIAL", "FLOE_URL"):
        env.pop(k, None)
    env["FLOE_URL"] = srv.uri
    env["FLOE_CREDENTIAL"] = srv.credential
    r = subprocess.run([str(floe_binary()), *args], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"floe {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def _audit(srv, *args: str) -> list[dict]:
    out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(srv.data_dir), "--json",
                          "--limit", "100000", *args], capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


class _Consumer(FloeServer):
    def __init__(self, catalogs: list[dict], env: dict[str, str]) -> None:
        super().__init__(floe_binary(), "consumer")
        self._catalogs, self._env = catalogs, env

    def extra_env(self) -> dict[str, str]:
        return {"FLOE_FEDERATED_CATALOGS": json.dumps(self._catalogs), **self._env}


@pytest.fixture(scope="module")
def mounted(floe, request, tmp_path_factory):
    """The provider's table, its share and recipient, and the consumer Floe
    mounting the share as "partner"."""
    u = os.urandom(4).hex()
    ns, share, rcpt = f"prov_{u}", f"sm_{u}", f"consumer_{u}"
    cat = floe.catalog()
    cat.create_namespace(ns)
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    tbl = cat.create_table(f"{ns}.orders", schema=schema)
    tbl.append(pa.table({"id": [1, 2, 3], "region": ["EMEA", "APAC", "EMEA"]}, schema=schema))
    _cli(floe, "share", "create", share)
    _cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "sales.orders", "--history")
    profile = tmp_path_factory.mktemp("profile") / "r.share"
    _cli(floe, "recipient", "create", rcpt, "--profile-out", str(profile))
    _cli(floe, "share", "grant", share, "TO", rcpt)
    token = json.loads(Path(profile).read_text())["bearerToken"]
    consumer = _Consumer([{"name": "partner", "uri": f"{floe.uri}/shares/{share}/iceberg", "warehouse": share,
                           "auth": "bearer", "token_env": "PARTNER_SHARE_TOKEN"}], {"PARTNER_SHARE_TOKEN": token})
    _start_server(consumer)
    yield consumer, share, rcpt, ns
    _finish(consumer, request)


def test_a_share_mounted_as_a_foreign_catalog(floe, mounted):
    consumer, share, rcpt, ns = mounted
    cat = consumer.catalog(warehouse="partner")
    assert cat.list_namespaces() == [("sales",)]
    assert cat.list_tables("sales") == [("sales", "orders")]
    got = cat.load_table("sales.orders").scan().to_arrow().sort_by("id")
    want = floe.catalog().load_table(f"{ns}.orders").scan().to_arrow().sort_by("id")
    assert got.equals(want)

    # The consumer's grants govern its own principals.
    admin = consumer.fetch_token()
    users = {}
    for name in ("analyst", "intern"):
        p = consumer.request("POST", "/api/v1/principals", token=admin, body={"name": name})
        users[name] = (p["client_id"], p["client_secret"])
    for priv in ("DESCRIBE", "SELECT"):
        consumer.request("POST", "/api/v1/grants", token=admin, body={
            "grantee": {"kind": "principal", "name": "analyst"}, "privilege": priv,
            "on": {"kind": "table", "warehouse": "partner", "namespace": ["sales"], "name": "orders"}})
    intern = consumer.fetch_token(*users["intern"])
    with pytest.raises(RestError) as e:
        consumer.request("GET", "/v1/partner/namespaces/sales/tables/orders", token=intern)
    assert e.value.status == 403
    analyst = consumer.catalog(warehouse="partner", credential=f"{users['analyst'][0]}:{users['analyst'][1]}")
    assert analyst.load_table("sales.orders").scan().to_arrow().num_rows == 3

    # Each side audits its part.
    deadline = time.monotonic() + 10
    while True:
        prov = [r for r in _audit(floe, "--principal", f"recipient:{rcpt}")
                if r["action"] == "share.catalog.loadTable" and r["outcome"] == "success"]
        cons = [r for r in _audit(consumer) if r["action"] == "federation.remote.loadTable"
                and r["resource"] == "catalog:partner" and r["outcome"] == "success"]
        if (prov and cons) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert prov, "the provider did not audit the recipient's loads"
    assert cons and all(r["principal"] for r in cons), cons
    secret = consumer.extra_env()["PARTNER_SHARE_TOKEN"]
    for r in _audit(consumer):
        assert secret not in json.dumps(r), "the recipient token is in the consumer's audit"
