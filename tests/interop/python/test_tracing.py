"""OpenTelemetry tracing of the real `floe serve` over OTLP/HTTP (issue 23).

A Floe of its own is started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
small OTLP/HTTP receiver this test runs (http.server accepting POST
/v1/traces) and OTEL_SERVICE_NAME set; the batch processor's delay is cut
to 200 ms so spans arrive while the test waits. The receiver decodes the
ExportTraceServiceRequest protobuf with the few lines of wire-format
decoding below (the OTLP trace message fields are fixed by
opentelemetry-proto's trace.proto, resource.proto and common.proto), so the
suite needs no protobuf package.

Checked: a PyIceberg loadTable sent with a W3C traceparent (the catalog's
header.traceparent property) is a server span named after its route, in the
caller's trace, child of the caller's span, with the request id of the
answer and the principal as attributes, and authz.check and store.read
children; a psycopg query is a statement span with sql.plan,
sql.resolve_table, sql.plan_files and sql.read_file under it; the resource
carries the service name; no attribute carries the token or SQL text; and a
request made just before the server stops is exported by the flush on stop.
"""

from __future__ import annotations

import http.server
import secrets
import threading
import time
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from conftest import FloeServer, _finish, _start_server, floe_binary

LOAD_TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"

# --- a minimal protobuf wire-format reader ---------------------------------


def _varint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return n, i
        shift += 7


def fields(b: bytes) -> list[tuple[int, Any]]:
    """The (field number, value) pairs of one message: ints for varints and
    fixed-width fields, bytes for length-delimited ones."""
    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.append((num, v))
    return out


def _any_value(b: bytes) -> Any:
    for num, v in fields(b):  # AnyValue: 1 string, 2 bool, 3 int, 4 double
        if num == 1:
            return v.decode()
        if num in (2, 3):
            return v
    return None


def _attrs(kvs: list[bytes]) -> dict[str, Any]:
    out = {}
    for kv in kvs:  # KeyValue: 1 key, 2 value
        f = dict(fields(kv))
        out[f[1].decode()] = _any_value(f.get(2, b""))
    return out


def decode_export(body: bytes) -> list[dict[str, Any]]:
    """The spans of an ExportTraceServiceRequest, each with its resource's attributes."""
    spans = []
    for num, rs in fields(body):  # 1: ResourceSpans
        if num != 1:
            continue
        rsf = fields(rs)
        resource = {}
        for n, v in rsf:
            if n == 1:  # Resource: 1 attributes
                resource = _attrs([a for k, a in fields(v) if k == 1])
        for n, ss in rsf:
            if n != 2:  # ScopeSpans
                continue
            for k, sp in fields(ss):
                if k != 2:  # Span
                    continue
                f = fields(sp)
                one = {n: v for n, v in f}
                spans.append({
                    "trace_id": one.get(1, b"").hex(),
                    "span_id": one.get(2, b"").hex(),
                    "parent_span_id": one.get(4, b"").hex(),
                    "name": one.get(5, b"").decode(),
                    "kind": one.get(6, 0),
                    "attributes": _attrs([v for n, v in f if n == 9]),
                    "resource": resource,
                })
    return spans


# --- the receiver -----------------------------------------------------------


