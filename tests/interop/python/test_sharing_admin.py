"""Issue 18, the sharing service, with the built binary: a provider shares a
table made with PyIceberg through `floe share` and `floe recipient`, and the
recipient's Delta Sharing profile file is what the protocol expects.

- An ordinary principal without CREATE_SHARE is refused by the management
  API with the missing privilege named; the administrator's CLI creates the
  share, adds the table under an alias, creates the recipient and grants it.
- `--profile-out` writes the profile file with mode 0600: version 1, the
  server's /delta-sharing/ endpoint, a bearer token; the token is printed
  nowhere and never shown by the management API again.
- Rotation through the management API answers a new token (shown once) and
  the share catalog connection of every granted share.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import RestError, floe_binary
from floe_server import SCRUBBED_ENV


def _cli(floe, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for k in ("FLOE_TOKEN", "FLOE_CREDENTIAL", "FLOE_URL"):
        env.pop(k, None)
    env["FLOE_URL"] = floe.uri
    env["FLOE_CREDENTIAL"] = floe.credential
    r = subprocess.run([str(floe_binary()), *args], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"floe {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def test_share_and_recipient_profile(floe, catalog, unique, tmp_path: Path):
    ns = f"share_{unique}"
    catalog.create_namespace(ns)
    tbl = catalog.create_table(f"{ns}.orders", schema=pa.schema([("id", pa.int64()), ("region", pa.string())]))
    tbl.append(pa.table({"id": [1, 2], "region": ["EMEA", "APAC"]}))

    admin = floe.fetch_token()
    # An ordinary principal may not create a share.
    p = floe.request("POST", "/api/v1/principals", body={"name": f"bob_{unique}"}, token=admin)
    bob = floe.fetch_token(p["client_id"], p["client_secret"])
    with pytest.raises(RestError) as e:
        floe.request("POST", "/api/v1/shares", body={"name": f"s_{unique}"}, token=bob)
    assert e.value.status == 403
    assert json.loads(e.value.body)["error"]["message"] == f'principal "bob_{unique}" lacks CREATE_SHARE on warehouse "floe"'

    share, rcpt = f"s_{unique}", f"acme_{unique}"
    out = _cli(floe, "share", "create", share, "--comment", "orders for ACME")
    assert f'created share "{share}"' in out
    out = _cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "sales.orders", "--history")
    assert "as sales.orders" in out
    profile = tmp_path / "acme.share"
    out = _cli(floe, "recipient", "create", rcpt, "--property", "org=ACME", "--profile-out", str(profile))
    assert f'created recipient "{rcpt}"' in out and str(profile) in out
    _cli(floe, "share", "grant", share, "TO", rcpt)

    assert stat.S_IMODE(profile.stat().st_mode) == 0o600
    prof = json.loads(profile.read_text())
    assert set(prof) == {"shareCredentialsVersion", "endpoint", "bearerToken"}, prof
    assert prof["shareCredentialsVersion"] == 1
    assert prof["endpoint"] == floe.uri + "/delta-sharing/"
    token = prof["bearerToken"]
    assert token.startswith("floe_rcpt_") and len(token) == len("floe_rcpt_") + 43
    assert token not in out

    shown = _cli(floe, "share", "show", share)
    assert f"{ns}.orders" in shown and "sales.orders" in shown and f"recipients: {rcpt}" in shown
    rec = floe.request("GET", f"/api/v1/recipients/{rcpt}", token=admin)
    assert rec["shares"] == [share] and rec["properties"] == {"org": "ACME"}
    assert len(rec["tokens"]) == 1 and rec["tokens"][0]["live"]
    assert token not in json.dumps(rec)

    rot = floe.request("POST", f"/api/v1/recipients/{rcpt}/rotate", body={"grace_seconds": 0}, token=admin)
    assert rot["profile"]["bearerToken"].startswith("floe_rcpt_") and rot["profile"]["bearerToken"] != token
    assert rot["iceberg"] == [{"type": "rest", "uri": f"{floe.uri}/shares/{share}/iceberg", "warehouse": share,
                               "token": rot["profile"]["bearerToken"]}]
    rec = floe.request("GET", f"/api/v1/recipients/{rcpt}", token=admin)
    live = [t for t in rec["tokens"] if t["live"]]
    assert len(live) == 1 and live[0]["id"] == rot["token_id"]
    revoked = floe.request("POST", f"/api/v1/recipients/{rcpt}/revoke", token=admin)
    assert revoked["revoked"] == [rot["token_id"]]
    out = _cli(floe, "share", "list")
    assert share in out
