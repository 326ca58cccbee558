"""A recording HTTP proxy in front of Floe's REST catalog, and a validator of
the recorded exchanges against the Iceberg REST OpenAPI spec.

RecordingProxy forwards every request to Floe unchanged (but for
Accept-Encoding, so that bodies are recorded as sent) and keeps each
exchange: method, path, request headers and body, status, response headers
and body. A client pointed at the proxy (catalog uri and oauth2-server-uri)
sends all its catalog traffic through it; data files go to Floe's S3
endpoint directly.

SpecValidator checks exchanges against the repository's copy of the spec
(internal/spectest/iceberg-rest-catalog-open-api.yaml) with jsonschema,
with the two readings internal/spectest (the Go tests' validator) applies:
the 3.0-style "nullable: true" allows null, and PrimitiveTypeValue, a oneOf
of overlapping types, means any of them. Request bodies are checked for
successful JSON exchanges (not the form-encoded token request), responses
always: a JSON body against the schema the spec gives for the status (or
its 5XX / default), and no body for 204.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC = Path(__file__).resolve().parents[3] / "internal" / "spectest" / "iceberg-rest-catalog-open-api.yaml"
BASE = "urn:floe:iceberg-rest-spec"
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
       "accept-encoding", "host", "content-length"}


@dataclass
class Exchange:
    method: str
    path: str  # with the query string
    req_headers: dict[str, str]
    req_body: bytes
    status: int = 0
    resp_headers: dict[str, str] = field(default_factory=dict)
    resp_body: bytes = b""

    def header(self, name: str) -> str:
        return next((v for k, v in self.req_headers.items() if k.lower() == name.lower()), "")


class RecordingProxy:
    """A threaded HTTP proxy on a free loopback port in front of target (http://host:port)."""

    def __init__(self, target: str) -> None:
        u = urllib.parse.urlsplit(target)
        self.target_host, self.target_port = u.hostname, u.port
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                ex = Exchange(self.command, self.path, headers, body)
                conn = http.client.HTTPConnection(proxy.target_host, proxy.target_port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body if body or self.command in ("POST", "PUT") else None,
                                 headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    ex.status = resp.status
                    ex.resp_headers = {k: v for k, v in resp.getheaders()}
                    ex.resp_body = data
                finally:
                    conn.close()
                with proxy._lock:
                    proxy.exchanges.append(ex)
                self.send_response(ex.status)
                for k, v in ex.resp_headers.items():
                    if k.lower() not in HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(ex.resp_body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(ex.resp_body)

            do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "RecordingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _patch(node: Any, seen: set[int]) -> None:
    """Rewrite local $refs to BASE, let "nullable: true" allow null, and read
    PrimitiveTypeValue's oneOf as anyOf (as internal/spectest does)."""
    if isinstance(node, dict):
        if id(node) in seen:
            return
        seen.add(id(node))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            node["$ref"] = BASE + ref
        if node.get("nullable") is True and isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
        for v in node.values():
            _patch(v, seen)
    elif isinstance(node, list):
        for v in node:
            _patch(v, seen)


class SpecValidator:
    def __init__(self, spec: Path = SPEC) -> None:
        doc = yaml.safe_load(spec.read_text())
        pv = doc["components"]["schemas"]["PrimitiveTypeValue"]
        if "oneOf" in pv:
            pv["anyOf"] = pv.pop("oneOf")
        _patch(doc, set())
        self.doc = doc
        self.registry = Registry().with_resource(BASE, Resource.from_contents(doc, default_specification=DRAFT202012))
        self.requests_checked = 0  # request bodies validated
        self.routes = []
        for template, item in doc["paths"].items():
            rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, item))

    def _deref(self, obj: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in obj:
            ptr = obj["$ref"].removeprefix(BASE + "#/").split("/")
            node: Any = self.doc
            for p in ptr:
                node = node[p.replace("~1", "/").replace("~0", "~")]
            obj = node
        return obj

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        """The spec's path template and operation for a request path (query ignored)."""
        p = urllib.parse.urlsplit(path).path
        # The most specific template wins (…/plan/{plan-id} over …/{table}).
        matches = [(t, item) for rx, t, item in self.routes if rx.match(p)]
        matches = [(t, item) for t, item in matches if method.lower() in item]
        if not matches:
            raise AssertionError(f"{method} {p}: no such operation in the spec")
        t, item = min(matches, key=lambda m: m[0].count("{"))
        return t, item[method.lower()]

    def _check(self, schema: dict[str, Any], body: bytes, what: str) -> list[str]:
        try:
            value = json.loads(body)
        except ValueError as e:
            return [f"{what}: not JSON: {e}: {body[:200]!r}"]
        v = Draft202012Validator(schema, registry=self.registry)
        return [f"{what}: {e.message} at {'/'.join(map(str, e.absolute_path))} (schema {'/'.join(map(str, e.absolute_schema_path))})"
                for e in v.iter_errors(value)]

    def validate(self, ex: Exchange) -> list[str]:
        """The spec violations of one exchange (empty when it conforms)."""
        where = f"{ex.method} {ex.path} -> {ex.status}"
        try:
            template, op = self.operation(ex.method, ex.path)
        except AssertionError as e:
            return [str(e)]
        errs: list[str] = []
        ctype = ex.header("Content-Type")
        if ex.status < 300 and ex.req_body and "json" in ctype:
            rb = op.get("requestBody")
            if rb is None:
                errs.append(f"{where}: a request body the operation does not take")
            else:
                schema = self._deref(rb)["content"].get("application/json", {}).get("schema")
                if schema is not None:
                    errs += self._check(schema, ex.req_body, f"{where} request")
                    self.requests_checked += 1
        responses = {str(k): v for k, v in op.get("responses", {}).items()}  # YAML reads 200 as a number
        resp = responses.get(str(ex.status)) or responses.get(f"{ex.status // 100}XX") or responses.get("default")
        if resp is None:
            return errs + [f"{where}: status {ex.status} is not a response of {op.get('operationId')}"]
        resp = self._deref(resp)
        content = resp.get("content")
        if ex.method == "HEAD" or ex.status == 204 or not content:
            if ex.resp_body:
                errs.append(f"{where}: status {ex.status} must have no body, got {ex.resp_body[:200]!r}")
            return errs
        schema = content.get("application/json", {}).get("schema")
        if schema is not None:
            errs += self._check(schema, ex.resp_body, f"{where} response")
        return errs

    def operation_id(self, ex: Exchange) -> str:
        return self.operation(ex.method, ex.path)[1].get("operationId", "")