class Receiver(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.bad: list[str] = []

    def wait_for(self, pred, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                got = [s for s in self.spans if pred(s)]
            if got:
                return got
            time.sleep(0.1)
        raise AssertionError(f"no matching span within {timeout}s; have {[s['name'] for s in self.spans]}")


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        srv: Receiver = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            srv.bad.append(f"{self.path} {self.headers.get('Content-Type')}")
            self.send_response(404)
            self.end_headers()
            return
        spans = decode_export(body)
        with srv.lock:
            srv.spans.extend(spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class TracedFloe(FloeServer):
    receiver_url = ""

    def serve_args(self) -> list[str]:
        return ["--maintenance=false", "--audit-export-interval", "0"]

    def extra_env(self) -> dict[str, str]:
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.receiver_url, "OTEL_SERVICE_NAME": "floe-interop",
                "OTEL_BSP_SCHEDULE_DELAY": "200"}


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    t = threading.Thread(target=r.serve_forever, daemon=True)
    t.start()
    yield r
    r.shutdown()
    r.server_close()


@pytest.fixture(scope="module")
def traced(request: pytest.FixtureRequest, receiver: Receiver):
    srv = TracedFloe(floe_binary(), "tracing")
    srv.receiver_url = f"http://127.0.0.1:{receiver.server_address[1]}"
    _start_server(srv)
    yield srv
    _finish(srv, request)


def under(spans: list[dict[str, Any]], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The spans below root in its trace, any depth."""
    ids, out, changed = {root["span_id"]}, [], True
    while changed:
        changed = False
        for s in spans:
            if s["trace_id"] == root["trace_id"] and s["parent_span_id"] in ids and s["span_id"] not in ids:
                ids.add(s["span_id"])
                out.append(s)
                changed = True
    return out


def test_load_table_continues_the_callers_trace(traced: TracedFloe, receiver: Receiver) -> None:
    cat = traced.catalog()
    cat.create_namespace("tr")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    tbl = cat.create_table("tr.t", schema=schema)
    tbl.append(pa.table({"id": pa.array(range(100), pa.int64()), "name": [f"n{i}" for i in range(100)]}, schema=schema))

    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    traced_cat = traced.catalog(**{"header.traceparent": f"00-{trace_id}-{parent}-01"})
    traced_cat.load_table("tr.t")

    roots = receiver.wait_for(lambda s: s["trace_id"] == trace_id and s["attributes"].get("http.route") == LOAD_TABLE)
    root = roots[-1]
    assert root["name"] == "GET " + LOAD_TABLE
    assert root["kind"] == 2  # SPAN_KIND_SERVER
    assert root["parent_span_id"] == parent
    a = root["attributes"]
    assert a["http.response.status_code"] == 200
    assert a["floe.listener"] == "rest"
    assert a["floe.principal"] == "admin"
    assert len(a["floe.request_id"]) >= 8
    assert root["resource"]["service.name"] == "floe-interop"
    time.sleep(0.5)  # children end before their parent; give the batch a moment
    with receiver.lock:
        spans = list(receiver.spans)
    kids = {s["name"] for s in under(spans, root)}
    assert {"authz.check", "store.read"} <= kids, kids
    token = traced.fetch_token()
    for s in spans:
        for v in s["attributes"].values():
            assert token not in str(v)


def test_sql_query_spans(traced: TracedFloe, receiver: Receiver) -> None:
    with psycopg.connect(host="127.0.0.1", port=traced.sql_port, dbname="floe", user="admin",
                         password=traced.fetch_token(), sslmode="disable", connect_timeout=10) as conn:
        n = conn.execute("SELECT count(*) FROM tr.t WHERE id >= %s", (10,)).fetchone()[0]
    assert n == 90
    plans = receiver.wait_for(lambda s: s["name"] == "sql.plan_files")
    time.sleep(0.5)
    with receiver.lock:
        spans = list(receiver.spans)
    trace_id = plans[-1]["trace_id"]
    roots = [s for s in spans if s["trace_id"] == trace_id and not s["parent_span_id"]]
    assert len(roots) == 1, roots
    root = roots[0]
    assert root["name"] in ("sql.query", "sql.prepare", "sql.execute"), root["name"]
    assert root["attributes"]["db.operation.name"] == "SELECT"
    names = [s["name"] for s in spans if s["name"].startswith("sql.") and s["parent_span_id"] == ""]
    assert names, names
    all_under = {s["name"] for r in spans if r["name"].startswith("sql.") and not r["parent_span_id"] for s in under(spans, r)}
    assert {"sql.plan", "sql.resolve_table", "sql.plan_files", "sql.read_file"} <= all_under, all_under
    for s in spans:
        for v in s["attributes"].values():
            assert "tr.t" not in str(v) and "id >=" not in str(v), (s["name"], v)


def test_spans_flushed_on_stop(traced: TracedFloe, receiver: Receiver) -> None:
    assert not receiver.bad, receiver.bad
    trace_id = secrets.token_hex(16)
    traced.request("GET", "/v1/config", query={"warehouse": "floe"}, token=traced.fetch_token(),
                   headers={"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"})
    traced.stop()  # SIGTERM: the batch (200 ms delay) may still hold the span
    receiver.wait_for(lambda s: s["trace_id"] == trace_id, timeout=5)
