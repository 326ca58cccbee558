"""Issue 23 (a first piece): the probes an orchestrator uses, on the built
binary: /healthz and /readyz answer without a token on the catalog and S3
listeners, and `floe version` names the commit the binary was built from."""

from __future__ import annotations

import json
import subprocess
import urllib.request

from conftest import floe_binary


def _get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, json.loads(r.read())


def test_probes_without_a_token(floe):
    for base in (floe.uri, floe.s3_url):
        assert _get(base + "/healthz") == (200, {"status": "up"})
        status, body = _get(base + "/readyz")
        assert status == 200 and body == {"status": "ready", "checks": {"store": "ok", "warehouse": "ok", "keys": "ok"}}


def test_version_names_the_commit():
    out = subprocess.run([str(floe_binary()), "version", "--json"], capture_output=True, text=True, timeout=30, check=True)
    info = json.loads(out.stdout)
    assert info["go_version"].startswith("go") and info["platform"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=floe_binary().parent.parent)
    if head.returncode == 0 and head.stdout.strip():
        # Built by `make build` from this checkout: stamped with its commit.
        assert info["commit"] == head.stdout.strip(), info
