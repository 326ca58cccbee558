#!/usr/bin/env bash
# loadTable throughput with an external load generator: wrk (Debian package
# "wrk"), 32 connections over loopback against bin/floe on the embedded
# default (SQLite, authentication on). Prints wrk's report, whose Latency
# Distribution gives the p99.
# Usage: bench/wrk-loadtable.sh [duration, default 20s] [connections, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-20s}
conns=${2:-32}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
go build -o bin/floe ./cmd/floe
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
FLOE_ADMIN_LISTEN=off FLOE_BOOTSTRAP_CREDENTIAL=bench:bench-secret bin/floe serve --data-dir "$dir" --listen "127.0.0.1:$port" --log-level warn >"$dir/out" 2>"$dir/err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q "Floe is running" "$dir/out" 2>/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
tok=$(curl -sf -d grant_type=client_credentials -d client_id=bench -d client_secret=bench-secret "$base/v1/oauth/tokens" | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
auth=(-H "Authorization: Bearer $tok" -H "Content-Type: application/json")
curl -sf "${auth[@]}" -d '{"namespace":["load"]}' "$base/v1/floe/namespaces" >/dev/null
curl -sf "${auth[@]}" -d '{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"ts","required":false,"type":"timestamptz"}]},"partition-spec":{"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"day"}]}}' "$base/v1/floe/namespaces/load/tables" >/dev/null
wrk -t2 -c"$conns" -d"$dur" --latency -H "Authorization: Bearer $tok" "$base/v1/floe/namespaces/load/tables/t"
