#!/usr/bin/env bash
# Scan planning of a 10,000-file table (100 manifests of 100 files) by the
# Apache Iceberg Java client (1.11.0), planned on the client and on Floe, in
# one JVM run (issue 21's target: <= 50 ms p50 warm and <= 1.0x client-side
# planning). Starts `floe serve` on a temporary data directory with free
# ports, builds the table with the Java client (metadata only: planning
# reads no data file), then runs tests/interop/java/PlanBench.java, which
# prints one JSON line per case (p50/p90 in ms; server_over_client_p50 is
# the median of each iteration's server/client ratio). A benchmark, not a
# test: nothing asserts the targets.
#
# Usage: bench/plan_java.sh [ITERATIONS [WARMUP]]   (default 30 5)
# Env:   FLOE_BIN   the floe binary (default: built into /tmp)
# Needs: Java 17+ (java, javac) and Maven for scripts/resolve-plan-java.sh
#        (Maven Central once; cached in ~/.m2 afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-30}"
warmup="${2:-5}"
if [[ -z "${FLOE_BIN:-}" ]]; then
	FLOE_BIN=/tmp/floe-bench-plan-bin
	go build -o "$FLOE_BIN" ./cmd/floe
fi
cp="$(cat "$(bash scripts/resolve-plan-java.sh)")"
work="$(mktemp -d /tmp/floe-bench-plan.XXXXXX)"
pid=""
cleanup() {
	if [[ -n "$pid" ]]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
javac -cp "$cp" -d "$work/classes" tests/interop/java/PlanBench.java

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port="$(free_port)"
id="bench-$RANDOM$RANDOM"
secret="$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"
FLOE_BOOTSTRAP_CREDENTIAL="$id:$secret" FLOE_SQL_LISTEN="127.0.0.1:$(free_port)" \
	FLOE_ADMIN_LISTEN="127.0.0.1:$(free_port)" FLOE_MAINTENANCE=false \
	"$FLOE_BIN" serve --data-dir "$work/data" --listen "127.0.0.1:$port" --s3-listen 127.0.0.1:0 \
	>"$work/floe.out" 2>"$work/floe.err" &
pid=$!
uri="http://127.0.0.1:$port"
for _ in $(seq 1 300); do
	if grep -qs "Floe is running." "$work/floe.out" && grep -qs "S3 endpoint:" "$work/floe.out"; then
		break
	fi
	kill -0 "$pid" 2>/dev/null || { cat "$work/floe.err" >&2; exit 1; }
	sleep 0.2
done

cat >"$work/spec.json" <<JSON
{"catalog": {"uri": "$uri", "warehouse": "floe", "rest.auth.type": "oauth2", "credential": "$id:$secret",
             "oauth2-server-uri": "$uri/v1/oauth/tokens"},
 "table": "bench.plan10k", "manifests": 100, "files-per-manifest": 100,
 "iterations": $iterations, "warmup": $warmup,
 "uri": "$uri", "prefix": "floe", "token-url": "$uri/v1/oauth/tokens", "client-id": "$id", "client-secret": "$secret"}
JSON
echo "# $(date -u +%FT%TZ) load: $(cat /proc/loadavg) nproc: $(nproc)"
echo "# tree: $(git rev-parse --short HEAD), Go sources sha256 $(git ls-files -co --exclude-standard -- '*.go' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)"
java -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp:$work/classes" PlanBench "$work/spec.json"
echo "# $(date -u +%FT%TZ) load: $(cat /proc/loadavg)"
