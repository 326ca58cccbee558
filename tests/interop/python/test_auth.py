"""Logging in to Floe the ways PyIceberg users do."""

from __future__ import annotations

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import OAuthError, UnauthorizedError

from conftest import WAREHOUSE, FloeServer


def test_credential_login(floe: FloeServer, unique: str) -> None:
    """credential="id:secret": PyIceberg fetches the token itself."""
    cat = load_catalog(
        "floe",
        type="rest",
        uri=floe.uri,
        warehouse=WAREHOUSE,
        credential=floe.credential,
        **{"oauth2-server-uri": floe.token_url},
    )
    ns = (f"auth_cred_{unique}",)
    cat.create_namespace(ns, {"who": "credential"})
    assert ns in cat.list_namespaces()
    assert cat.load_namespace_properties(ns)["who"] == "credential"
    # the same catalog as seen by a separately logged-in client
    assert floe.catalog().load_namespace_properties(ns)["who"] == "credential"
    cat.drop_namespace(ns)
    assert ns not in floe.catalog().list_namespaces()


def test_token_login(floe: FloeServer, unique: str) -> None:
    """token=...: a token the caller got from /v1/oauth/tokens beforehand."""
    r = requests.post(
        floe.token_url,
        data={
            "grant_type": "client_credentials",
            "client_id": floe.client_id,
            "client_secret": floe.client_secret,
            "scope": "catalog",
        },
        timeout=10,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"].lower() == "bearer"
    assert body["expires_in"] > 0
    token = body["access_token"]

    cat = load_catalog("floe", type="rest", uri=floe.uri, warehouse=WAREHOUSE, token=token)
    ns = (f"auth_tok_{unique}",)
    cat.create_namespace(ns)
    tbl = cat.create_table(ns + ("t",), schema=pa.schema([pa.field("x", pa.int64())]))
    tbl.append(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    seen = floe.catalog().load_table(ns + ("t",))
    assert sorted(seen.scan().to_arrow()["x"].to_pylist()) == [1, 2, 3]
    cat.drop_table(ns + ("t",))
    cat.drop_namespace(ns)


def test_wrong_secret_fails(floe: FloeServer) -> None:
    with pytest.raises(OAuthError) as ei:
        load_catalog(
            "floe",
            type="rest",
            uri=floe.uri,
            warehouse=WAREHOUSE,
            credential=f"{floe.client_id}:not-the-secret",
            **{"oauth2-server-uri": floe.token_url},
        )
    assert "invalid_client" in str(ei.value)

    # unknown client id: the same answer, no hint which part was wrong
    r = requests.post(
        floe.token_url,
        data={"grant_type": "client_credentials", "client_id": "nobody", "client_secret": "x", "scope": "catalog"},
        timeout=10,
    )
    assert r.status_code == 401, r.text
    assert r.json()["error"] == "invalid_client"


def test_requests_without_valid_token_are_refused(floe: FloeServer) -> None:
    r = requests.get(f"{floe.uri}/v1/config", params={"warehouse": WAREHOUSE}, timeout=10)
    assert r.status_code == 401, r.text
    r = requests.get(f"{floe.uri}/v1/{WAREHOUSE}/namespaces", headers={"Authorization": "Bearer garbage"}, timeout=10)
    assert r.status_code == 401, r.text

    with pytest.raises(UnauthorizedError):
        load_catalog("floe", type="rest", uri=floe.uri, warehouse=WAREHOUSE, token="not-a-token")
