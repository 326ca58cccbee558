"""`floe check` (the S1–S7 readiness checklist) from the built binary against
two real catalogs: a Floe started with --demo (plus a view and lifecycle
tiering) passes every check and exits 0; Apache Iceberg's REST fixture server
(restfixture.py: org.apache.iceberg.rest.RESTCatalogServer from
iceberg-open-api's test-fixtures jar, resolved from Maven Central) is checked to completion and fails S4,
since it vends no storage credentials, with exit status 1.

Needs Java 17+ and Maven (CI installs both); the first run downloads the
fixture's jars, later runs are offline.
"""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from conftest import WAREHOUSE, floe_binary
from restfixture import http

STANDARDS = {"S1", "S2", "S3", "S4", "S5", "S6", "S7"}


def run_check(*args: str) -> tuple[int, dict]:
    p = subprocess.run([str(floe_binary()), "check", "--json", *args], capture_output=True, text=True, timeout=120)
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"floe check printed no JSON (exit {p.returncode}): {p.stdout}\n{p.stderr}")
    return p.returncode, report


@pytest.fixture(scope="module")
def crm_fixture(rest_fixture) -> str:
    """The suite's REST fixture server, with namespace crm and two tables."""
    uri = rest_fixture.uri
    http("POST", uri + "/v1/namespaces", {"namespace": ["crm"]})
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}
    for name in ("accounts", "activities"):
        http("POST", uri + "/v1/namespaces/crm/tables", {"name": name, "schema": schema})
    return uri


def test_check_rest_fixture_fails_s4(crm_fixture):
    rc, report = run_check("--url", crm_fixture, "--credential", "client:secret")
    assert rc == 1, report
    assert report["floe"] is False
    by_id = {f["id"]: f for f in report["findings"]}
    assert {f["standard"] for f in report["findings"]} == STANDARDS  # ran to completion
    assert by_id["s4.vended-credentials"]["status"] == "fail"
    assert "Turn on credential vending" in by_id["s4.vended-credentials"]["fix"]
    assert by_id["s2.load-table"]["status"] == "pass"
    assert by_id["s2.namespaces"]["status"] == "pass"
    assert by_id["s7.describe"]["status"] == "pass"
    assert [f["id"] for f in report["findings"] if f["status"] == "fail"] == ["s4.vended-credentials"]


def test_check_healthy_floe_passes(floe_demo):
    token = floe_demo.fetch_token()
    view = {"name": "accounts_count",
            "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "n", "required": False, "type": "long"}]},
            "view-version": {"version-id": 1, "timestamp-ms": int(time.time() * 1000), "schema-id": 0,
                             "summary": {"engine-name": "test"}, "default-namespace": ["crm"],
                             "representations": [{"type": "sql", "sql": "select count(*) as n from crm.accounts", "dialect": "spark"}]},
            "properties": {}}
    floe_demo.request("POST", f"/v1/{WAREHOUSE}/namespaces/crm/views", body=view, token=token)
    floe_demo.request("POST", f"/v1/{WAREHOUSE}/namespaces/crm/properties",
                      body={"updates": {"floe.lifecycle.cold-after": "30d"}}, token=token)
    start = time.monotonic()
    rc, report = run_check("--url", floe_demo.uri, "--credential", floe_demo.credential)
    took = time.monotonic() - start
    print(f"floe check against the demo server took {took:.2f}s (report: {report['duration_ns'] / 1e6:.0f} ms)")
    assert rc == 0, report
    assert report["floe"] is True and report["prefix"] == WAREHOUSE
    assert {f["standard"] for f in report["findings"]} == STANDARDS
    assert [f for f in report["findings"] if f["status"] != "pass"] == []
