"""Prometheus metrics on the admin listener after a PyIceberg workload (issue 23).

A Floe of its own (maintenance and the audit export off, so that nothing but
the workload commits), its admin listener on a free port (FLOE_ADMIN_LISTEN,
set by floe_server.py). The workload: create a namespace and a table, append
twice, load the table twice, scan it. /metrics is read before and after the
appends and parsed with prometheus_client's text parser; the counters must
match the requests made: exactly two more successful commits and no
conflict, a loadTable request counted under its route template per load,
credentials handed out for at least every load, S3 bytes in at least the
bytes of the data files written and bytes out once the scan read them.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import FloeServer, _finish, _start_server, floe_binary

LOAD_TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"


class MetricsFloe(FloeServer):
    def serve_args(self) -> list[str]:
        return ["--maintenance=false", "--audit-export-interval", "0"]


@pytest.fixture(scope="module")
def metrics_floe(request: pytest.FixtureRequest):
    srv = _start_server(MetricsFloe(floe_binary(), "metrics"))
    yield srv
    _finish(srv, request)


def scrape(srv: FloeServer) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics by (name, labels)."""
    with urllib.request.urlopen(srv.admin_url + "/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain"), r.headers["Content-Type"]
        text = r.read().decode()
    out: dict[tuple[str, frozenset], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def total(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float:
    """The sum of name's samples whose labels include labels."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def test_counters_match_the_workload(metrics_floe: MetricsFloe) -> None:
    cat = metrics_floe.catalog()
    cat.create_namespace("obs")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    tbl = cat.create_table("obs.events", schema=schema)
    before = scrape(metrics_floe)

    for i in range(2):
        tbl.append(pa.table({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()),
                             "name": [f"row-{n}" for n in range(1000)]}, schema=schema))
    loaded = [cat.load_table("obs.events") for _ in range(2)]
    rows = loaded[-1].scan().to_arrow()
    assert rows.num_rows == 2000
    written = sum(task.file.file_size_in_bytes for task in loaded[-1].scan().plan_files())

    after = scrape(metrics_floe)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("floe_catalog_commits_total", result="success") == 2
    assert delta("floe_catalog_commits_total", result="conflict") == 0
    loads = delta("floe_http_requests_total", listener="rest", route=LOAD_TABLE, method="GET", code="200")
    assert loads == 2
    commits = delta("floe_http_requests_total", listener="rest", route=LOAD_TABLE, method="POST", code="200")
    assert commits == 2
    assert delta("floe_http_request_duration_seconds_count", listener="rest", route=LOAD_TABLE, method="GET") == 2
    assert delta("floe_credentials_vended_total") >= loads
    assert written > 0
    assert delta("floe_s3_bytes_total", direction="in") >= written
    assert delta("floe_s3_bytes_total", direction="out") > 0
    # The engine's object requests are counted by S3 operation, never by path.
    # (PyArrow's S3 filesystem uploads in parts, and reads ranges: 206.)
    uploads = sum(delta("floe_http_requests_total", listener="s3", route=op) for op in ("PutObject", "UploadPart"))
    assert uploads >= 2
    assert delta("floe_http_requests_total", listener="s3", route="GetObject") >= 2
    assert not any("obs" in dict(ls).get("route", "") for (_, ls) in after)
    assert total(after, "go_goroutines") > 0
    assert total(after, "process_resident_memory_bytes") > 0


def test_admin_listener_serves_no_catalog(metrics_floe: MetricsFloe) -> None:
    for path, want in (("/healthz", 200), ("/readyz", 200), ("/v1/config", 404), ("/v1/oauth/tokens", 404)):
        try:
            with urllib.request.urlopen(metrics_floe.admin_url + path, timeout=10) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == want, path
