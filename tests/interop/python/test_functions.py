"""Functions over the Iceberg REST catalog: listFunctions and loadFunction (issue 21).

No released Iceberg client calls these operations yet (PyIceberg 0.12.0,
the latest on PyPI, and iceberg-core 1.12.0, the latest on Maven Central,
have no function endpoints), so this drives the exchanges with `requests`
through the recording proxy of spec_proxy.py and validates every exchange
of the REST catalog (/v1/...) against the Iceberg REST OpenAPI spec:
getConfig advertising both operations, listFunctions (empty, paged,
unknown namespace, denied), loadFunction (found, missing function, denied).
Functions are created, replaced and dropped through Floe's management API
(not part of the spec), with metadata in the Iceberg UDF format; invalid
metadata is refused with 400 and nothing is created. The validator is shown
to fail on a broken LoadFunctionResult.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import urllib.parse

import requests
from conftest import WAREHOUSE
from spec_proxy import RecordingProxy, SpecValidator

NS = "udfs"


def metadata(uuid: str, sql: str = "x + 1") -> dict:
    """FunctionMetadata with two definitions (int and a nested signature)."""
    nested = "list<string>,struct<a:int,b:map<string,long>>"
    return {
        "function-uuid": uuid,
        "format-version": 1,
        "doc": "Adds one",
        "secure": False,
        "definitions": [
            {"definition-id": "int", "specific-name": f"add_one_int_{uuid[-4:]}",
             "parameters": [{"name": "x", "type": "int", "doc": "Input integer"}],
             "return-type": "int", "function-type": "udf",
             "versions": [{"version-id": 1, "deterministic": True, "on-null-input": "return-null",
                           "representations": [{"type": "sql", "dialect": "spark", "sql": sql},
                                               {"type": "sql", "dialect": "trino", "sql": sql}],
                           "timestamp-ms": 1734507000123}],
             "current-version-id": 1},
            {"definition-id": nested,
             "parameters": [{"name": "l", "type": {"type": "list", "element": "string"}},
                            {"name": "s", "type": {"type": "struct", "fields": [
                                {"name": "a", "type": "int"},
                                {"name": "b", "type": {"type": "map", "key": "string", "value": "long"}}]}}],
             "return-type": {"type": "struct", "fields": [{"name": "n", "type": "long"}]}, "function-type": "udtf",
             "versions": [{"version-id": 1, "representations": [{"type": "sql", "dialect": "spark", "sql": "SELECT 1 AS n"}],
                           "timestamp-ms": 1734507000124}],
             "current-version-id": 1},
        ],
        "definition-log": [{"timestamp-ms": 1734507000124, "definition-versions": [
            {"definition-id": "int", "version-id": 1}, {"definition-id": nested, "version-id": 1}]}],
    }


def test_functions_through_the_spec(floe) -> None:
    admin = floe.fetch_token()
    auth = {"Authorization": f"Bearer {admin}"}
    floe.request("POST", f"/v1/{WAREHOUSE}/namespaces", body={"namespace": [NS]}, token=admin)
    mgmt = f"{floe.uri}/api/v1/functions/{WAREHOUSE}/{NS}"
    # A principal with no grant, for the denials.
    p = floe.request("POST", "/api/v1/principals", body={"name": "udf-nobody"}, token=admin)
    nobody = {"Authorization": "Bearer " + floe.fetch_token(p["client_id"], p["client_secret"])}

    with RecordingProxy(floe.uri) as proxy:
        rest = f"{proxy.url}/v1/{WAREHOUSE}/namespaces/{NS}/functions"
        cfg = requests.get(f"{proxy.url}/v1/config", headers=auth, timeout=10).json()
        for ep in (f"GET /v1/{{prefix}}/namespaces/{{namespace}}/functions",
                   f"GET /v1/{{prefix}}/namespaces/{{namespace}}/functions/{{function}}"):
            assert ep in cfg["endpoints"], cfg["endpoints"]

        r = requests.get(rest, headers=auth, timeout=10)
        assert r.status_code == 200 and r.json() == {"identifiers": []}, r.text

        # Invalid metadata: 400 naming the rule, nothing created.
        bad = metadata("42fd3f91-bc10-41c1-8a52-92b57dd0a9b0")
        bad["definitions"][0]["definition-id"] = "long"
        r = requests.put(f"{mgmt}/bad", json=bad, headers=auth, timeout=10)
        assert r.status_code == 400 and 'definition-id must be "int"' in r.json()["error"]["message"], r.text
        assert requests.get(f"{rest}/bad", headers=auth, timeout=10).status_code == 404

        names = ["add_one", "b_fn", "c_fn", "d_fn", "e_fn"]
        for i, n in enumerate(names):
            r = requests.put(f"{mgmt}/{n}?mode=create", json=metadata(f"42fd3f91-bc10-41c1-8a52-92b57dd0a9b{i}"),
                             headers=auth, timeout=10)
            assert r.status_code == 201, r.text
        first = r.json()["metadata-location"]

        # Paged listing, two at a time.
        got, token = [], None
        for _ in range(5):
            q = {"pageSize": "2"} | ({"pageToken": token} if token else {})
            page = requests.get(rest + "?" + urllib.parse.urlencode(q), headers=auth, timeout=10).json()
            got += page["identifiers"]
            token = page.get("next-page-token")
            if not token:
                break
        assert got == [[NS, n] for n in names], got

        # Load: the stored metadata, as created.
        r = requests.get(f"{rest}/e_fn", headers=auth, timeout=10)
        assert r.status_code == 200, r.text
        res = r.json()
        assert res["metadata-location"] == first
        want = metadata("42fd3f91-bc10-41c1-8a52-92b57dd0a9b4")
        assert {k: v for k, v in res["metadata"].items() if k != "location"} == want
        assert res["metadata"]["location"].endswith(f"/{NS}/functions/e_fn-42fd3f91bc1041c18a5292b57dd0a9b4")

        # Replace, conditionally on what was read; a stale condition is 409.
        r = requests.put(f"{mgmt}/e_fn?mode=replace&if-match=" + urllib.parse.quote(first, safe=""),
                         json=metadata("42fd3f91-bc10-41c1-8a52-92b57dd0a9b4", "x + 2"), headers=auth, timeout=10)
        assert r.status_code == 200, r.text
        r = requests.put(f"{mgmt}/e_fn?if-match=" + urllib.parse.quote(first, safe=""),
                         json=metadata("42fd3f91-bc10-41c1-8a52-92b57dd0a9b4", "x + 3"), headers=auth, timeout=10)
        assert r.status_code == 409 and r.json()["error"]["type"] == "CommitFailedException", r.text
        r = requests.get(f"{rest}/e_fn", headers=auth, timeout=10)
        assert r.json()["metadata"]["definitions"][0]["versions"][0]["representations"][0]["sql"] == "x + 2"

        # Missing function, missing namespace, no privilege.
        r = requests.get(f"{rest}/nope", headers=auth, timeout=10)
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchFunctionException", r.text
        r = requests.get(f"{proxy.url}/v1/{WAREHOUSE}/namespaces/nope/functions", headers=auth, timeout=10)
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchNamespaceException", r.text
        for url in (rest, f"{rest}/e_fn"):
            r = requests.get(url, headers=nobody, timeout=10)
            assert r.status_code == 403 and "lacks DESCRIBE" in r.json()["error"]["message"], r.text
        r = requests.put(f"{mgmt}/mine", json=metadata("42fd3f91-bc10-41c1-8a52-92b57dd0a9bf"), headers=nobody, timeout=10)
        assert r.status_code == 403 and "lacks CREATE_VIEW" in r.json()["error"]["message"], r.text

        # Drop: gone from the list.
        assert requests.delete(f"{mgmt}/b_fn", headers=auth, timeout=10).status_code == 204
        page = requests.get(rest, headers=auth, timeout=10).json()
        assert [NS, "b_fn"] not in page["identifiers"] and len(page["identifiers"]) == 4, page
        exchanges = list(proxy.exchanges)

    v = SpecValidator()
    errors, ops = [], set()
    for ex in exchanges:
        errors += v.validate(ex)
        ops.add(v.operation_id(ex))
    assert not errors, "\n".join(errors[:20])
    assert {"getConfig", "listFunctions", "loadFunction"} <= ops, ops
    statuses = {(v.operation_id(ex), ex.status) for ex in exchanges}
    assert {("listFunctions", 200), ("listFunctions", 403), ("listFunctions", 404),
            ("loadFunction", 200), ("loadFunction", 403), ("loadFunction", 404)} <= statuses, statuses

    # The validator can fail: the same load without its definitions, or
    # with a definition-log entry that is not an object, does not conform.
    ok = next(ex for ex in exchanges if v.operation_id(ex) == "loadFunction" and ex.status == 200)
    assert v.validate(ok) == []
    body = json.loads(ok.resp_body)
    broken = copy.deepcopy(body)
    del broken["metadata"]["definitions"]
    assert any("definitions" in e for e in v.validate(dataclasses.replace(ok, resp_body=json.dumps(broken).encode())))
    broken = copy.deepcopy(body)
    broken["metadata"]["definition-log"] = ["not an entry"]
    assert v.validate(dataclasses.replace(ok, resp_body=json.dumps(broken).encode()))
