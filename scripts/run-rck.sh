#!/usr/bin/env bash
# Run the Apache Iceberg REST Compatibility Kit (RCK) against a real
# `floe serve`, once per Iceberg version, each against a fresh server of its
# own started with the RCK test profile (tests/rck/floe-rck.yaml).
#
# Usage: scripts/run-rck.sh [VERSION...]        (default: 1.11.0 1.10.1)
#
# The kit (iceberg-open-api's tests and test-fixtures jars, with
# iceberg-core's and iceberg-api's tests jars, iceberg-aws and the JUnit
# console launcher) is resolved from Maven Central by tests/rck/pom.xml into
# ~/.m2 once; later runs are offline. The run fails on any failing test that
# tests/rck/known-differences-<VERSION>.txt does not list, and on any listed
# test that now passes (the file can only shrink).
#
# Environment:
#   FLOE_BIN   the floe binary (default bin/floe, built when missing)
#   MVN        Maven command (default mvn)
#   JAVA       java command (default java; the kit needs Java 17 or newer)
#   RCK_KEEP   set to keep the work directory (servers' logs, JUnit reports)
#
# Needs Java 17+, Maven, python3 (standard library) and Go when bin/floe is
# missing. Network: Maven Central only, on the first run.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rck="$repo/tests/rck"
MVN="${MVN:-mvn}"
JAVA="${JAVA:-java}"
FLOE_BIN="${FLOE_BIN:-$repo/bin/floe}"
JUNIT_CONSOLE_VERSION=1.13.4
if (($#)); then versions=("$@"); else versions=(1.11.0 1.10.1); fi

say() { echo "run-rck: $*" >&2; }
die() { say "error: $*"; exit 1; }

command -v "$JAVA" >/dev/null 2>&1 || die "java not found: install a JDK 17 (openjdk-17-jdk-headless) or set JAVA"
command -v "$MVN" >/dev/null 2>&1 || die "mvn not found: install Maven or set MVN"
command -v python3 >/dev/null 2>&1 || die "python3 not found"
java_major="$("$JAVA" -version 2>&1 | head -n1 | sed -E 's/.*version "(1\.)?([0-9]+).*/\2/')"
[[ "$java_major" =~ ^[0-9]+$ ]] && ((java_major >= 17)) || die "the RCK needs Java 17 or newer, found: $("$JAVA" -version 2>&1 | head -n1)"
if [[ ! -x "$FLOE_BIN" ]]; then
	say "building $FLOE_BIN"
	(cd "$repo" && go build -o "$FLOE_BIN" ./cmd/floe)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/floe-rck.XXXXXX")"
floe_pid=""
cleanup() {
	if [[ -n "$floe_pid" ]]; then
		kill "$floe_pid" 2>/dev/null || true
		wait "$floe_pid" 2>/dev/null || true
	fi
	if [[ -z "${RCK_KEEP:-}" ]]; then rm -rf "$work"; else say "work directory kept: $work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# resolve VERSION: the kit's class path into $work/cp-VERSION.txt, and the
# console launcher into $work (both from ~/.m2 after the first run).
resolve() {
	local v="$1"
	"$MVN" -q -B -f "$rck/pom.xml" -Diceberg.version="$v" dependency:build-classpath \
		-Dmdep.outputFile="$work/cp-$v.txt" >"$work/mvn-$v.log" 2>&1 ||
		{ cat "$work/mvn-$v.log" >&2; die "resolving the RCK $v from Maven Central failed"; }
	"$MVN" -q -B -f "$rck/pom.xml" dependency:copy \
		-Dartifact="org.junit.platform:junit-platform-console-standalone:$JUNIT_CONSOLE_VERSION" \
		-DoutputDirectory="$work" >>"$work/mvn-$v.log" 2>&1 ||
		{ cat "$work/mvn-$v.log" >&2; die "resolving the JUnit console launcher failed"; }
	for jar in "iceberg-open-api-$v-tests.jar" "iceberg-core-$v-tests.jar"; do
		grep -q "$jar" "$work/cp-$v.txt" || die "class path for $v lacks $jar"
	done
}

# start_floe DIR: a fresh server with the RCK test profile; sets port, floe_pid.
start_floe() {
	local dir="$1"
	mkdir -p "$dir"
	port="$(free_port)"
	client_id="rck"
	client_secret="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
	FLOE_BOOTSTRAP_CREDENTIAL="$client_id:$client_secret" \
		FLOE_SQL_LISTEN=off FLOE_ADMIN_LISTEN=off \
		"$FLOE_BIN" serve --config "$rck/floe-rck.yaml" --data-dir "$dir/data" \
		--listen "127.0.0.1:$port" --s3-listen 127.0.0.1:0 \
		>"$dir/floe.out" 2>"$dir/floe.err" </dev/null &
	floe_pid=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if grep -q "Floe is running." "$dir/floe.out" 2>/dev/null && grep -q "S3 endpoint:" "$dir/floe.out"; then
			return 0
		fi
		kill -0 "$floe_pid" 2>/dev/null || { tail -n 40 "$dir/floe.err" >&2; die "floe exited before it was ready"; }
		sleep 0.1
	done
	tail -n 40 "$dir/floe.err" >&2
	die "floe was not ready after 60s"
}

stop_floe() {
	kill "$floe_pid" 2>/dev/null || true
	wait "$floe_pid" 2>/dev/null || true
	floe_pid=""
}

rc=0
for v in "${versions[@]}"; do
	known="$rck/known-differences-$v.txt"
	[[ -f "$known" ]] || die "missing $known (list the tests known to fail, or leave it empty)"
	say "=== RCK $v"
	resolve "$v"
	dir="$work/$v"
	start_floe "$dir"
	# The kit's RESTCatalog client reads its catalog properties from the
	# system properties; rck.local=false: no server of the kit's own.
	set +e
	"$JAVA" -Xmx768m \
		-Duri="http://127.0.0.1:$port/" \
		-Dcredential="$client_id:$client_secret" \
		-Dwarehouse=floe \
		-Drck.local=false \
		-Drck.requires-namespace-create=true \
		-Drck.supports-serverside-retry=true \
		-Drck.overrides-requested-location=false \
		-jar "$work/junit-platform-console-standalone-$JUNIT_CONSOLE_VERSION.jar" execute \
		--disable-banner --details=none --disable-ansi-colors \
		--class-path "$(cat "$work/cp-$v.txt")" \
		--config=rck.local=false \
		--select-class org.apache.iceberg.rest.RESTCompatibilityKitSuite \
		--reports-dir "$dir/reports" >"$dir/junit.out" 2>&1
	junit_rc=$?
	set -e
	stop_floe
	tail -n 20 "$dir/junit.out" >&2
	if ! python3 "$rck/check_results.py" "$known" "$dir/reports"; then
		rc=1
		say "RCK $v: unexpected results (floe log: $dir/floe.err; set RCK_KEEP=1 to keep it)"
	elif ((junit_rc != 0 && junit_rc != 1)); then
		rc=1
		say "RCK $v: the JUnit launcher failed (exit $junit_rc)"
	else
		say "RCK $v: as expected"
	fi
done
exit "$rc"
