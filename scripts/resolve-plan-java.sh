#!/usr/bin/env bash
# Resolve the class path tests/interop/java/PlanScan.java runs with (the
# Apache Iceberg Java client 1.11.0 and its readers, tests/interop/java/plan/
# pom.xml) idempotently: Maven resolves it from Maven Central into ~/.m2 once
# and the class path is cached in tests/interop/java/plan/target/, keyed by
# the pom's SHA-256; later runs are offline. Prints the class path file.
#
# Environment:
#   MVN   Maven command (default mvn)
#
# Network: Maven Central only, and only when the class path is not cached.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/interop/java/plan" && pwd)"
MVN="${MVN:-mvn}"
key="$(sha256sum "$dir/pom.xml" | cut -c1-16)"
out="$dir/target/classpath-$key.txt"

complete() { # every jar of the cached class path is still in ~/.m2
	[[ -s "$out" ]] || return 1
	local jar
	while IFS= read -r jar; do
		[[ -f "$jar" ]] || return 1
	done < <(tr ':' '\n' <"$out")
}

if complete; then
	echo "$out"
	exit 0
fi
command -v "$MVN" >/dev/null 2>&1 || { echo "resolve-plan-java: mvn not found: install Maven or set MVN" >&2; exit 1; }
mkdir -p "$dir/target"
tmp="$(mktemp "$dir/target/.classpath.XXXXXX")"
log="$dir/target/mvn.log"
trap 'rm -f "$tmp"' EXIT
if ! "$MVN" -q -B -f "$dir/pom.xml" dependency:build-classpath -Dmdep.outputFile="$tmp" >"$log" 2>&1; then
	cat "$log" >&2
	echo "resolve-plan-java: resolving the Iceberg Java client from Maven Central failed" >&2
	exit 1
fi
grep -q "iceberg-core-" "$tmp" || { echo "resolve-plan-java: the class path lacks iceberg-core" >&2; exit 1; }
mv "$tmp" "$out"
echo "$out"
